"""Upstream lifecycle: lazy connection, closing idle connections, and coming back on demand.

Real stdio servers (tests/servers/chatty.py writes its pid, so the test sees each process come and go).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp_types as types
import pytest
from benchmarks.processes import UVICORN_READY, exited, free_port, running, stop

from tests.helpers.gateway_client import notes_server
from tests.helpers.paths import PYTHON, ROOT
from toolscout.config import GatewayConfig, StdioServerConfig
from toolscout.errors import ServerUnavailable
from toolscout.gateway.core import Gateway
from toolscout.modes.compact import CompactSurface
from toolscout.upstream import InProcessUpstream, Status, StdioUpstream, Upstream, UpstreamSpec

pytestmark = pytest.mark.anyio


def chatty_spec(pid_file: Path, **options: object) -> UpstreamSpec:
    config = StdioServerConfig(command=PYTHON, args=["-m", "tests.servers.chatty", str(pid_file)], cwd=str(ROOT))
    return UpstreamSpec("chatty", StdioUpstream("chatty", config), **options)  # type: ignore[arg-type]


async def until(upstream: Upstream, status: Status) -> None:
    with anyio.fail_after(20):
        while upstream.status is not status:
            await upstream.wait_changed()


async def test_an_idle_connection_is_closed_and_reopened_on_the_next_call(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    async with Gateway([chatty_spec(pid_file, idle_timeout=0.5)]) as gateway:
        chatty = gateway.upstream("chatty")
        await until(chatty, Status.CONNECTED)
        first = int(pid_file.read_text())
        await gateway.execute("chatty", "release", {})
        await until(chatty, Status.IDLE)  # half a second after the call
        await exited(first)
        assert [t.name for t in gateway.catalog.tools("chatty")][:2] == ["log", "ask"]  # still listed
        result = await gateway.execute("chatty", "release", {})
        assert not result.is_error and chatty.status is Status.CONNECTED
        assert int(pid_file.read_text()) != first


async def test_a_lazy_server_with_known_tools_starts_only_when_called(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    declared = (types.Tool(name="release", description="Let go.", input_schema={"type": "object"}),)
    async with Gateway([chatty_spec(pid_file, lazy=True, static_tools=declared)]) as gateway:
        chatty = gateway.upstream("chatty")
        await until(chatty, Status.IDLE)
        assert not pid_file.exists()  # no process yet
        assert [hit.tool.name for hit in await gateway.search("let go")] == ["release"]
        # Its tools are called as any others: compact mode does not mark it as one that cannot answer.
        assert "Server: chatty\n    - release: Let go." in CompactSurface(gateway).description()
        result = await gateway.execute("chatty", "release", {})
        assert not result.is_error and chatty.status is Status.CONNECTED
        assert pid_file.exists()


def test_connect_and_idle_timeout_are_configurable() -> None:
    config = GatewayConfig.model_validate(
        {"mcpServers": {"a": {"command": "x", "connect": "lazy", "idleTimeout": 60}, "b": {"command": "y"}}}
    )
    lazy = UpstreamSpec.from_config("a", config.mcp_servers["a"])
    eager = UpstreamSpec.from_config("b", config.mcp_servers["b"])
    assert (lazy.lazy, lazy.idle_timeout, eager.lazy, eager.idle_timeout) == (True, 60, False, None)


@pytest.mark.parametrize("protocol", ["legacy", "auto"])
async def test_an_http_server_that_restarts_is_reconnected_and_calls_meanwhile_fail_at_once(protocol: str) -> None:
    port = free_port()
    serve = [PYTHON, "-m", "toolscout.demo.text", "--transport", "http", "--port", str(port)]
    config = GatewayConfig.model_validate(
        {"mcpServers": {"text": {"url": f"http://127.0.0.1:{port}/mcp", "protocol": protocol}}}
    )
    arguments = {"text": "a b c"}
    async with running(serve, ready=UVICORN_READY) as first, Gateway.from_config(config) as gateway:
        text = gateway.upstream("text")
        await until(text, Status.CONNECTED)
        assert not (await gateway.execute("text", "word_count", arguments)).is_error
        await stop(first.process)
        with anyio.fail_after(30), pytest.raises(ServerUnavailable, match="went away during the call"):
            await gateway.execute("text", "word_count", arguments)
        async with running(serve, ready=UVICORN_READY):  # the same server back on the same port
            await until(text, Status.CONNECTED)
            assert not (await gateway.execute("text", "word_count", arguments)).is_error


async def test_a_gateway_runs_once_and_says_so_when_entered_again() -> None:
    gateway = Gateway([UpstreamSpec("notes", InProcessUpstream(notes_server()))])
    async with gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        with pytest.raises(RuntimeError, match=r"already entered \(running\).*make a new one"):
            async with gateway:
                pass
        # The refused entry left the running gateway as it was: still serving, its upstream not doubled.
        result = await gateway.execute("notes", "create_note", {"title": "x"})
        assert not result.is_error and gateway.upstream("notes").status is Status.CONNECTED
    with pytest.raises(RuntimeError, match=r"already entered \(stopped\).*make a new one"):
        async with gateway:
            pass
