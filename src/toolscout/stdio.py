"""The process's stdin/stdout as the MCP stream, cancellable and guarded against stray output.

The SDK's `stdio_server()` reads stdin in a worker thread that a cancellation
cannot interrupt, so a SIGTERM would wait for the next line from the client.
Here stdin is read without blocking, so shutdown is immediate, and responses are written from
the event loop. As the SDK does,
fd 0 and 1 are pointed at /dev/null and stderr while serving, so anything that
writes to stdout by accident (a library, a child that inherits it) cannot
corrupt the protocol stream.
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import anyio.to_thread
from mcp.server.stdio import stdio_server
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage

_CHUNK = 65536


def pollable(fd: int) -> bool:
    """Whether epoll can watch `fd`: a pipe, socket or terminal can; a regular file or a device such
    as /dev/null cannot (EPERM), and reading or writing one never blocks for long."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


class _LineReader:
    """Async iteration over the lines of a file descriptor, without a blocking thread for pipes and
    terminals (made non-blocking here; the caller restores the descriptor's mode)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pending = bytearray()
        self._eof = False
        self._pollable = pollable(fd)
        if self._pollable:
            os.set_blocking(fd, False)

    def __aiter__(self) -> _LineReader:
        return self

    async def __anext__(self) -> str:
        scanned = 0  # only new bytes are searched for the end of the line: a long line costs linear time
        while (end := self._pending.find(b"\n", scanned)) == -1 and not self._eof:
            scanned = len(self._pending)
            chunk = await self._read()
            self._eof = not chunk
            self._pending += chunk
        if not self._pending:
            raise StopAsyncIteration
        cut = len(self._pending) if end == -1 else end + 1
        line = bytes(self._pending[:cut])
        del self._pending[:cut]
        return line.decode("utf-8", "replace")

    async def _read(self) -> bytes:
        if not self._pollable:
            return await anyio.to_thread.run_sync(os.read, self._fd, _CHUNK)
        while True:
            await anyio.wait_readable(self._fd)
            try:
                return os.read(self._fd, _CHUNK)
            except BlockingIOError:
                continue


async def write_all(fd: int, data: bytes) -> None:
    """Write `data` to a non-blocking pipe or terminal from the event loop, waiting while it is full."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:  # the reader is not keeping up: wait, without blocking the loop
            await anyio.wait_writable(fd)


class _LineWriter:
    """Writes whole lines to a file descriptor: straight from the event loop when it does not block
    (a pipe or terminal, made non-blocking here: a worker thread per response costs more than the
    write), else from a worker thread (a regular file or a device, which epoll cannot watch)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pollable = pollable(fd)
        if self._pollable:
            os.set_blocking(fd, False)

    async def write(self, text: str) -> None:
        data = text.encode("utf-8")
        if not self._pollable:
            await anyio.to_thread.run_sync(self._write_all, data)
            return
        await write_all(self._fd, data)

    async def flush(self) -> None:
        return None

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]


@asynccontextmanager
async def serve_process_stdio() -> AsyncGenerator[
    tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]
]:
    """MCP streams over this process's stdin/stdout, restored when the block ends."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    was_blocking = os.get_blocking(wire_in)
    was_writing_blocking = os.get_blocking(wire_out)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        reader: Any = _LineReader(wire_in)
        writer: Any = _LineWriter(wire_out)
        async with stdio_server(
            stdin=cast(anyio.AsyncFile[str], reader), stdout=cast(anyio.AsyncFile[str], writer)
        ) as (
            read_stream,
            write_stream,
        ):
            yield read_stream, write_stream
    finally:
        os.set_blocking(wire_in, was_blocking)
        os.set_blocking(wire_out, was_writing_blocking)
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)
