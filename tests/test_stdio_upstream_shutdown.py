"""`toolscout serve` over stdio stops its stdio upstreams, a hanging one included, whatever the client does.

An MCP client ends a stdio server by closing its stdin and, 2 s later, sending SIGTERM (the SDK's
stdio client). The gateway must have stopped its own children by then, and a SIGTERM that comes
while it is stopping them must not kill it before it has. If the gateway is killed outright, its
children go too (Linux: they are sent SIGKILL when it dies, and the reaper stops their process groups).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc
import pytest
from benchmarks.processes import collect_lines, exited, stop

from tests.helpers.paths import PYTHON, ROOT

pytestmark = pytest.mark.anyio

# A stdio server that never answers: it tells the test (on a Unix socket) its pid, reads its stdin
# to the end, says so, and hangs on regardless, as a server stuck in a blocking call would. It logs
# one line on stdout first: a server that never sent anything is not given time to exit on its own.
HANGING = """
import json, os, socket, sys, time
report = socket.socket(socket.AF_UNIX)
report.connect(sys.argv[1])
log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "starting"}}
sys.stdout.write(json.dumps(log) + "\\n")
sys.stdout.flush()
report.sendall(f"{os.getpid()}\\n".encode())
sys.stdin.buffer.read()
report.sendall(b"stdin closed\\n")
time.sleep(3600)
"""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}
# Closing stdin to the child's exit takes its stdin grace and SIGTERM's grace; the bound leaves room
# for a loaded machine (how soon it happens is measured, not asserted: it is printed).
STOP_BOUND = 60.0
"""How long the SDK's stdio client waits, once it has closed a server's stdin, before its SIGTERM."""


@dataclass
class Gateway:
    process: anyio.abc.Process
    lines: list[str]
    """What it logged (stderr)."""
    upstream: anyio.abc.SocketStream
    """What the hanging upstream tells: its pid, then that its stdin closed."""

    async def told(self) -> str:
        """The upstream's next line (bound it with a cancel scope)."""
        data = b""
        while not data.endswith(b"\n"):
            data += await self.upstream.receive(1)
        return data.decode().strip()


@asynccontextmanager
async def serve_over_stdio(tmp_path: Path) -> AsyncGenerator[Gateway]:
    """`toolscout serve` on a config with one hanging stdio server, handshake done and the server
    started; killed afterwards if still running."""
    socket_path = tmp_path / "up.sock"
    config = tmp_path / "toolscout.json"
    hanging = {"command": PYTHON, "args": ["-c", HANGING, str(socket_path)]}
    config.write_text(json.dumps({"mcpServers": {"hanging": hanging}}))
    listener = await anyio.create_unix_listener(socket_path)
    process = await anyio.open_process(
        [PYTHON, "-m", "toolscout", "serve", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    lines: list[str] = []

    assert process.stderr is not None
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(collect_lines, process.stderr, lines)
        try:
            assert process.stdin is not None and process.stdout is not None
            await process.stdin.send((json.dumps(INITIALIZE) + "\n").encode())
            with anyio.fail_after(60):
                answer = await process.stdout.receive()
                assert b'"serverInfo"' in answer, answer
                upstream = await listener.accept()
            async with upstream:
                yield Gateway(process, lines, upstream)
        finally:
            await stop(process)
            tg.cancel_scope.cancel()


async def upstream_pid(gateway: Gateway) -> int:
    with anyio.fail_after(60):
        return int(await gateway.told())


# Skipped off Linux only: these tests wait on the child's exit through a pidfd, and the last one
# checks PR_SET_PDEATHSIG, both Linux only. CI runs on Linux, so in CI they always run.
needs_pidfd = pytest.mark.skipif(
    not sys.platform.startswith("linux"),
    reason="waits on process exit with pidfd_open and checks PR_SET_PDEATHSIG, both Linux only",
)


@needs_pidfd
async def test_a_sigterm_while_stopping_does_not_leave_a_hanging_upstream_running(tmp_path: Path) -> None:
    async with serve_over_stdio(tmp_path) as gateway:
        child = await upstream_pid(gateway)
        assert gateway.process.stdin is not None
        closed = time.perf_counter()
        await gateway.process.stdin.aclose()  # what an MCP client does first
        with anyio.fail_after(STOP_BOUND):
            # The gateway is stopping its upstreams when their stdin closes: signal it then.
            assert await gateway.told() == "stdin closed"
            gateway.process.send_signal(signal.SIGTERM)
            await exited(child)
            gone = time.perf_counter() - closed
            code = await gateway.process.wait()
        print(f"upstream gone {gone:.2f} s after the gateway's stdin closed")
        assert code == 0, "\n".join(gateway.lines)  # it stopped of its own accord, not killed by the signal
        assert any("received SIGTERM; still stopping the upstream servers" in line for line in gateway.lines), (
            gateway.lines
        )


@needs_pidfd
async def test_closing_stdin_stops_a_hanging_upstream_and_the_gateway_exits_on_its_own(tmp_path: Path) -> None:
    async with serve_over_stdio(tmp_path) as gateway:
        child = await upstream_pid(gateway)
        assert gateway.process.stdin is not None
        closed = time.perf_counter()
        await gateway.process.stdin.aclose()
        with anyio.fail_after(STOP_BOUND):
            await exited(child)
            gone = time.perf_counter() - closed
            code = await gateway.process.wait()
        stopped = time.perf_counter() - closed
        # (An SDK client signals the gateway PROCESS_TERMINATION_TIMEOUT after closing its stdin; none does here.)
        print(f"upstream gone {gone:.2f} s, gateway exited {stopped:.2f} s after its stdin closed")
        assert code == 0, "\n".join(gateway.lines)  # no signal was sent: it stopped of its own accord


@needs_pidfd
async def test_upstreams_die_with_a_gateway_killed_outright(tmp_path: Path) -> None:
    async with serve_over_stdio(tmp_path) as gateway:
        child = await upstream_pid(gateway)
        gateway.process.kill()
        with anyio.fail_after(10):
            await exited(child)
