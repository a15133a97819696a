"""The fixture upstream that serves an eval-format catalog as real MCP servers, over stdio and HTTP."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, get_args

import anyio
import pytest
from benchmarks.processes import SERVE_READY, running
from benchmarks.search import DEFAULT_EVAL_DIR
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.helpers.mode_calls import call_in_mode
from tests.helpers.paths import PYTHON
from toolscout.config import GatewayConfig
from toolscout.config.models import ModeName
from toolscout.demo.catalog_server import server_path
from toolscout.gateway.core import Gateway
from toolscout.search.evaluation import load_catalog_servers

pytestmark = pytest.mark.anyio

CATALOG = Path(__file__).parent / "fixtures" / "catalog" / "catalog.jsonl"
LIVEMCPBENCH = DEFAULT_EVAL_DIR / "catalog_livemcpbench.jsonl"
SERVE = [PYTHON, "-m", "toolscout.demo.catalog_server"]
UVICORN_READY = r"Uvicorn running on http://127\.0\.0\.1:(\d+)"


def gateway_for(servers: dict[str, Any]) -> Gateway:
    config = GatewayConfig.model_validate({"mcpServers": servers, "search": {"backend": "bm25"}})
    return Gateway.from_config(config)


async def test_stdio_servers_list_and_echo() -> None:
    servers = {
        name: {
            "command": PYTHON,
            "args": ["-m", "toolscout.demo.catalog_server", "--catalog", str(CATALOG), "--server", name],
        }
        for name in ("Weather Station", "mail")
    }
    async with gateway_for(servers) as gateway:
        with anyio.fail_after(30):
            await gateway.settle()
        assert [t.name for t in gateway.catalog.tools("Weather Station")] == ["forecast", "now"]
        assert gateway.catalog.get("Weather Station", "now").input_schema == {"type": "object"}  # type: ignore[union-attr]
        result = await gateway.execute("mail", "send", {"to": "ada", "body": "hi"})
        assert result.structured_content == {"server": "mail", "tool": "send", "arguments": {"to": "ada", "body": "hi"}}
        assert 'mail/send called with {"body":"hi","to":"ada"}' in str(result.content[0])


async def test_http_serves_every_server_under_its_own_path() -> None:
    command = [*SERVE, "--catalog", str(CATALOG), "--http", "--port", "0"]
    async with running(command, ready=UVICORN_READY) as process:
        base = f"http://127.0.0.1:{process.match.group(1)}"
        servers = {name: {"url": base + server_path(name)} for name in ("Weather Station", "mail", "files")}
        async with gateway_for(servers) as gateway:
            with anyio.fail_after(30):
                await gateway.settle()
            assert {t.server for t in gateway.catalog.tools()} == set(servers)
            assert len(gateway.catalog.tools()) == 5
            result = await gateway.execute("Weather Station", "forecast", {"city": "Oslo"})
            assert result.structured_content == {
                "server": "Weather Station",
                "tool": "forecast",
                "arguments": {"city": "Oslo"},
            }


# The public eval data is not part of the repository: it sits next to the checkout on the
# development machine, and TOOLSCOUT_EVAL_DIR points at it from anywhere else.
@pytest.mark.skipif(not LIVEMCPBENCH.is_file(), reason=f"no eval data at {LIVEMCPBENCH}; set TOOLSCOUT_EVAL_DIR")
async def test_the_whole_livemcpbench_catalog_as_70_servers() -> None:
    catalog = load_catalog_servers(LIVEMCPBENCH)
    async with running([*SERVE, "--catalog", str(LIVEMCPBENCH), "--http", "--port", "0"], ready=UVICORN_READY) as p:
        base = f"http://127.0.0.1:{p.match.group(1)}"
        async with gateway_for({name: {"url": base + server_path(name)} for name in catalog}) as gateway:
            with anyio.fail_after(60):
                await gateway.settle()
            errors = {u.name: u.error for u in gateway.upstreams if u.error}
            assert not errors
            assert len(gateway.catalog.tools()) == sum(len(t) for t in catalog.values()) == 527


def test_bad_input_exits_2_with_the_reason() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*SERVE, *args], capture_output=True, text=True, timeout=60, check=False)

    missing = run("--catalog", "/nonexistent.jsonl", "--server", "x")
    assert missing.returncode == 2 and "/nonexistent.jsonl" in missing.stderr
    unknown = run("--catalog", str(CATALOG), "--server", "nope")
    assert unknown.returncode == 2 and "has no server 'nope'" in unknown.stderr and "Weather Station" in unknown.stderr
    for done in (missing, unknown):
        assert "Traceback" not in done.stderr


@pytest.mark.parametrize("mode", get_args(ModeName))
async def test_every_mode_over_stdio_and_http_in_front_of_the_fixture(tmp_path: Path, mode: ModeName) -> None:
    async with running([*SERVE, "--catalog", str(CATALOG), "--http", "--port", "0"], ready=UVICORN_READY) as upstream:
        servers = {
            "Weather Station": {
                "command": PYTHON,
                "args": [*SERVE[1:], "--catalog", str(CATALOG), "--server", "Weather Station"],
            },
            "mail": {"url": f"http://127.0.0.1:{upstream.match.group(1)}{server_path('mail')}"},
        }
        config = tmp_path / "toolscout.json"
        # The fixture's tools say nothing of what they do, so a program's calls would ask the user
        # first (code.confirm), and this client cannot be asked.
        code = {"allowDestructive": True}
        config.write_text(json.dumps({"mcpServers": servers, "code": code}), encoding="utf-8")
        serve = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--mode", mode]
        calls = [("Weather Station", "forecast", {"city": "Oslo"}), ("mail", "send", {"to": "ada", "body": "hi"})]
        with (tmp_path / "gateway.log").open("w") as errlog:
            stdio = stdio_client(StdioServerParameters(command=serve[0], args=serve[1:]), errlog=errlog)
            async with Client(stdio, mode="auto") as client:
                for server, tool, arguments in calls:
                    result = await call_in_mode(client, mode, server, tool, arguments)
                    assert result.structured_content == {"server": server, "tool": tool, "arguments": arguments}
        async with (
            running([*serve, "--transport", "http", "--port", "0"], ready=SERVE_READY) as gateway,
            Client(gateway.match.group(1), mode="legacy") as client,
        ):
            for server, tool, arguments in calls:
                result = await call_in_mode(client, mode, server, tool, arguments)
                assert result.structured_content == {"server": server, "tool": tool, "arguments": arguments}
