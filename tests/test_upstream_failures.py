"""Real stdio upstreams that misbehave: the gateway reports them and carries on."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
from benchmarks.processes import alive
from mcp import Client

from tests.helpers.paths import PYTHON, ROOT
from toolscout.config import StdioServerConfig
from toolscout.errors import ServerUnavailable
from toolscout.gateway.core import Gateway
from toolscout.serve.server import build_server
from toolscout.upstream import Status, StdioUpstream, UpstreamSpec, stdio_child

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parent / "fixtures"


def stdio_spec(name: str, args: Sequence[str], *, command: str = PYTHON, connect_timeout: float = 20) -> UpstreamSpec:
    config = StdioServerConfig(command=command, args=list(args))
    return UpstreamSpec(name, StdioUpstream(name, config), connect_timeout=connect_timeout)


def script(name: str) -> list[str]:
    return [str(FIXTURES / name)]


async def test_server_exiting_at_start_is_an_error_with_its_last_words() -> None:
    async with Gateway([stdio_spec("crashy", script("crash_on_start.py"))]) as gateway:
        with anyio.fail_after(20):
            await gateway.settle()
        up = gateway.upstream("crashy")
        assert up.status is Status.ERROR
        assert up.error is not None
        assert "WEATHER_API_KEY is not set" in up.error
        with pytest.raises(ServerUnavailable, match="crashy"):
            await gateway.execute("crashy", "anything", {})


async def test_missing_command_is_explained() -> None:
    async with Gateway([stdio_spec("ghost", [], command="definitely-not-installed-xyz")]) as gateway:
        with anyio.fail_after(20):
            await gateway.settle()
        up = gateway.upstream("ghost")
        assert up.status is Status.ERROR
        assert up.error == "command not found: definitely-not-installed-xyz (is it installed and on PATH?)"


async def test_server_that_never_answers_times_out_without_delaying_others() -> None:
    specs = [
        # Long enough for mcp-server-time to start first even on a loaded 2-core CI machine.
        stdio_spec("silent", script("silent_server.py"), connect_timeout=8),
        stdio_spec("time", ["-m", "mcp_server_time", "--local-timezone", "UTC"]),
    ]
    async with Gateway(specs) as gateway:
        silent, time = gateway.upstream("silent"), gateway.upstream("time")
        # The healthy server becomes usable while the silent one is still connecting.
        with anyio.fail_after(20):
            await time.wait_settled()
        assert time.status is Status.CONNECTED
        assert silent.status is Status.CONNECTING
        with anyio.fail_after(20):
            await silent.wait_settled()
        assert silent.status is Status.ERROR
        assert silent.error == "did not finish connecting within 8s"
        result = await gateway.execute("time", "get_current_time", {"timezone": "UTC"})
        assert not result.is_error


async def test_a_server_that_never_answered_is_not_given_the_stdin_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hung server costs its connect timeout and no more: once that has passed without a word
    from it, it is terminated at once instead of being given time to exit on its own."""
    # Waited for, the grace would outlast the bound below (the stop is shielded: it would run to
    # its end, and the bound fail then).
    monkeypatch.setattr(stdio_child, "STDIN_CLOSE_GRACE", 40.0)
    # Reads its stdin to the end, then hangs on: only a signal ends it.
    hung = ["-c", "import sys, time; sys.stdin.buffer.read(); time.sleep(3600)"]
    gateway = Gateway([stdio_spec("hung", hung, connect_timeout=1)])
    with anyio.fail_after(30):
        async with gateway:
            await gateway.upstream("hung").wait_settled()
            assert gateway.upstream("hung").error == "did not finish connecting within 1s"


async def test_garbage_on_stdout_does_not_break_the_session(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="toolscout.upstream.noisy")
    async with Gateway([stdio_spec("noisy", [*script("noisy_server.py"), "--long-stderr-line"])]) as gateway:
        with anyio.fail_after(20):
            await gateway.settle()
        assert gateway.upstream("noisy").status is Status.CONNECTED, gateway.upstream("noisy").error
        result = await gateway.execute("noisy", "shout", {"text": "hello"})
        assert result.structured_content == {"result": "HELLO"}
    # stderr went to the log, attributed to the server; a line of a megabyte in pieces of a bounded size.
    lines = [r.getMessage() for r in caplog.records if r.name == "toolscout.upstream.noisy"]
    assert "noisy server: a stderr line for the gateway's log" in lines
    pieces = [line for line in lines if line.startswith("x")]
    assert sum(map(len, pieces)) == 1_000_000
    assert len(pieces) > 1 and max(map(len, pieces)) <= 16384 + 65536


async def test_a_server_that_closes_its_stdin_fails_the_next_call_at_once() -> None:
    # It stays alive with its stdout open, so only the write of the next request (a broken pipe)
    # can tell: that call must fail at once, not after its timeout, and the session end.
    config = StdioServerConfig(command=PYTHON, args=script("deaf_after_first_call.py"))
    spec = UpstreamSpec("deaf", StdioUpstream("deaf", config), call_timeout=60)
    async with Gateway([spec]) as gateway:
        with anyio.fail_after(20):
            await gateway.settle()
        deaf = gateway.upstream("deaf")
        assert deaf.status is Status.CONNECTED, deaf.error
        first = await gateway.execute("deaf", "once", {})
        assert first.content == [types.TextContent(text="heard")]
        with anyio.fail_after(10), pytest.raises(ServerUnavailable):
            await gateway.execute("deaf", "once", {})
        with anyio.fail_after(10):
            while deaf.status is Status.CONNECTED:
                await deaf.wait_changed()


async def test_a_server_dying_mid_session_turns_to_error_and_others_keep_working(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    # A real MCP server that writes its pid, so the test can kill it from outside.
    code = (
        "import os, sys; open(sys.argv[1], 'w').write(str(os.getpid())); "
        "from mcp_server_time import main; sys.argv = ['mcp-server-time']; main()"
    )
    specs = [
        stdio_spec("doomed", ["-c", code, str(pid_file)]),
        stdio_spec("time", ["-m", "mcp_server_time"]),
    ]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(20):
            await gateway.settle()
        doomed = gateway.upstream("doomed")
        assert doomed.status is Status.CONNECTED, doomed.error
        assert gateway.catalog.counts("doomed")[0] == 2
        os.kill(int(pid_file.read_text()), 9)
        with anyio.fail_after(20):
            while doomed.status is Status.CONNECTED:
                await doomed.wait_changed()
        assert doomed.status is Status.DISCONNECTED  # it was connected: not a failure to connect
        assert doomed.error is not None and "connection closed" in doomed.error
        # What it offered stays listed (and searchable) while it is down and being started again.
        assert gateway.catalog.counts("doomed") == (2, 2)
        result = await gateway.execute("time", "get_current_time", {"timezone": "UTC"})
        assert not result.is_error


async def test_children_are_gone_after_the_gateway_exits(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    code = (
        "import os, sys; open(sys.argv[1], 'w').write(str(os.getpid())); "
        "from mcp_server_time import main; sys.argv = ['mcp-server-time']; main()"
    )
    async with Gateway([stdio_spec("child", ["-c", code, str(pid_file)])]) as gateway:
        with anyio.fail_after(20):
            await gateway.settle()
        assert gateway.upstream("child").status is Status.CONNECTED
        pid = int(pid_file.read_text())
        assert alive(pid)
    assert not alive(pid)


async def test_list_mcp_servers_shows_connecting_then_the_reason_of_the_failure(tmp_path: Path) -> None:
    # Its first start fails at once; the retry then never finishes its handshake, for 3 s.
    flaky = [str(ROOT / "tests" / "servers" / "sluggish.py"), "--fail-first", str(tmp_path / "started")]
    specs = [stdio_spec("flaky", flaky, connect_timeout=3), stdio_spec("time", ["-m", "mcp_server_time"])]
    async with Gateway(specs) as gateway, Client(build_server(gateway)) as client:
        upstream = gateway.upstream("flaky")
        with anyio.fail_after(60):
            await client.call_tool("list_mcp_servers", {})  # waits for every first attempt
            while upstream.status is not Status.CONNECTING:  # trying again after its backoff
                await upstream.wait_changed()
        early = await client.call_tool("list_mcp_servers", {})
        statuses = {s["name"]: s["status"] for s in cast(dict[str, Any], early.structured_content)["servers"]}
        assert statuses == {"flaky": "connecting", "time": "connected"}
        block = early.content[0]
        assert isinstance(block, types.TextContent)
        assert "flaky [connecting]" in block.text

        with anyio.fail_after(60):
            await upstream.wait_settled()
        late = cast(dict[str, Any], (await client.call_tool("list_mcp_servers", {})).structured_content)
        flaky_entry = next(s for s in late["servers"] if s["name"] == "flaky")
        assert flaky_entry["status"] == "error"
        assert flaky_entry["error"].startswith("did not finish connecting within 3s")


async def test_a_call_in_flight_when_its_server_dies_fails_at_once_and_the_server_comes_back(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    config = StdioServerConfig(command=PYTHON, args=["-m", "tests.servers.chatty", str(pid_file)], cwd=str(ROOT))
    spec = UpstreamSpec("chatty", StdioUpstream("chatty", config), call_timeout=60)
    arrived = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        arrived.set()

    async with Gateway([spec]) as gateway, Client(build_server(gateway), mode="legacy") as client:
        with anyio.fail_after(20):
            await gateway.settle()
        chatty = gateway.upstream("chatty")
        first_pid = int(pid_file.read_text())
        outcome: list[types.CallToolResult] = []

        async def hang() -> None:
            call: dict[str, Any] = {"server": "chatty", "tool": "hang", "arguments": {}}
            outcome.append(await client.call_tool("execute_tool", call, progress_callback=on_progress))

        # Far below the call's 60 s timeout: the call must not wait for an answer that cannot come.
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(hang)
                await arrived.wait()
                os.kill(first_pid, 9)
        error = cast(dict[str, Any], outcome[0].structured_content)["error"]
        assert error["code"] == "SERVER_UNAVAILABLE" and "went away during the call" in error["message"]

        with anyio.fail_after(20):  # it is started again after a backoff of at most a second
            while chatty.status is not Status.CONNECTED or int(pid_file.read_text()) == first_pid:
                await chatty.wait_changed()
        again = await client.call_tool("execute_tool", {"server": "chatty", "tool": "release", "arguments": {}})
        assert not again.is_error
