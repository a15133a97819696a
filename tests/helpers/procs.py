"""Running real servers as child processes in tests, waiting on what they print (never on the clock)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.abc
from anyio.streams.text import TextReceiveStream

UVICORN_READY = r"Uvicorn running on http://127\.0\.0\.1:(\d+)"
"""What uvicorn prints once it serves (port 0: the port it picked)."""
SERVE_READY = r"serving streamable HTTP at (http://\S+/mcp)"
"""What `toolscout serve --transport http` prints on start: its URL."""


@dataclass
class Running:
    process: anyio.abc.Process
    match: re.Match[str]
    stderr: list[str] = field(default_factory=list[str])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def collect_lines(stream: anyio.abc.ByteReceiveStream, lines: list[str]) -> None:
    """Append each complete line `stream` carries to `lines` until it closes (a child's stderr, read
    while a test waits on what the child said)."""
    buffer = ""
    async for chunk in TextReceiveStream(stream, errors="replace"):
        *complete, buffer = (buffer + chunk).split("\n")
        lines.extend(complete)


@asynccontextmanager
async def running(
    command: Sequence[str],
    *,
    ready: str,
    env: Mapping[str, str] | None = None,
    startup_timeout: float = 60,
    stdin: int = subprocess.DEVNULL,
) -> AsyncGenerator[Running]:
    """Start `command`, wait until a stderr line matches `ready`, and stop it (SIGTERM, then SIGKILL) afterwards.

    `stdin=subprocess.PIPE` keeps its stdin open (and silent) while it runs: a stdio server's.
    """
    pattern = re.compile(ready)
    process = await anyio.open_process(
        list(command), stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    lines: list[str] = []
    decided = anyio.Event()  # the ready line arrived, or stderr closed without it
    matched: list[re.Match[str]] = []

    async def pump() -> None:
        assert process.stderr is not None
        buffer = ""
        async for chunk in TextReceiveStream(process.stderr, errors="replace"):
            buffer += chunk
            *complete, buffer = buffer.split("\n")
            for line in complete:
                lines.append(line)
                if not matched and (m := pattern.search(line)):
                    matched.append(m)
                    decided.set()
        decided.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump)
        try:
            with anyio.fail_after(startup_timeout):
                await decided.wait()
            if not matched:
                raise AssertionError(f"{command} closed stderr before printing {ready!r}:\n" + "\n".join(lines))
            yield Running(process, matched[0], lines)
        except TimeoutError:
            raise AssertionError(
                f"{command} did not print {ready!r} in {startup_timeout}s:\n" + "\n".join(lines)
            ) from None
        finally:
            await stop(process)
            tg.cancel_scope.cancel()


async def stop(process: anyio.abc.Process, grace: float = 10) -> int:
    """SIGTERM, wait (bounded), then SIGKILL; returns the exit code."""
    if process.returncode is None:
        process.terminate()
        with anyio.move_on_after(grace):
            await process.wait()
    if process.returncode is None:
        process.kill()
        await process.wait()
    assert process.returncode is not None
    return process.returncode


def alive(pid: int) -> bool:
    """Whether process `pid` still runs: a zombie (dead, not yet reaped) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    with suppress(FileNotFoundError):
        return "\nState:\tZ" not in status.read_text()
    return False  # it ended between the two looks


async def exited(pid: int) -> None:
    """Wait (bounded: 10 s, or the caller's scope) for process `pid` to end, told by a pidfd, no polling."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        with anyio.fail_after(10):
            await anyio.wait_readable(fd)
    finally:
        os.close(fd)
