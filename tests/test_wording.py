"""Counts read right for one of a thing too: "1 server, 1 tool", "1 upstream server"."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.helpers.paths import PYTHON, ROOT
from toolscout.config import StdioServerConfig
from toolscout.gateway.core import Gateway
from toolscout.serve.server import build_server
from toolscout.upstream import StdioUpstream, UpstreamSpec

ONE_TOOL_SERVER = ["-m", "tests.servers.sluggish"]  # lists one tool, `hello`


@pytest.mark.anyio
async def test_one_server_with_one_tool_is_listed_in_the_singular() -> None:
    config = StdioServerConfig(command=PYTHON, args=ONE_TOOL_SERVER, cwd=str(ROOT))
    async with (
        Gateway([UpstreamSpec("solo", StdioUpstream("solo", config))]) as gateway,
        Client(build_server(gateway)) as client,
    ):
        with anyio.fail_after(60):
            servers = await client.call_tool("list_mcp_servers", {})
            tools = await client.call_tool("list_tools", {"server": "solo"})
            found = await client.call_tool("search_tools", {"query": "says it is up", "limit": 1})
    texts = [cast(types.TextContent, r.content[0]).text for r in (servers, tools, found)]
    assert texts[0].startswith("1 server, 1 tool enabled of 1.")
    assert texts[1].startswith("solo: 1 tool")
    assert texts[2].startswith("1 tool for 'says it is up':")


def test_serve_announces_one_upstream_server_in_the_singular(tmp_path: Path) -> None:
    config = tmp_path / "toolscout.json"
    servers: dict[str, Any] = {"solo": {"command": PYTHON, "args": ONE_TOOL_SERVER, "cwd": str(ROOT)}}
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    # stdin at its end at once: the gateway announces itself, then stops.
    done = subprocess.run(
        [PYTHON, "-m", "toolscout", "serve", "--config", str(config)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "serving MCP on stdio (1 upstream server, discovery mode)" in done.stderr
