"""JSON-RPC messages as lines on file descriptors: what the gateway's MCP server (the process's own
stdin/stdout, `toolscout.serve.stdio`) and its upstreams (a stdio child's pipes,
`toolscout.upstream.stdio_child`) both speak.

`MessageReader` and `MessageWriter` are the session's read and write streams themselves: a
message is parsed in the task that asks for it and written by the task that sends it, with no
reader or writer task in between. The SDK's `stdio_server()` and the memory streams it hands out
put a task hop on each side of every message, which on a proxy's four crossings per call
(client in, upstream out, upstream in, client out) cost more than the parsing.

Pipes, sockets and terminals are used without blocking, so a cancellation (a SIGTERM, a stopping
upstream) is immediate; a descriptor epoll cannot watch (a regular file, /dev/null) is read and
written from a worker thread.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Awaitable, Callable

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.shared.message import SessionMessage

from toolscout.streams import AsyncClosing, ReceiveIteration

_CHUNK = 65536


def pollable(fd: int) -> bool:
    """Whether epoll can watch `fd`: a pipe, socket or terminal can; a regular file or a device such
    as /dev/null cannot (EPERM), and reading or writing one never blocks for long."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


def parse_message(line: bytes | str) -> SessionMessage | Exception:
    """One line as a JSON-RPC message, or the error it is (handed on to the session, as the SDK does)."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


class MessageReader(ReceiveIteration):
    """The read stream of a session over a descriptor: each line is one message, parsed on `receive()`.

    A pipe or terminal is made non-blocking here (the caller restores its mode). `end()` may be
    called from another task (the writer, on a broken pipe): a `receive()` waiting for input then
    ends the stream as EOF does.
    """

    def __init__(
        self,
        fd: int,
        parse: Callable[[bytes], SessionMessage | Exception] = parse_message,
        *,
        on_message: Callable[[SessionMessage], None] | None = None,
        on_invalid: Callable[[bytes], Awaitable[None]] | None = None,
        before_eof: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """`on_message` sees each message as it is received, `on_invalid` is awaited with each line that
        is not one (before its error is handed on); `before_eof` is awaited once before the peer's EOF
        ends the stream (not when `end()` does)."""
        self._fd = fd
        self._parse = parse
        self._on_message = on_message
        self.on_invalid = on_invalid
        """May be set later (the writer that answers is made after its reader)."""
        self._before_eof = before_eof
        self._ended = False
        self._pending = bytearray()
        self._scanned = 0
        self._eof = False
        self._closed = False
        self._waiting: anyio.CancelScope | None = None
        self._idle = anyio.Event()
        self._idle.set()
        self._pollable = pollable(fd)
        if self._pollable:
            os.set_blocking(fd, False)

    async def receive(self) -> SessionMessage | Exception:
        if self._closed:
            raise anyio.ClosedResourceError
        line = await self._line()
        if line is None:
            if self._before_eof is not None and not self._ended:
                before_eof, self._before_eof = self._before_eof, None
                await before_eof()
            raise anyio.EndOfStream
        message = self._parse(line)
        if isinstance(message, SessionMessage):
            if self._on_message is not None:
                self._on_message(message)
        elif self.on_invalid is not None:
            await self.on_invalid(line)
        return message

    async def _line(self) -> bytes | None:
        # Only new bytes are searched for the end of a line: a long line costs linear time.
        while (end := self._pending.find(b"\n", self._scanned)) == -1:
            self._scanned = len(self._pending)
            if self._eof:
                break
            chunk = await self._read()
            if chunk is None:  # end() interrupted the wait, and has dropped what was buffered
                return None
            self._eof = not chunk
            self._pending += chunk
        if not self._pending:
            return None
        cut = len(self._pending) if end == -1 else end + 1
        line = bytes(self._pending[:cut])
        del self._pending[:cut]
        self._scanned = 0
        return line

    async def _read(self) -> bytes | None:
        """The next chunk (b"" at EOF), or None when `end()` or `aclose()` interrupted the wait."""
        if self._eof:
            return b""
        if not self._pollable:
            return await anyio.to_thread.run_sync(os.read, self._fd, _CHUNK)
        try:
            return os.read(self._fd, _CHUNK)
        except BlockingIOError:
            pass
        self._idle = anyio.Event()
        try:
            with anyio.CancelScope() as self._waiting:
                while True:
                    await anyio.wait_readable(self._fd)
                    try:
                        return os.read(self._fd, _CHUNK)
                    except BlockingIOError:
                        continue
            return None
        finally:
            self._waiting = None
            self._idle.set()

    def end(self) -> None:
        """End the stream as if the peer had closed it (what is buffered is dropped)."""
        self._eof = self._ended = True
        self._pending.clear()
        self._scanned = 0
        if self._waiting is not None:
            self._waiting.cancel()

    async def drain(self) -> None:
        """Read and drop everything up to EOF: a peer blocked writing can then go on to its exit.
        For after `aclose()`; only for a pollable descriptor."""
        self.end()
        await self._idle.wait()  # a receive() interrupted by end() has let go of the descriptor
        while True:
            await anyio.wait_readable(self._fd)
            try:
                if not os.read(self._fd, _CHUNK):
                    return
            except BlockingIOError:
                continue

    async def aclose(self) -> None:
        self._closed = True
        self.end()


class MessageWriter(AsyncClosing):
    """The write stream of a session over a descriptor: `send()` writes the message's line itself.

    Lines stay whole: a line that the descriptor cannot take at once is finished before the next
    one starts, even if its sender is cancelled meanwhile; only `abort()` cuts it, or, with
    `cancelled_grace`, a peer that takes longer than that to take the rest of a cancelled sender's
    line (the stream is then broken, as the next line could not be told apart). When the peer
    has gone (EPIPE and the like) `on_broken` runs once and every send raises BrokenResourceError,
    which the SDK turns into CONNECTION_CLOSED for a request and drops for a response.
    """

    def __init__(
        self,
        fd: int,
        on_broken: Callable[[], None],
        *,
        on_sent: Callable[[SessionMessage], None] | None = None,
        cancelled_grace: float | None = None,
    ) -> None:
        """`on_sent` sees each message once its line is written."""
        self._fd = fd
        self._on_broken = on_broken
        self._on_sent = on_sent
        self._cancelled_grace = cancelled_grace
        self._rest = memoryview(b"")
        self._closed = False
        self._broken = False
        self._busy: anyio.Event | None = None
        self._finishing: anyio.CancelScope | None = None
        self._pollable = pollable(fd)
        if self._pollable:
            os.set_blocking(fd, False)

    async def send(self, item: SessionMessage, /) -> None:
        data = (item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode()
        while self._busy is not None:  # another line is half-written
            await self._busy.wait()
        if self._closed:
            raise anyio.ClosedResourceError
        if self._broken:
            raise anyio.BrokenResourceError
        try:
            if not self._pollable:
                await self._in_thread(data)
            else:
                try:
                    written = os.write(self._fd, data)
                except BlockingIOError:
                    written = 0
                if written < len(data):
                    await self._finish(memoryview(data)[written:])
        except OSError as exc:
            self._break()
            raise anyio.BrokenResourceError from exc
        if self._on_sent is not None:
            self._on_sent(item)

    async def _finish(self, rest: memoryview) -> None:
        busy = self._busy = anyio.Event()
        self._rest = rest
        try:
            try:
                with anyio.CancelScope() as self._finishing:
                    await self._write_rest()
            except anyio.get_cancelled_exc_class():
                # The sender is cancelled with its line half-written: the line is finished all the
                # same (the next one must start on a line of its own), within `cancelled_grace`.
                with anyio.CancelScope(shield=True) as self._finishing:
                    if self._closed:
                        self._finishing.cancel()
                    elif self._cancelled_grace is not None:
                        self._finishing.deadline = anyio.current_time() + self._cancelled_grace
                    await self._write_rest()
                if self._rest:  # cut: what follows would be garbage to the peer
                    self._break()
                raise
            if self._rest:  # aborted
                self._break()
                raise anyio.BrokenResourceError
        finally:
            self._rest = memoryview(b"")
            self._finishing = None
            self._busy = None
            busy.set()

    async def _write_rest(self) -> None:
        while self._rest:
            await anyio.wait_writable(self._fd)
            try:
                self._rest = self._rest[os.write(self._fd, self._rest) :]
            except BlockingIOError:
                continue

    async def _in_thread(self, data: bytes) -> None:
        busy = self._busy = anyio.Event()
        try:
            await anyio.to_thread.run_sync(self._write_all, data)
        finally:
            self._busy = None
            busy.set()

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def _break(self) -> None:
        if not self._broken:
            self._broken = True
            self._on_broken()

    async def flushed(self) -> None:
        """Return once no line is half-written."""
        while self._busy is not None:
            await self._busy.wait()

    def abort(self) -> None:
        """Stop finishing a half-written line (the descriptor is about to be closed)."""
        self._closed = True
        if self._finishing is not None:
            self._finishing.cancel()

    async def aclose(self) -> None:
        self._closed = True
