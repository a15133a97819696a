"""Requests sent to one upstream on its kept session: one guarded send, one error mapping.

A tool call (`ToolCall`) and any other request (`Request`: resources, prompts, subscriptions)
go out the same way (`CallsInFlight.send`): refused at once when there is no live session;
registered with the relay of the client that asked (so the upstream's requests during it reach
that client, callbacks.py); bounded by a timeout that cancels it upstream; cancelled when the
connection goes or the gateway stops. What can go wrong maps to one error each:

- the server forgot our session, or the SDK says the connection is closed: the connection is
  given up (to connect again) and the caller gets `ServerUnavailable` ("went away during ...");
- any other MCP error: the upstream refused, `ToolRefused` for a tool call, `UpstreamRefused` otherwise;
- any other exception: `ToolExecutionError` for a tool call, `UpstreamError` otherwise;
- no answer in time: `CallTimeout`.

The two kinds differ only in how they word these (each keeps its own messages).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
from mcp import Client
from mcp.shared.exceptions import MCPError

from toolscout.errors import (
    CallTimeout,
    ServerUnavailable,
    ToolExecutionError,
    ToolRefused,
    ToolscoutError,
    UpstreamError,
    UpstreamRefused,
    server_unavailable,
)
from toolscout.upstream.failures import connection_gone, describe_exception, session_expired
from toolscout.upstream.relay import Relay, current_relay
from toolscout.upstream.spec import ConnectionState, Status

T = TypeVar("T")


class ToolCall:
    """A `tools/call` of one tool: how its failures are worded."""

    def __init__(self, server: str, tool: str) -> None:
        self.server = server
        self.tool = tool

    def unavailable(self, state: ConnectionState) -> ServerUnavailable:
        if state.stop_reason is not None:
            return ServerUnavailable(
                f"Server {self.server!r} was {state.stop_reason}; {self.tool!r} was not called.",
                server=self.server,
                tool=self.tool,
                status="removed",
            )
        return server_unavailable(self.server, state.status.value, state.error, tool=self.tool)

    def gone(self, reason: str, again: str) -> ServerUnavailable:
        return ServerUnavailable(
            f"Server {self.server!r} went away during the call to {self.tool!r} ({reason}); the call may or may "
            f"not have taken effect.{again}",
            server=self.server,
            tool=self.tool,
            status=Status.ERROR.value,
        )

    def gone_reason(self, exc: MCPError) -> str:
        # The server forgot our session (it restarted), or the SDK's word for a transport that is gone.
        return "its HTTP session expired" if session_expired(exc) else exc.error.message

    def refused(self, exc: MCPError) -> ToolscoutError:
        return ToolRefused(
            f"{self.server}.{self.tool} failed: {exc.error.message} (MCP error {exc.error.code})",
            upstream_message=exc.error.message,
            server=self.server,
            tool=self.tool,
            upstreamCode=exc.error.code,
            upstreamData=exc.error.data,
        )

    def failed(self, reason: str) -> ToolscoutError:
        return ToolExecutionError(f"{self.server}.{self.tool} failed: {reason}", server=self.server, tool=self.tool)

    def timed_out(self, limit: float) -> CallTimeout:
        return CallTimeout(
            f"{self.server}.{self.tool} did not answer within {limit:g}s; the call was cancelled upstream. "
            f"Raise `timeout` for {self.server!r} in the config if the tool is expected to be slow.",
            server=self.server,
            tool=self.tool,
            timeoutSeconds=limit,
        )


class Request:
    """A request other than a tool call; `what` names it in messages (e.g. `resources/read file:///a`)."""

    def __init__(self, server: str, what: str) -> None:
        self.server = server
        self.what = what

    def unavailable(self, state: ConnectionState) -> ServerUnavailable:
        if state.stop_reason is not None:
            message = f"Server {self.server!r} was {state.stop_reason}."
            return ServerUnavailable(message, server=self.server, status="removed")
        return server_unavailable(self.server, state.status.value, state.error)

    def gone(self, reason: str, again: str) -> ServerUnavailable:
        return ServerUnavailable(
            f"Server {self.server!r} went away during {self.what} ({reason}).{again}",
            server=self.server,
            status=Status.ERROR.value,
        )

    def gone_reason(self, exc: MCPError) -> str:
        return exc.error.message

    def refused(self, exc: MCPError) -> ToolscoutError:
        return UpstreamRefused(
            f"{self.server}: {self.what} failed: {exc.error.message}",
            upstream_message=exc.error.message,
            server=self.server,
            upstreamCode=exc.error.code,
            upstreamData=exc.error.data,
        )

    def failed(self, reason: str) -> ToolscoutError:
        return UpstreamError(f"{self.server}: {self.what} failed: {reason}", server=self.server)

    def timed_out(self, limit: float) -> CallTimeout:
        return CallTimeout(
            f"{self.server}: {self.what} did not answer within {limit:g}s and was cancelled upstream.",
            server=self.server,
            timeoutSeconds=limit,
        )


Sending = ToolCall | Request


class CallsInFlight:
    """The requests in flight on one upstream: their cancel scopes, the relays of their clients, and
    when the last one ended (the `idleTimeout` clock)."""

    def __init__(
        self,
        state: ConnectionState,
        *,
        reconnect: bool,
        on_gone: Callable[[], None],
        on_ended: Callable[[], None],
    ) -> None:
        self._state = state
        self._reconnect = reconnect
        self._on_gone = on_gone
        """Gives the connection up (the server forgot our session, or its transport is gone)."""
        self._on_ended = on_ended
        """Runs whenever a request ends (the idle countdown starts when the last one does)."""
        self._scopes: set[anyio.CancelScope] = set()
        self._relays: dict[object, Relay] = {}
        self.last_used = 0.0
        """When a request last started or ended (`anyio.current_time()`)."""

    def __bool__(self) -> bool:
        return bool(self._scopes)

    @property
    def relays(self) -> list[Relay]:
        """The relays of the requests in flight, in the order they started."""
        return list(self._relays.values())

    def drop(self) -> None:
        """Cancel every request in flight: its connection is gone, or the gateway is stopping (an answer
        that cannot come is not waited for)."""
        for scope in list(self._scopes):
            scope.cancel()

    async def send(
        self, sending: Sending, operation: Callable[[Client], Awaitable[T]], *, limit: float, use: bool = True
    ) -> T:
        """Run `operation` on the live session, within `limit` seconds; failures as the module says.
        `use=False` (listings) leaves the `idleTimeout` clock alone."""
        state = self._state
        client = state.live_session
        if client is None:
            raise sending.unavailable(state)
        relay = current_relay()
        token = object()
        if relay is not None:
            self._relays[token] = relay
        if use:
            self.last_used = anyio.current_time()
        # The outer scope is cancelled by `drop()` (the connection lost, the gateway stopping), the inner
        # one by the deadline: told apart below.
        with anyio.CancelScope() as dropped:
            self._scopes.add(dropped)
            try:
                with anyio.move_on_after(limit):
                    return await operation(client)
            except MCPError as exc:
                if connection_gone(exc):
                    self._on_gone()  # connect again, from scratch
                    raise sending.gone(sending.gone_reason(exc), self._again()) from None
                raise sending.refused(exc) from None
            except Exception as exc:
                if state.lost:
                    raise sending.gone(describe_exception(exc), self._again()) from None
                raise sending.failed(describe_exception(exc)) from None
            finally:
                if use:
                    self.last_used = anyio.current_time()
                self._scopes.discard(dropped)
                self._relays.pop(token, None)
                self._on_ended()
        if dropped.cancelled_caught or state.lost or state.stopping:
            reason = "the connection was lost"
            if state.stopping:
                reason = state.stop_reason or "the gateway is stopping"
            raise sending.gone(reason, self._again())
        raise sending.timed_out(limit)

    def _again(self) -> str:
        return " toolscout is connecting to it again." if self._reconnect and not self._state.stopping else ""
