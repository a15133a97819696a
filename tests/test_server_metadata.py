"""What list_mcp_servers says of each server besides its tools: its configuration entry with every
secret masked, and `disconnected` for a server that was connected and lost its connection (an attempt
that never connected stays `error`); a real gateway over the demo units server, through an SDK client."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from mcp import Client

from tests.helpers.paths import PYTHON
from toolscout.config.loader import load_config
from toolscout.gateway.core import Gateway
from toolscout.masking import MASK
from toolscout.serve.server import build_server
from toolscout.upstream import Status

pytestmark = pytest.mark.anyio

TOKEN = "sk-live-4f9a8b7c6d5e4f3a2b1c"
CLIENT_SECRET = "metadata-client-secret-5e6f7a8b"
"""An OAuth client secret no pattern knows: only its place in the entry says it is one."""
PID_WRITER = (
    "import os, sys; open(sys.argv[1], 'w').write(str(os.getpid())); "
    "sys.argv = ['units']; from toolscout.demo.units import main; main()"
)


async def servers(client: Client) -> dict[str, dict[str, Any]]:
    result = await client.call_tool("list_mcp_servers", {})
    assert not result.is_error, result.content
    return {s["name"]: s for s in cast(dict[str, Any], result.structured_content)["servers"]}


async def test_each_servers_config_is_shown_with_its_secrets_masked(tmp_path: Path) -> None:
    path = tmp_path / "toolscout.json"
    config = {
        "mcpServers": {
            "units": {
                "command": PYTHON,
                "args": ["-m", "toolscout.demo.units", "--api-key", "${UNITS_TOKEN}"],
                "env": {"UNITS_TOKEN": "${UNITS_TOKEN}"},
            },
            "remote": {
                "url": f"http://127.0.0.1:9/mcp?api_key={TOKEN}",
                "headers": {"Authorization": f"Bearer {TOKEN}"},
                "oauth": {"clientId": "metadata-app", "clientSecret": CLIENT_SECRET, "scopes": "read write"},
                "reconnect": False,
                "connectTimeout": 5,
            },
            "signed": {
                "type": "sse",
                "url": "http://127.0.0.1:9/sse",
                "oauth": {"clientId": "metadata-sse-app", "clientSecret": "${SIGNED_SECRET}", "callbackPort": 8765},
                "reconnect": False,
                "connectTimeout": 5,
            },
        },
        "catalogCache": False,
        "audit": {"enabled": False},
    }
    path.write_text(json.dumps(config), encoding="utf-8")
    variables = {**os.environ, "UNITS_TOKEN": TOKEN, "SIGNED_SECRET": f"{CLIENT_SECRET}-from-env"}
    gateway = Gateway.from_config(load_config(path, env=variables))
    async with gateway, Client(build_server(gateway)) as client:
        with anyio.fail_after(60):
            await gateway.settle_startup()
            found = await servers(client)
    assert TOKEN not in json.dumps(found) and CLIENT_SECRET not in json.dumps(found)
    units, remote = found["units"]["config"], found["remote"]["config"]
    assert units["type"] == "stdio" and units["command"] == PYTHON
    assert units["args"] == ["-m", "toolscout.demo.units", "--api-key", MASK]
    assert units["env"] == {"UNITS_TOKEN": MASK}
    assert remote["type"] == "http" and remote["headers"] == {"Authorization": MASK}
    assert remote["url"].startswith("http://127.0.0.1:9/mcp?api_key=")
    assert (remote["reconnect"], remote["connectTimeout"]) == (False, 5)
    # The client secret is masked whether written in the file or taken from the environment; which
    # client signs in, and how, stays readable.
    assert remote["oauth"] == {"clientId": "metadata-app", "clientSecret": MASK, "scopes": ["read", "write"]}
    signed = found["signed"]["config"]
    assert signed["oauth"] == {"clientId": "metadata-sse-app", "clientSecret": MASK, "callbackPort": 8765}
    # It never connected: a failure to connect, not a lost connection.
    assert found["remote"]["status"] == "error"


async def test_a_server_that_was_connected_and_is_not_is_disconnected(tmp_path: Path) -> None:
    pid_file = tmp_path / "units.pid"
    path = tmp_path / "toolscout.json"
    entry = {"command": PYTHON, "args": ["-c", PID_WRITER, str(pid_file)], "reconnect": False}
    path.write_text(
        json.dumps({"mcpServers": {"units": entry}, "catalogCache": False, "audit": {"enabled": False}}),
        encoding="utf-8",
    )
    gateway = Gateway.from_config(load_config(path, env={}))
    async with gateway, Client(build_server(gateway)) as client:
        upstream = gateway.upstream("units")
        with anyio.fail_after(60):
            assert (await servers(client))["units"]["status"] == "connected"
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
            while upstream.status is Status.CONNECTED:
                await upstream.wait_changed()
            result = await client.call_tool("list_mcp_servers", {})
    shown = cast(dict[str, Any], result.structured_content)["servers"][0]
    assert shown["status"] == "disconnected" and "connection closed" in shown["error"]
    assert shown["toolCount"] == 3  # what it offered stays listed while it is away
    assert "units [disconnected]" in cast(Any, result.content[0]).text
