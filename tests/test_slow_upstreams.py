"""`toolscout serve` in front of upstreams that hang or are slow to start, as real child processes.

One that never answers the handshake, one that answers it and then never lists its tools, and
one that starts only when the test lets it: the others answer while it is still starting, the
slow one becomes usable once up, and list_mcp_servers and execute_tool say why the hung ones are not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
from benchmarks.processes import SERVE_READY, UVICORN_READY, running
from mcp import Client

from tests.helpers.paths import PYTHON, ROOT
from toolscout.demo.catalog_server import server_path

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parent / "fixtures"
CATALOG = FIXTURES / "catalog" / "catalog.jsonl"
CATALOG_SERVER = ["-m", "toolscout.demo.catalog_server", "--catalog", str(CATALOG)]
HUNG_TIMEOUT = 5
BOUND = 90
"""Every wait here is bounded by this."""
NO_ARGUMENTS: dict[str, Any] = {}


def structured(result: types.CallToolResult) -> dict[str, Any]:
    return cast(dict[str, Any], result.structured_content)


async def test_hung_and_slow_upstreams_do_not_hold_up_the_others(tmp_path: Path) -> None:
    let_slow_start = tmp_path / "go"
    async with running([PYTHON, *CATALOG_SERVER, "--http", "--port", "0"], ready=UVICORN_READY) as catalog:
        config = {
            "mcpServers": {
                "slow": {
                    "command": PYTHON,
                    "args": ["-m", "tests.servers.sluggish", "--start-when", str(let_slow_start)],
                    "cwd": str(ROOT),
                    "connectTimeout": 600,
                },
                "silent": {
                    "command": PYTHON,
                    "args": [str(FIXTURES / "silent_server.py")],
                    "connectTimeout": HUNG_TIMEOUT,
                },
                "mute": {
                    "command": PYTHON,
                    "args": ["-m", "tests.servers.sluggish", "--hang-listing"],
                    "cwd": str(ROOT),
                    "connectTimeout": HUNG_TIMEOUT,
                },
                "weather": {"url": f"http://127.0.0.1:{catalog.match.group(1)}{server_path('Weather Station')}"},
                "mail": {"command": PYTHON, "args": [*CATALOG_SERVER, "--server", "mail"]},
            },
            "search": {"backend": "bm25"},
        }
        path = tmp_path / "toolscout.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        command = [PYTHON, "-m", "toolscout", "serve", "--config", str(path), "--transport", "http", "--port", "0"]
        async with running(command, ready=SERVE_READY) as gateway:
            results: dict[str, types.CallToolResult] = {}
            order: list[str] = []

            async with Client(gateway.match.group(1), mode="legacy") as client:

                async def call(server: str, tool: str, arguments: dict[str, Any]) -> None:
                    call = {"server": server, "tool": tool, "arguments": arguments}
                    results[server] = await client.call_tool("execute_tool", call)
                    order.append(server)

                with anyio.fail_after(BOUND):
                    async with anyio.create_task_group() as tg:
                        # The call to the slow server waits for it, without holding up the others:
                        # they are answered while it cannot have started yet.
                        tg.start_soon(call, "slow", "hello", NO_ARGUMENTS)
                        await call("weather", "forecast", {"city": "Oslo"})
                        await call("mail", "send", {"to": "ada@example.com"})
                        assert "slow" not in results
                        let_slow_start.touch()
                assert order == ["weather", "mail", "slow"]
                assert not results["weather"].is_error, results["weather"]
                assert structured(results["weather"])["arguments"] == {"city": "Oslo"}
                assert not results["mail"].is_error, results["mail"]
                assert not results["slow"].is_error, results["slow"]  # answered once up
                assert [b.text for b in results["slow"].content if isinstance(b, types.TextContent)] == ["up"]

                # list_mcp_servers waits for every server's first attempt to connect: the hung ones
                # missed their connect deadline (they are retried, so each may be connecting again).
                reason = f"did not finish connecting within {HUNG_TIMEOUT}s"
                with anyio.fail_after(BOUND):
                    listed = await client.call_tool("list_mcp_servers", {})
                servers = {s["name"]: s for s in structured(listed)["servers"]}
                for name in ("slow", "weather", "mail"):
                    assert servers[name]["status"] == "connected", servers[name]
                text = "".join(b.text for b in listed.content if isinstance(b, types.TextContent))
                for name in ("silent", "mute"):
                    assert servers[name]["status"] in ("error", "connecting"), servers[name]
                    assert servers[name]["error"].startswith(reason), servers[name]
                    assert f"{name} [{servers[name]['status']}] — {reason}" in text, text
                    # A call to it fails with the same explanation (within its connect deadline).
                    with anyio.fail_after(BOUND):
                        refused = await client.call_tool("execute_tool", {"server": name, "tool": "hello"})
                    assert refused.is_error
                    error = structured(refused)["error"]
                    assert error["code"] == "SERVER_UNAVAILABLE" and reason in error["message"], error
