"""Requests sent to one upstream on its kept session, and what comes back: one guarded send, one
error mapping, listings followed across their pages, and the server's tool list in the catalog.

A tool call (`ToolCall`) and any other request (`Request`: resources, prompts, subscriptions)
go out the same way (`CallsInFlight.send`): refused at once when there is no live session;
registered with the relay of the client that asked (so the upstream's requests during it reach
that client, the `Relay` at the end of this module); bounded by a timeout that cancels it upstream; cancelled when the
connection goes or the gateway stops. What can go wrong maps to one error each:

- the server forgot our session, or the SDK says the connection is closed: the connection is
  given up (to connect again) and the caller gets `ServerUnavailable` ("went away during ...");
- any other MCP error: the upstream refused, `ToolRefused` for a tool call, `UpstreamRefused` otherwise;
- any other exception: `ToolExecutionError` for a tool call, `UpstreamError` otherwise;
- no answer in time: `CallTimeout`.

The two kinds differ only in how they word these (each keeps its own messages). A failure is told
in one line by `describe_exception`, from the exception inside the task groups' exception groups
that matters.

Every result loses the upstream's `serverInfo` stamp on its way to the client
(`without_hop_metadata`). A listing is followed across its pages (`paginate`), at most `MAX_PAGES`
of them. `ServerTools` keeps one upstream's tools in the catalog: the live list while connected,
else the last one known or the declared ones, and a change the server announced until its new list
is fetched.

The relay is the way back from a call to the client that made it: progress, sampling, elicitation
and logs. The MCP server (serve/server.py) opens a `Relay` for each `tools/call` it serves and makes
it current for that request's task (`relaying`); `Upstream.call_tool` picks it up with
`current_relay()`. The layers in between (modes, meta-tools, gateway) need not carry it, the way a
request context travels in a web framework.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Generator, Iterable, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

import anyio
import mcp_types as types

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
from toolscout.telemetry.metrics import TOOL_ERROR, Histogram
from toolscout.telemetry.tracing import naming_upstream
from toolscout.upstream.spec import ConnectionState, Status

if TYPE_CHECKING:
    from mcp import Client
    from mcp.shared.exceptions import MCPError

logger = logging.getLogger(__name__)

T = TypeVar("T")


class ToolCall:
    """A `tools/call` of one tool: how its failures are worded."""

    method = "tools/call"

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
        self.method = what.partition(" ")[0]
        """The request's method alone (`what` may name a URI after it): a metric's label."""

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
        durations: Histogram | None = None,
    ) -> None:
        self._state = state
        self._durations = durations
        """Where each request's duration is recorded, by server, method and error type (None: nowhere)."""
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
        `use=False` (listings) leaves the `idleTimeout` clock alone. Its duration is recorded by error
        type: the failure's code, `tool_error` for a tool's `isError` result, empty when it succeeded."""
        durations = self._durations
        if durations is None:
            with naming_upstream(sending.server):
                return await self._send(sending, operation, limit=limit, use=use)
        started = time.perf_counter()
        error = "cancelled"
        try:
            with naming_upstream(sending.server):
                result = await self._send(sending, operation, limit=limit, use=use)
            error = TOOL_ERROR if isinstance(result, types.CallToolResult) and result.is_error else ""
            return result
        except ToolscoutError as exc:
            error = exc.code.lower()
            raise
        finally:
            durations.observe((sending.server, sending.method, error), time.perf_counter() - started)

    async def _send(
        self, sending: Sending, operation: Callable[[Client], Awaitable[T]], *, limit: float, use: bool
    ) -> T:
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
            except Exception as exc:
                from mcp.shared.exceptions import MCPError

                if isinstance(exc, MCPError):
                    if connection_gone(exc):
                        self._on_gone()  # connect again, from scratch
                        raise sending.gone(sending.gone_reason(exc), self._again()) from None
                    raise sending.refused(exc) from None
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


def innermost(exc: BaseException) -> BaseException:
    """Return the exception that matters inside task groups' exception groups: the first that is not a cancellation."""
    while isinstance(exc, BaseExceptionGroup):
        members: tuple[BaseException, ...] = cast(BaseExceptionGroup[BaseException], exc).exceptions
        cancelled = anyio.get_cancelled_exc_class()
        exc = next((e for e in members if not isinstance(e, cancelled)), members[0])
    return exc


def describe_exception(exc: BaseException) -> str:
    """Return a one-line reason for a failure, told from the exception that matters (`innermost`)."""
    import httpx2
    from mcp.shared.exceptions import MCPError

    from toolscout.errors import ToolscoutError

    exc = innermost(exc)
    if isinstance(exc, ToolscoutError):
        return exc.message  # worded for users already: no class name in front
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc} (is it installed and on PATH?)"
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename or exc}"
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"HTTP {exc.response.status_code} from {exc.request.url}"
    if isinstance(exc, httpx2.ConnectError):
        return f"cannot connect: {exc}"
    if isinstance(exc, httpx2.TransportError):
        return f"HTTP transport error: {str(exc) or type(exc).__name__}"
    if isinstance(exc, MCPError):
        return f"{exc.error.message} (MCP error {exc.error.code})"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def session_expired(exc: MCPError) -> bool:
    """Whether an HTTP server said it does not know our session (404 at the transport)."""
    message = exc.error.message.lower()
    return exc.error.code == types.INVALID_REQUEST and (
        "session not found" in message or "session terminated" in message
    )


def connection_gone(exc: MCPError) -> bool:
    """Whether an error says the connection itself is gone: the server forgot our session (it
    restarted), or the SDK's word for a transport that went away (`CONNECTION_CLOSED`)."""
    return session_expired(exc) or exc.error.code == types.CONNECTION_CLOSED


ResultT = TypeVar("ResultT", bound=types.Result)


def without_hop_metadata(result: ResultT) -> ResultT:
    """Drop the upstream's `serverInfo` stamp: it describes that hop, and the gateway stamps its own."""
    meta = result.meta
    if not meta or types.SERVER_INFO_META_KEY not in meta:
        return result
    rest = {k: v for k, v in meta.items() if k != types.SERVER_INFO_META_KEY}
    return result.model_copy(update={"meta": rest or None})


ItemT = TypeVar("ItemT")

MAX_PAGES = 100
"""Pages followed at most: a server whose cursor never ends must not keep a listing going forever."""

PageFetcher = Callable[[str | None], Awaitable[tuple[Sequence[ItemT], str | None]]]
"""Fetches the page at a cursor (None: the first): its items and the next cursor (None: the last page)."""


async def paginate(fetch: PageFetcher[ItemT], *, max_pages: int = MAX_PAGES) -> tuple[list[ItemT], bool]:
    """Return every item of a paginated listing, and whether its last page was reached (False when it
    stopped after `max_pages` pages, for the caller to say so in its own log)."""
    items: list[ItemT] = []
    cursor: str | None = None
    for _ in range(max_pages):
        page, cursor = await fetch(cursor)
        items.extend(page)
        if cursor is None:
            return items, True
    return items, False


RELIST_EMPTY_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0)
"""When a server lists no tools right after connecting (and `relist_empty`), the waits before each
listing again, as long as it still lists none: about half a minute in all."""


class ToolListing(Protocol):
    """What an upstream needs of the catalog its tools are listed in (the gateway's `Catalog`)."""

    def set_server_tools(self, server: str, tools: Iterable[types.Tool], *, declared: bool = False) -> None:
        """Replace everything known about `server`'s tools (`declared`: the config's, not the server's)."""
        ...

    def drop_server(self, server: str) -> None:
        """Forget `server`'s tools."""
        ...

    def counts(self, server: str) -> tuple[int, int]:
        """(all tools, enabled tools) of `server`."""
        ...

    def described(self, server: str) -> str:
        """`server`'s description made from its listed tools (empty without any)."""
        ...

    def admit_tool(self, server: str, name: str) -> object:
        """Raise unless `server` listed a tool called exactly `name` and the rules enable it."""
        ...


class ServerTools:
    """The tools one upstream lists in the catalog, and whether they are known to be out of date."""

    def __init__(
        self,
        server: str,
        catalog: ToolListing,
        declared: tuple[types.Tool, ...],
        on_listed: Callable[[Sequence[types.Tool]], None],
    ) -> None:
        self._server = server
        self.catalog = catalog
        self._declared = declared
        self._on_listed = on_listed
        self.offline: tuple[types.Tool, ...] | None = None
        """The last live list the gateway knows of (see `Upstream.use_offline_tools`); None: the declared tools."""
        self.refresh_requested = False
        """The server announced a change that no listing has fetched yet."""
        self.stale = False
        """The server said its tools changed and the new list has not arrived yet: calls wait for it."""
        self.listed_at: float | None = None
        """When (anyio's clock) the server last listed its tools live; None: not yet."""

    def announced_change(self) -> None:
        """The server said its tools changed."""
        self.refresh_requested = True
        self.stale = True

    async def relist_while_empty(self, request: Callable[[], None]) -> None:
        """Ask for the list again (`request`) after each of `RELIST_EMPTY_DELAYS` while the last one
        was empty (run beside the connection, cancelled with it)."""
        for delay in RELIST_EMPTY_DELAYS:
            await anyio.sleep(delay)
            if self.offline:  # it listed some at last (or told us of a change)
                return
            logger.info("%s: listed no tools yet; listing again", self._server)
            request()
        logger.info("%s: still lists no tools; listed again when it says its tools changed", self._server)

    async def fetch(self, client: Client) -> list[types.Tool]:
        """The server's whole tool list (every page)."""
        if client.server_capabilities.tools is None:
            return []

        async def page(cursor: str | None) -> tuple[list[types.Tool], str | None]:
            listed = await client.list_tools(cursor=cursor)
            return listed.tools, listed.next_cursor

        tools, complete = await paginate(page)
        if not complete:
            logger.warning("%s: stopped listing tools after %d pages", self._server, MAX_PAGES)
        return tools

    def list_live(self, tools: Sequence[types.Tool]) -> None:
        """List what the server listed just now."""
        self.catalog.set_server_tools(self._server, tools)
        self.listed_at = anyio.current_time()
        # What it really offers: listed while it is idle, reconnecting or down, until it says otherwise.
        self.offline = tuple(tools)
        self._on_listed(tools)

    def list_offline(self) -> None:
        """Not connected: list its last known tools, else the declared ones, else none."""
        if self.offline is not None:
            self.catalog.set_server_tools(self._server, self.offline)
        elif self._declared:
            self.catalog.set_server_tools(self._server, self._declared, declared=True)
        else:
            self.catalog.drop_server(self._server)


# The way back from an upstream call to the client that made it: the relay.

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


class HttpRequestRelay:
    """The way back to a plain HTTP request (a dashboard page, the JSON API): it cannot be asked anything.

    Sampling and elicitation are refused while the call runs (a destructive tool is confirmed with
    its confirmation id in a second request instead); progress and log messages are dropped.
    `caller` binds a confirmation id to the request's principal (`subject`) and `client`, so an id
    proposed to one key runs nothing for another."""

    def __init__(self, subject: str | None, client: str) -> None:
        self._client = client
        self._caller = repr((subject, client))

    @property
    def client(self) -> str | None:
        return self._client

    @property
    def origin(self) -> object:
        return self

    @property
    def caller(self) -> str:
        return self._caller

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        return None

    async def sample(self, params: types.CreateMessageRequestParams) -> SamplingResult:
        return types.ErrorData(code=types.METHOD_NOT_FOUND, message="A plain HTTP request has no model to sample.")

    async def elicit(self, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        return types.ErrorData(
            code=types.METHOD_NOT_FOUND, message="A plain HTTP request confirms with its confirmation id."
        )

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        return None


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
