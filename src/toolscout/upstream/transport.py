"""How the gateway reaches one upstream server: the `UpstreamTransport` seam, and an in-process server.

Each `UpstreamTransport` hands `mcp.Client` a fresh target per connection attempt: a stdio child
(stdio_child.py), streamable HTTP or SSE (remote.py), or a low-level server run in-process (here).
Stream-based targets are wrapped (`watched`) so the connection notices when the peer goes away (a
child that exits, a dropped HTTP stream) instead of finding out at the next call.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable
from typing import Any, Protocol

import anyio
from mcp.client import Transport
from mcp.server import MCPServer, Server
from mcp.shared.message import SessionMessage

from toolscout.jsonrpc_lines import ReceiveIteration
from toolscout.upstream._sdk import SessionReadStream, SessionStreams

UpstreamTarget = Transport | Server[Any] | MCPServer
"""What `mcp.Client` connects to: a stream transport, or a server (low-level or `MCPServer`) run in-process."""


class UpstreamTransport(Protocol):
    """How to reach one upstream server."""

    @property
    def label(self) -> str:
        """A short description for logs and error messages, e.g. `stdio: mcp-server-time`, secrets masked."""
        ...

    def target(self, on_closed: Callable[[], None]) -> UpstreamTarget:
        """A fresh, not yet entered target; `on_closed` runs when its peer goes away."""
        ...

    def diagnostics(self) -> str | None:
        """What the upstream said last that may explain a failure (its stderr tail), if anything."""
        ...


class _WatchedReadStream(ReceiveIteration):
    """Delegates to a read stream and reports its end of stream once."""

    def __init__(self, inner: SessionReadStream[SessionMessage | Exception], on_end: Callable[[], None]) -> None:
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


@contextlib.asynccontextmanager
async def watched(transport: Transport, on_closed: Callable[[], None]) -> AsyncGenerator[SessionStreams]:
    """`transport`'s streams, its read stream reporting its end to `on_closed` (the peer went away)."""
    async with transport as (read_stream, write_stream):
        yield _WatchedReadStream(read_stream, on_closed), write_stream


class InProcessUpstream:
    """An SDK server (low-level `Server` or `MCPServer`) run inside the gateway's process (tests, embedding)."""

    def __init__(self, server: Server[Any] | MCPServer) -> None:
        self._server = server

    @property
    def label(self) -> str:
        return f"in-process: {self._server.name}"

    def diagnostics(self) -> str | None:
        return None

    def target(self, on_closed: Callable[[], None]) -> UpstreamTarget:
        return self._server
