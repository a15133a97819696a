"""The way back from an upstream call to the client that made it: progress, sampling, elicitation, logs.

The MCP server (serve/server.py) opens a `Relay` for each `tools/call` it serves and makes it current for
that request's task (`relaying`); `Upstream.call_tool` picks it up with `current_relay()`. The
layers in between (modes, meta-tools, gateway) need not carry it, the way a request context
travels in a web framework. An upstream's server-to-client requests and notifications during a
call are then sent to exactly that client, or refused with an error the upstream can act on.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

import mcp_types as types

SamplingResult = types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData


class Relay(Protocol):
    """What an upstream may send back to the client of a call in flight."""

    @property
    def client(self) -> str | None:
        """Who is calling, for logs and the audit trail (None when unknown)."""
        ...

    @property
    def origin(self) -> object:
        """The same object for every call of one client, whatever it calls itself."""
        ...

    @property
    def caller(self) -> str:
        """Who is calling, as something a confirmation can be bound to: the principal and the client
        (the same for every call of one client, on whichever replica it lands, and for no other)."""
        ...

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Pass on an upstream progress notification (a no-op when the client asked for none)."""
        ...

    async def sample(self, params: types.CreateMessageRequestParams) -> SamplingResult:
        """Ask the client's model; an `ErrorData` when the client cannot or will not."""
        ...

    async def elicit(self, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        """Ask the client's user; an `ErrorData` when the client cannot."""
        ...

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        """Pass on an upstream log message, where the client's protocol era allows it."""
        ...


_current: ContextVar[Relay | None] = ContextVar("toolscout_relay", default=None)


def current_relay() -> Relay | None:
    """The relay of the request this task is serving, if any."""
    return _current.get()


@contextmanager
def relaying(relay: Relay) -> Generator[None]:
    """Make `relay` current for the code run inside (and the tasks it starts)."""
    token = _current.set(relay)
    try:
        yield
    finally:
        _current.reset(token)
