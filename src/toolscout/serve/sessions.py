"""Per-client state, and telling one client that its tool (resource, prompt) list changed, in both protocol eras.

What identifies "a client" depends on the transport and the era:

* stdio and in-process connections: the connection itself. `Server.run` enters the server's
  lifespan once per connection, so the lifespan yields a `ConnectionScope` that owns the state,
  and the state goes away with the connection.
* streamable HTTP at 2024-11-05 … 2025-11-25: the `Mcp-Session-Id` header.
* streamable HTTP at 2026-07-28, and stateless HTTP: the era has no sessions, so the state is
  keyed by the request's principal (decided at the HTTP edge, auth.py) and the client's
  name (`clientInfo`). Without authentication (today) every instance of one client program
  shares it.

HTTP states live in a bounded LRU (`max_http_clients`); an evicted client starts afresh (and whoever
follows evictions, `follow_evictions`, forgets it too).

Change notifications follow the era: handshake-era clients get `notifications/tools/list_changed`
on the stream of the request that caused it (the POST's response stream on HTTP, which needs no
standalone GET stream); 2026-07-28 clients only get it on a `subscriptions/listen` stream they
opened, so each client state has its own `SubscriptionBus` that its listen streams read.
"""

from __future__ import annotations

import secrets
import warnings
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar, get_args

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolscout.config.scopes import UNSCOPED, Scope
from toolscout.serve.auth import principal_of
from toolscout.upstream.relay import SamplingResult

ListChanged = ToolsListChanged | ResourcesListChanged | PromptsListChanged


def _handshake_notice(event: ServerEvent) -> types.ServerNotification:
    if isinstance(event, ResourceUpdated):
        return types.ResourceUpdatedNotification(params=types.ResourceUpdatedNotificationParams(uri=event.uri))
    if isinstance(event, ToolsListChanged):
        return types.ToolListChangedNotification()
    if isinstance(event, ResourcesListChanged):
        return types.ResourceListChangedNotification()
    return types.PromptListChangedNotification()


DEFAULT_MAX_HTTP_CLIENTS = 1000

ResultT = TypeVar("ResultT", bound=types.Result)
LOG_LEVELS: tuple[types.LoggingLevel, ...] = get_args(types.LoggingLevel)
"""Least to most severe."""


@dataclass(eq=False)
class ClientState:
    """What the gateway remembers about one client."""

    loaded: dict[tuple[str, str], None] = field(default_factory=dict[tuple[str, str], None])
    """Tools this client loaded in dynamic mode, as `(server, tool)`, in loading order."""
    log_level: types.LoggingLevel = "info"
    """The least severe upstream log message passed on (`logging/setLevel`, handshake era)."""
    bus: InMemorySubscriptionBus = field(default_factory=InMemorySubscriptionBus)
    """Events for this client's `subscriptions/listen` streams (2026-07-28 era)."""
    listed: dict[str, str] = field(default_factory=dict[str, str])
    """Digest of each list this client fetched: "tools", or one of `mirror.list_names.LIST_NAMES`."""
    announced: dict[str, str] = field(default_factory=dict[str, str])
    """Digest of each list it was last told changed, so that one change is told once."""
    session: ServerSession | None = None
    """The session of its latest request: its standalone channel, for telling it about changes."""
    modern: bool = False
    """Whether it speaks 2026-07-28 (changes go to its listen streams, not to a channel)."""
    scope: Scope = UNSCOPED
    """What its principal sees (of its latest request): its lists are compared under it when they change."""
    identity: str = field(default_factory=lambda: secrets.token_urlsafe(12))
    """Names a stdio or in-process connection's client (which has no principal or key of its own)."""
    _listen: ListenHandler | None = None
    _tools_changed: bool = False

    @property
    def listen(self) -> ListenHandler:
        """The handler serving this client's listen streams."""
        if self._listen is None:
            self._listen = ListenHandler(self.bus, max_subscriptions=16)
        return self._listen

    def fetched(self, name: str, digest: str) -> None:
        """The client got list `name`, whose digest is `digest`."""
        self.listed[name] = self.announced[name] = digest

    def news(self, name: str, digest: str) -> bool:
        """Whether list `name` as it is now (`digest`) is news to the client; if so, it is told from here on."""
        if name not in self.listed or digest in (self.listed[name], self.announced.get(name)):
            return False
        self.announced[name] = digest
        return True

    def mark_tools_changed(self) -> None:
        """Record that this client's tool list changed; `ClientSessions.announce` tells the client."""
        self._tools_changed = True

    def take_tools_changed(self) -> bool:
        """Whether the tool list changed since the last call."""
        changed, self._tools_changed = self._tools_changed, False
        return changed


@dataclass(eq=False)
class ConnectionScope:
    """The server lifespan's value: per connection on stdio and in process, shared on HTTP."""

    client: ClientState = field(default_factory=ClientState)


Context = ServerRequestContext[ConnectionScope]


class ClientSessions:
    """Finds the `ClientState` of the client behind a request, and notifies it of changes."""

    def __init__(self, *, max_http_clients: int = DEFAULT_MAX_HTTP_CLIENTS) -> None:
        self.max_http_clients = max_http_clients
        self._http: OrderedDict[Hashable, ClientState] = OrderedDict()
        self._eviction_listeners: list[Callable[[ClientState], None]] = []

    def follow_evictions(self, listener: Callable[[ClientState], None]) -> Callable[[], None]:
        """Have `listener` told of each HTTP client state forgotten to make room (its subscriptions go
        with it), until the returned function is called."""
        self._eviction_listeners.append(listener)
        return lambda: self._eviction_listeners.remove(listener)

    def state(self, ctx: Context) -> ClientState:
        """The state of the client that sent this request, created on first use."""
        state = self._find(ctx)
        state.session = ctx.session
        state.modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        state.scope = principal_of(ctx.request).scope
        return state

    def http_states(self) -> list[ClientState]:
        """The HTTP clients the gateway remembers, least recently seen first."""
        return list(self._http.values())

    def _find(self, ctx: Context) -> ClientState:
        if ctx.request is None:  # stdio or in process: the connection is the client
            return ctx.lifespan_context.client
        key = self.http_key(ctx)
        state = self._http.get(key)
        if state is None:
            state = self._http[key] = ClientState()
            while len(self._http) > self.max_http_clients:
                _, evicted = self._http.popitem(last=False)
                for listener in list(self._eviction_listeners):
                    listener(evicted)
        else:
            self._http.move_to_end(key)
        return state

    @staticmethod
    def http_key(ctx: Context) -> tuple[Any, ...]:
        """What identifies the HTTP client of `ctx`: `("session", id)`, or `("client", subject, name)`."""
        headers = getattr(ctx.request, "headers", None)
        session_id = headers.get("mcp-session-id") if headers is not None else None
        if session_id:
            return ("session", session_id)
        params = ctx.session.client_params
        client = params.client_info.name if params is not None else None
        return ("client", principal_of(ctx.request).subject, client)

    async def announce(self, ctx: Context, state: ClientState) -> None:
        """Tell the client whose request this is that its tool list changed, if it did."""
        if not state.take_tools_changed():
            return
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await state.bus.publish(ToolsListChanged())
        else:
            await ctx.session.send_notification(types.ToolListChangedNotification(), related_request_id=ctx.request_id)

    def describe(self, ctx: Context) -> str:
        """A short name for the client behind a request, for logs and the audit trail."""
        params = ctx.session.client_params
        name = params.client_info.name if params is not None else "unknown client"
        if ctx.request is None:
            return f"{name} (connection)"
        key = self.http_key(ctx)
        return f"{name} (session {key[1]})" if key[0] == "session" else f"{name} (http)"

    @staticmethod
    async def tell(state: ClientState, event: ServerEvent) -> None:
        """Tell a client, outside any request of its own, that one of its lists or resources changed."""
        if state.modern:
            await state.bus.publish(event)
        elif state.session is not None:
            # The standalone channel: stdio's pipe, or the HTTP session's GET stream if it opened one.
            await state.session.send_notification(_handshake_notice(event))

    def relay(self, ctx: Context, state: ClientState) -> SessionRelay:
        """The relay back to the client of this request (upstream/relay.py)."""
        return SessionRelay(ctx, state, self.describe(ctx))


class SessionRelay:
    """The `Relay` of one `tools/call` on the gateway's MCP face: everything goes to that request's client.

    Requests ride the call's own stream (`related_request_id`), so over HTTP they reach the client
    on the POST it is waiting on. A client that did not declare the capability, or that speaks
    2026-07-28 (where servers may not send requests), gets no request: the upstream gets an
    error saying why.
    """

    def __init__(self, ctx: Context, state: ClientState, client: str | None) -> None:
        self._ctx = ctx
        self._state = state
        self._client = client

    @property
    def client(self) -> str | None:
        return self._client

    @property
    def origin(self) -> object:
        return self._state

    @property
    def caller(self) -> str:
        if self._ctx.request is None:  # a connection is its own client
            return f"connection {self._state.identity}"
        # Over HTTP: the principal, and its session or client name (ClientSessions.http_key), which
        # every replica derives alike from the request.
        subject = principal_of(self._ctx.request).subject
        return repr((subject, *ClientSessions.http_key(self._ctx)))

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        await self._ctx.session.report_progress(progress, total, message)

    def _refusal(self, what: str, capability: object | None) -> types.ErrorData | None:
        if capability is None:
            reason = "its client does not support it"
        elif self._ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:  # asked in rounds instead (rounds.py)
            reason = f"its client speaks {self._ctx.protocol_version}, where servers cannot send requests"
        else:
            return None
        return types.ErrorData(code=types.METHOD_NOT_FOUND, message=f"{what} through toolscout failed: {reason}.")

    async def sample(self, params: types.CreateMessageRequestParams) -> SamplingResult:
        capabilities = self._ctx.session.client_capabilities
        refused = self._refusal("Sampling", capabilities.sampling if capabilities else None)
        if refused is not None:
            return refused
        result_type = types.CreateMessageResultWithTools if params.tools else types.CreateMessageResult
        return await self._send(types.CreateMessageRequest(params=params), result_type)

    async def elicit(self, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        capabilities = self._ctx.session.client_capabilities
        refused = self._refusal("Elicitation", capabilities.elicitation if capabilities else None)
        if refused is not None:
            return refused
        return await self._send(types.ElicitRequest(params=params), types.ElicitResult)

    async def _send(self, request: types.ServerRequest, result_type: type[ResultT]) -> ResultT | types.ErrorData:
        metadata = ServerMessageMetadata(related_request_id=self._ctx.request_id)
        try:
            return await self._ctx.session.send_request(request, result_type, metadata=metadata)
        except NoBackChannelError:
            return types.ErrorData(
                code=types.METHOD_NOT_FOUND, message="toolscout has no channel back to the client of this call."
            )
        except MCPError as exc:  # the client's own answer: the upstream gets it as it was
            return exc.error

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        if LOG_LEVELS.index(params.level) < LOG_LEVELS.index(self._state.log_level):
            return
        # Deprecated at 2026-07-28, where the session itself only sends what the request opted in
        # to; the warning is raised when the coroutine is made, so only that part is silenced.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            sending = self._ctx.session.send_log_message(  # pyright: ignore[reportDeprecated]
                params.level, params.data, params.logger, related_request_id=self._ctx.request_id
            )
        await sending
