"""`toolscout serve` ends, and takes its upstreams and their children along, whatever the client does
and however the gateway itself ends.

The upstream is `fixtures/stubborn_server.py`: it ignores SIGTERM, stays on when its stdin ends, and
has a child of its own that ignores SIGTERM too. The client is this test process, which writes its
requests and never reads the gateway's stdout.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import termios
import threading
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc
import pytest
from benchmarks.processes import SERVE_READY, alive, collect_lines, exited, running

from tests.helpers.paths import PYTHON, ROOT
from toolscout.upstream.stdio_child import _exit_with_gateway  # pyright: ignore[reportPrivateUsage]

pytestmark = [
    pytest.mark.anyio,
    # Every test here waits on process exits with pidfd_open, and the parent-death signal they check
    # is Linux only: the orphan guard is claimed for Linux alone (docs/SECURITY.md), and .ci/run is Linux.
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfd_open and PR_SET_PDEATHSIG are Linux only"),
]

STUBBORN = ROOT / "tests" / "fixtures" / "stubborn_server.py"
BOUND = 60.0
"""A generous bound on every wait (how long it really takes is not asserted: the machine is shared)."""
POLL = 0.02
F_GETPIPE_SZ = 1032
PAGE = 4096
"""A pipe fills page by page: the last line written may leave part of its last page empty."""


def request(request_id: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return (json.dumps(message) + "\n").encode()


INITIALIZE = request(
    1,
    "initialize",
    {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "deaf", "version": "0"}},
)
INITIALIZED = b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'


def blob_call(request_id: int, size: int) -> bytes:
    arguments = {"server": "stubborn", "tool": "blob", "arguments": {"size": size, "seed": "s"}}
    return request(request_id, "tools/call", {"name": "execute_tool", "arguments": arguments})


@dataclass
class Served:
    gateway: anyio.abc.Process
    stdout: int
    """The read end of the gateway's stdout: never read."""
    pids: tuple[int, int]
    """The upstream's pid and its child's."""
    stderr: list[str]


async def pids_written(pid_file: Path) -> tuple[int, int]:
    path = anyio.Path(pid_file)
    with anyio.fail_after(BOUND):
        while not await path.exists():  # noqa: ASYNC110 - the fixture reports through a file
            await anyio.sleep(POLL)
    server, child = (await path.read_text()).split()
    return int(server), int(child)


@asynccontextmanager
async def serving_stubborn(tmp_path: Path) -> AsyncGenerator[Served]:
    """`toolscout serve` over stdio in front of the stubborn server; afterwards everything left is killed."""
    pid_file = tmp_path / "stubborn.pids"
    config = tmp_path / "toolscout.json"
    stubborn = {"command": PYTHON, "args": [str(STUBBORN), str(pid_file)]}
    config.write_text(json.dumps({"mcpServers": {"stubborn": stubborn}}))
    stdout, gateway_stdout = os.pipe()
    try:
        gateway = await anyio.open_process(
            [PYTHON, "-m", "toolscout", "serve", "--config", str(config)],
            stdin=subprocess.PIPE,
            stdout=gateway_stdout,
            stderr=subprocess.PIPE,
            cwd=ROOT,
        )
    finally:
        os.close(gateway_stdout)
    lines: list[str] = []

    assert gateway.stderr is not None
    pids: tuple[int, int] | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(collect_lines, gateway.stderr, lines)
        try:
            pids = await pids_written(pid_file)
            yield Served(gateway, stdout, pids, lines)
        finally:
            with suppress(ProcessLookupError):
                gateway.kill()
            await gateway.wait()
            os.close(stdout)
            for pid in pids or ():
                if alive(pid):  # the test has failed: leave nothing behind
                    with suppress(ProcessLookupError):
                        os.killpg(pid, signal.SIGKILL)
                    with suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            tg.cancel_scope.cancel()


def pending(fd: int) -> int:
    """Bytes written to the pipe `fd` reads from and not read yet."""
    count = ctypes.c_int()
    fcntl.ioctl(fd, termios.FIONREAD, count)
    return count.value


async def stdout_full(fd: int) -> None:
    """Wait until the pipe `fd` reads from is full but for a page: a writer with more to write than
    the pipe holds (the gateway, with a 200 KB answer) is then blocked on it."""
    capacity = fcntl.fcntl(fd, F_GETPIPE_SZ)
    with anyio.fail_after(BOUND):
        while pending(fd) < capacity - PAGE:  # noqa: ASYNC110 - a pipe's fill level signals nothing
            await anyio.sleep(POLL)


@pytest.mark.parametrize("ending", ["SIGTERM", "stdin closed"])
async def test_a_client_that_never_reads_stdout_cannot_keep_the_gateway_or_its_upstreams(
    tmp_path: Path, ending: str
) -> None:
    # The case: a 200 KB answer pending on a stdout nobody reads, then SIGTERM; the gateway
    # said it was shutting down and stayed, upstreams and all, for minutes (its last line was never
    # given up). Closing stdin instead, the client's other way to end it, hung the same way.
    async with serving_stubborn(tmp_path) as served:
        gateway = served.gateway
        assert gateway.stdin is not None
        await gateway.stdin.send(INITIALIZE + INITIALIZED + blob_call(2, 200_000))
        await stdout_full(served.stdout)
        if ending == "SIGTERM":
            gateway.send_signal(signal.SIGTERM)
        else:
            await gateway.stdin.aclose()
        with anyio.fail_after(BOUND):
            code = await gateway.wait()
            for pid in served.pids:
                await exited(pid)
        log = "\n".join(served.stderr)
        assert code == 0 and "Traceback" not in log, log


async def test_an_upstream_that_ignores_sigterm_and_its_child_die_with_a_gateway_killed_outright(
    tmp_path: Path,
) -> None:
    # The case: after `kill -9` of the gateway, such an upstream (sent SIGTERM by its
    # parent-death signal) and its child (which got nothing) lived on.
    async with serving_stubborn(tmp_path) as served:
        gateway = served.gateway
        assert gateway.stdin is not None
        await gateway.stdin.send(INITIALIZE + INITIALIZED + blob_call(2, 10))
        with anyio.fail_after(BOUND):
            answers = b""
            while answers.count(b"\n") < 2:  # the call was answered: the upstream runs and is known
                await anyio.wait_readable(served.stdout)
                answers += os.read(served.stdout, 65536)
        assert b'"isError":false' in answers.split(b"\n")[1], answers
        gateway.kill()
        with anyio.fail_after(BOUND):
            for pid in served.pids:
                await exited(pid)


# The child prints the parent-death signal it was given (PR_GET_PDEATHSIG).
PRINT_PDEATHSIG = "import ctypes; v = ctypes.c_int(); ctypes.CDLL(None).prctl(2, ctypes.byref(v)); print(v.value)"


def started_with_hook() -> int:
    """The parent-death signal of a child started as the gateway starts a stdio server."""
    done = subprocess.run(
        [PYTHON, "-c", PRINT_PDEATHSIG],
        preexec_fn=_exit_with_gateway(),
        capture_output=True,
        check=True,
        timeout=BOUND,
    )
    return int(done.stdout)


def test_only_a_child_of_the_main_thread_is_killed_with_the_gateway_by_a_parent_death_signal() -> None:
    # The kernel sends it when the thread that started the child ends: a child of a worker thread
    # would be killed as that thread ended, while the gateway runs on. Such a child does without
    # (the reaper stops it if the gateway dies), and the signal is SIGKILL: SIGTERM can be ignored.
    assert started_with_hook() == signal.SIGKILL
    seen: list[int] = []
    worker = threading.Thread(target=lambda: seen.append(started_with_hook()))
    worker.start()
    worker.join(BOUND)
    assert seen == [0]


async def test_an_http_client_that_never_reads_cannot_keep_the_gateway_or_its_upstreams(tmp_path: Path) -> None:
    # The HTTP face's version of the above: an answer larger than the kernel's socket buffers can
    # hold, to a client that reads nothing; uvicorn waited for that response to finish before
    # stopping, and so forever.
    pid_file = tmp_path / "stubborn.pids"
    config = tmp_path / "toolscout.json"
    stubborn = {"command": PYTHON, "args": [str(STUBBORN), str(pid_file)]}
    config.write_text(json.dumps({"mcpServers": {"stubborn": stubborn}}))
    command = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--transport", "http", "--port", "0"]
    async with running([*command, "--stateless"], ready=SERVE_READY) as served:
        pids = await pids_written(pid_file)
        try:
            url = urlsplit(served.match.group(1))
            wmem = await anyio.Path("/proc/sys/net/ipv4/tcp_wmem").read_text()
            size = 3 * int(wmem.split()[2])  # more than a socket send buffer can hold
            body = blob_call(2, size).strip()
            head = (
                f"POST {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            )
            with socket.socket() as deaf:
                deaf.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # (before connecting: the window)
                deaf.connect((url.hostname, url.port))
                deaf.sendall(head.encode() + body)
                with anyio.fail_after(BOUND):  # the upstream has answered: the gateway is writing to `deaf`
                    while not any("execute stubborn.blob: ok" in line for line in served.stderr):  # noqa: ASYNC110
                        await anyio.sleep(POLL)
                served.process.send_signal(signal.SIGTERM)
                with anyio.fail_after(BOUND):
                    code = await served.process.wait()
                    for pid in pids:
                        await exited(pid)
            log = "\n".join(served.stderr)
            assert code == 0 and "Traceback" not in log, log
        finally:
            for pid in pids:
                if alive(pid):
                    with suppress(ProcessLookupError):
                        os.killpg(pid, signal.SIGKILL)


STOPS_READING = ROOT / "tests" / "fixtures" / "stops_reading_server.py"


def take_call(request_id: int, text: str) -> bytes:
    arguments = {"server": "stops_reading", "tool": "take", "arguments": {"text": text}}
    return request(request_id, "tools/call", {"name": "execute_tool", "arguments": arguments})


async def test_an_upstream_that_stops_reading_its_stdin_cannot_keep_the_gateway(tmp_path: Path) -> None:
    # The same on the other side: a request larger than a pipe holds, half-written to an upstream
    # that stopped reading; the call's task, cancelled by SIGTERM, kept finishing the line forever,
    # and serving (then the gateway, and the upstream) waited for it.
    pid_file = tmp_path / "upstream.pid"
    config = tmp_path / "toolscout.json"
    upstream = {"command": PYTHON, "args": [str(STOPS_READING), str(pid_file)]}
    config.write_text(json.dumps({"mcpServers": {"stops_reading": upstream}}))
    gateway = await anyio.open_process(
        [PYTHON, "-m", "toolscout", "serve", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    pid: int | None = None
    try:
        assert gateway.stdin is not None
        await gateway.stdin.send(INITIALIZE + INITIALIZED + take_call(2, "stop reading now"))
        path = anyio.Path(pid_file)
        with anyio.fail_after(BOUND):
            while not await path.exists():  # noqa: ASYNC110 - the fixture reports through a file
                await anyio.sleep(POLL)
        pid = int(await path.read_text())
        # Its stdin, seen from here: a new descriptor on the same pipe, to see how full it is.
        stdin = os.open(f"/proc/{pid}/fd/0", os.O_RDONLY | os.O_NONBLOCK)
        try:
            await gateway.stdin.send(take_call(3, "x" * 300_000))
            await stdout_full(stdin)
        finally:
            os.close(stdin)
        gateway.send_signal(signal.SIGTERM)
        with anyio.fail_after(BOUND):
            assert await gateway.wait() == 0
            await exited(pid)
    finally:
        with suppress(ProcessLookupError):
            gateway.kill()
        await gateway.wait()
        if pid is not None and alive(pid):
            with suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
