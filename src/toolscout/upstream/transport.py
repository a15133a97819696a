"""How the gateway reaches one upstream server: stdio child, streamable HTTP, SSE, or in-process.

Each `UpstreamTransport` hands `mcp.Client` a fresh target per connection
attempt. Stream-based targets are wrapped so the connection notices when the
peer goes away (a child that exits, a dropped HTTP stream) instead of finding
out at the next call.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
from collections import deque
from collections.abc import AsyncGenerator, Callable
from types import TracebackType
from typing import Any, Protocol

import anyio
from mcp.client._transport import Transport, TransportStreams
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared._stream_protocols import ReadStream
from mcp.shared.message import SessionMessage

from toolscout.config.models import AnyServerConfig, HttpServerConfig, SseServerConfig, StdioServerConfig

logger = logging.getLogger(__name__)

STDERR_TAIL_LINES = 20
STDERR_DRAIN_SECONDS = 1.0

UpstreamTarget = Transport | Server[Any]
"""What `mcp.Client` connects to: a stream transport, or a low-level server run in-process."""


class UpstreamTransport(Protocol):
    """How to reach one upstream server."""

    @property
    def label(self) -> str:
        """A short description for logs and error messages, e.g. `stdio: mcp-server-time`."""
        ...

    def target(self, on_closed: Callable[[], None]) -> UpstreamTarget:
        """A fresh, not yet entered target; `on_closed` runs when its peer goes away."""
        ...

    def diagnostics(self) -> str | None:
        """What the upstream said last that may explain a failure (its stderr tail), if anything."""
        ...


class _WatchedReadStream:
    """Delegates to a read stream and reports its end of stream once."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:  # the dispatcher reads the sender's context from here when present
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _WatchedReadStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None


@contextlib.asynccontextmanager
async def _watched(transport: Transport, on_closed: Callable[[], None]) -> AsyncGenerator[TransportStreams]:
    async with transport as (read_stream, write_stream):
        yield _WatchedReadStream(read_stream, on_closed), write_stream


class StdioUpstream:
    """A child process spoken to over stdin/stdout; its stderr goes to the gateway's log."""

    def __init__(self, name: str, config: StdioServerConfig) -> None:
        self._name = name
        self._params = StdioServerParameters(
            command=config.command,
            args=list(config.args),
            env=dict(config.env) or None,
            cwd=os.path.expanduser(config.cwd) if config.cwd else None,
        )
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._log = logging.getLogger(f"toolscout.upstream.{name}")

    @property
    def label(self) -> str:
        return "stdio: " + shlex.join([self._params.command, *self._params.args])

    def diagnostics(self) -> str | None:
        lines = [line for line in self._stderr if line.strip()]
        return "\n".join(lines[-5:]) if lines else None

    def target(self, on_closed: Callable[[], None]) -> UpstreamTarget:
        return _watched(self._spawn(), on_closed)

    @contextlib.asynccontextmanager
    async def _spawn(self) -> AsyncGenerator[TransportStreams]:
        self._stderr.clear()
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        errlog = os.fdopen(write_fd, "w")
        drained = anyio.Event()
        pumping = False
        try:
            async with anyio.create_task_group() as tg:
                try:
                    async with stdio_client(self._params, errlog=errlog) as streams:
                        # The child holds its own copy now; closing ours lets the pipe
                        # report end-of-file when the child (and its children) exit.
                        errlog.close()
                        tg.start_soon(self._pump_stderr, read_fd, drained)
                        pumping = True
                        yield streams
                finally:
                    # Keep the last words of a crashing server, but never wait on a
                    # grandchild that holds the pipe open.
                    if pumping:
                        with anyio.move_on_after(STDERR_DRAIN_SECONDS, shield=True):
                            await drained.wait()
                    tg.cancel_scope.cancel()
        finally:
            errlog.close()
            os.close(read_fd)

    async def _pump_stderr(self, fd: int, drained: anyio.Event) -> None:
        pending = b""
        try:
            while True:
                await anyio.wait_readable(fd)
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for raw in lines:
                    self._record(raw)
            if pending:
                self._record(pending)
        finally:
            # Also when cancelled (the gateway stopping this server): nobody should wait for more output then.
            drained.set()

    def _record(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip()
        self._stderr.append(line)
        self._log.info("%s", line)


class RemoteUpstream:
    """A server reached over the network: streamable HTTP, or the legacy HTTP+SSE transport."""

    def __init__(self, config: HttpServerConfig | SseServerConfig) -> None:
        self._sse = isinstance(config, SseServerConfig)
        self._url = config.url
        self._headers = dict(config.headers) or None

    @property
    def label(self) -> str:
        return f"{'sse' if self._sse else 'http'}: {self._url}"

    def diagnostics(self) -> str | None:
        return None

    def target(self, on_closed: Callable[[], None]) -> UpstreamTarget:
        return _watched(self._open(), on_closed)

    @contextlib.asynccontextmanager
    async def _open(self) -> AsyncGenerator[TransportStreams]:
        if self._sse:
            async with sse_client(self._url, headers=self._headers) as streams:
                yield streams
            return
        async with (
            create_mcp_http_client(headers=self._headers) as http,
            # No cap on one SSE event: a tool's result is one event, and the SDK's 1 MiB default
            # would turn any larger result into a lost connection. Output caps apply downstream.
            streamable_http_client(self._url, http_client=http, max_sse_event_size=None) as streams,
        ):
            yield streams


class InProcessUpstream:
    """A low-level `mcp.server.Server` run inside the gateway's process (tests, embedding)."""

    def __init__(self, server: Server[Any]) -> None:
        self._server = server

    @property
    def label(self) -> str:
        return f"in-process: {self._server.name}"

    def diagnostics(self) -> str | None:
        return None

    def target(self, on_closed: Callable[[], None]) -> UpstreamTarget:
        return self._server


def transport_for(name: str, config: AnyServerConfig) -> UpstreamTransport:
    """The transport a configured server asks for."""
    if isinstance(config, StdioServerConfig):
        return StdioUpstream(name, config)
    return RemoteUpstream(config)
