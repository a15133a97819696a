"""The clients the gateway serves: what it remembers about each one, how it tells one that a list
changed, the streamable HTTP sessions one client cannot use up, and dynamic mode's loaded tools
shared between replicas.

What identifies "a client" depends on the transport and the era:

* stdio and in-process connections: the connection itself. `Server.run` enters the server's
  lifespan once per connection, so the lifespan yields a `ConnectionScope` that owns the state,
  and the state goes away with the connection.
* streamable HTTP at 2024-11-05 … 2025-11-25: the `Mcp-Session-Id` header.
* streamable HTTP at 2026-07-28, and stateless HTTP: the era has no sessions, so the state is
  keyed by the request's principal (decided at the HTTP edge, auth.py) and the client's
  name (`clientInfo`). Without authentication every instance of one client program shares it.

HTTP states live in a bounded LRU (`max_http_clients`); an evicted client starts afresh (and whoever
follows evictions, `follow_evictions`, forgets it too).

Change notifications follow the era: handshake-era clients get `notifications/tools/list_changed`
on the stream of the request that caused it (the POST's response stream on HTTP, which needs no
standalone GET stream); 2026-07-28 clients only get it on a `subscriptions/listen` stream they
opened, so each client state has its own `SubscriptionBus` that its listen streams read.

The SDK's `StreamableHTTPSessionManager` has one global limit on sessions (`max_sessions`, refusing
with 503 until sessions expire, by default after 30 idle minutes), so one client opening sessions in
a loop would lock every other client out. `BoundedSessionManager` keeps the SDK's manager and changes
only the admission of a new session (`_admit_session`, called under the manager's creation lock):

0. a client address (`peer`) opens sessions at most `opening_rate` a second (after a burst of
   `max_per_client`); the rest are refused from their headers alone (`PeerAdmission`), after a
   second's wait, so a flood costs the event loop a little per request and few requests a second;
1. a client address with `max_per_client` sessions open gets its own least recently used
   idle session closed for the new one, so a flood from one address holds that many at most;
2. at `max_sessions` overall, the least recently used idle session of anyone is closed;
3. only when every session in the way has a request in flight is the request refused (429 for the
   one client, 503 for the whole gateway).

Every refusal has a body saying what to do.

"Idle" and "least recently used" are the SDK's own idle clock: a session's `idle_scope.deadline` is
infinite while a request of it is in flight (an open GET stream included), else the moment its idle
time runs out, so the earliest deadline is the session idle longest. Closing one is what the idle
expiry does (cancelling that scope), only sooner; its ID answers 404 from that moment, and the spec
has the client open a new session on a 404. The client address comes from `PeerAdmission`, the ASGI
middleware in front of the manager, through a context variable (the admission runs in the request's
own task).

Behind a balancer without stickiness, replicas serve stateless HTTP: a client's `load_tools` may land
on one replica and its next `tools/list` on another. So for a client keyed by its principal and
name (no `Mcp-Session-Id`: `ClientSessions.http_key`), `SharedLoads` reads what it loaded in dynamic
mode from the registry before each `tools/list` and `tools/call`, and writes it back when a call
changed it. Connections (stdio, in process) and HTTP sessions keep theirs in memory. While the
registry cannot be reached, the replica's own memory answers (said once until it is back).
"""

from __future__ import annotations

import json
import logging
import math
import secrets
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar, get_args

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as ASGIScope

from toolscout.config.http import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_SESSIONS_PER_CLIENT,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    DEFAULT_SESSION_OPENING_RATE,
    HttpServeConfig,
)
from toolscout.config.scopes import UNSCOPED, Scope
from toolscout.errors import RegistryUnavailable
from toolscout.registry.base import SharedClientState
from toolscout.serve.auth import peer_of, principal_of
from toolscout.upstream.calls import SamplingResult

logger = logging.getLogger(__name__)

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
    """Digest of each list this client fetched: "tools", or one of `catalog.LIST_NAMES`."""
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
        """The relay back to the client of this request (upstream/calls.py)."""
        return SessionRelay(ctx, state, self.describe(ctx))


class SessionRelay:
    """The `Relay` of one `tools/call` on the gateway's MCP server: everything goes to that request's client.

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


# Streamable HTTP sessions


@dataclass(frozen=True)
class SessionLimits:
    """How many stateful sessions the gateway keeps, and for how long an idle one."""

    max_sessions: int = DEFAULT_MAX_SESSIONS
    max_per_client: int = DEFAULT_MAX_SESSIONS_PER_CLIENT
    idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT
    opening_rate: float = DEFAULT_SESSION_OPENING_RATE
    """New sessions a second one client address may open, after a burst of `max_per_client`."""

    @classmethod
    def of(cls, config: HttpServeConfig) -> SessionLimits:
        """The limits a config sets."""
        return cls(
            config.max_sessions,
            config.max_sessions_per_client,
            config.session_idle_timeout,
            config.session_opening_rate,
        )


@dataclass
class _Admission:
    """One request on its way in: who sent it, and why it was refused a session if it was."""

    peer: str
    refusal: tuple[int, str] | None = None


_admission: ContextVar[_Admission | None] = ContextVar("toolscout_http_admission", default=None)

REFUSAL_DELAY = 1.0
"""Seconds before a client opening sessions too fast is answered 429 (its Retry-After)."""
REFUSALS_LOGGED_EVERY = 60.0
"""Seconds between two log lines about one client address's refused sessions."""


class _OursAlreadyLogged(logging.Filter):
    """Drops the SDK's own line about a refused session when the refusal is ours: ours says why, and is
    logged at most once a minute per client (the SDK's would be one line per refused request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        admission = _admission.get()
        return admission is None or admission.refusal is None


class BoundedSessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager with a per-client bound and eviction of idle sessions (see the module)."""

    def __init__(
        self,
        app: Server[Any],
        limits: SessionLimits,
        *,
        stateless: bool = False,
        security_settings: TransportSecuritySettings | None = None,
    ) -> None:
        super().__init__(
            app,
            stateless=stateless,
            security_settings=security_settings,
            session_idle_timeout=limits.idle_timeout,
            max_sessions=limits.max_sessions,
        )
        self.limits = limits
        sdk_log = logging.getLogger(StreamableHTTPSessionManager.__module__)
        if not any(isinstance(f, _OursAlreadyLogged) for f in sdk_log.filters):
            sdk_log.addFilter(_OursAlreadyLogged())
        self._by_peer: dict[str, dict[str, None]] = {}
        self._peer_of: dict[str, str] = {}
        self._warned: set[str] = set()
        self._last_logged: dict[str, float] = {}
        self._openings: dict[str, tuple[float, float]] = {}
        """Per client address, a token bucket of session openings: (tokens, when last counted)."""

    def open_sessions(self, peer: str | None = None) -> int:
        """How many sessions are open (of one client address)."""
        if peer is None:
            return len(self._server_instances)
        return len(self._by_peer.get(peer, ()))

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        admission = _admission.get()
        peer = admission.peer if admission is not None else "unknown"
        if not self._may_open(peer):
            return self._refuse(admission, 429, self._too_fast(peer))
        own = self._by_peer.get(peer, {})
        if len(own) >= self.limits.max_per_client:
            if peer not in self._warned:
                self._warned.add(peer)
                logger.warning(
                    "client %s has %d HTTP sessions open (http.maxSessionsPerClient); "
                    "its least recently used idle ones are closed to open new ones",
                    peer,
                    len(own),
                )
            if not self._evict_idlest(own):
                return self._refuse(
                    admission,
                    429,
                    f"This client ({peer}) already has {len(own)} MCP sessions open, each with a request in "
                    "progress. Close sessions you no longer use (HTTP DELETE with their Mcp-Session-Id) or "
                    "wait for a request to finish, then try again.",
                )
        if len(self._server_instances) >= self.limits.max_sessions and not self._evict_idlest(self._server_instances):
            return self._refuse(
                admission,
                503,
                f"The gateway has {len(self._server_instances)} MCP sessions open (http.maxSessions), each with "
                "a request in progress. Try again when one finishes.",
            )
        transport = super()._admit_session(requestor)
        if transport is not None and transport.mcp_session_id is not None:
            self._by_peer.setdefault(peer, {})[transport.mcp_session_id] = None
            self._peer_of[transport.mcp_session_id] = peer
        return transport

    def _tokens(self, peer: str, now: float) -> float:
        burst = float(self.limits.max_per_client)
        tokens, then = self._openings.get(peer, (burst, now))
        return min(burst, tokens + (now - then) * self.limits.opening_rate)

    def _may_open(self, peer: str) -> bool:
        """Whether `peer` may open a session now (and if so, counted): a burst of `max_per_client`,
        then `opening_rate` a second."""
        now = time.monotonic()
        tokens = self._tokens(peer, now)
        if tokens < 1:
            self._openings[peer] = (tokens, now)
            return False
        self._openings[peer] = (tokens - 1, now)
        if len(self._openings) > 4 * self.limits.max_sessions:  # forget addresses whose bucket refilled
            refill = self.limits.max_per_client / self.limits.opening_rate
            self._openings = {p: (t, w) for p, (t, w) in self._openings.items() if now - w < refill}
        return True

    def refuse_early(self, scope: ASGIScope, admission: _Admission) -> bool:
        """Whether a request that would open a session comes from an address out of openings, decided
        from its headers alone: then it is refused (`admission.refusal`) before its body is read or the
        SDK sees it, for a fraction of what even the SDK's refusal costs. `_admit_session` still counts."""
        if self.stateless or scope["method"] != "POST":
            return False
        for name, value in scope["headers"]:
            if name == b"mcp-session-id":
                return False
            if name == b"mcp-protocol-version" and value.decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS:
                return False  # 2026-07-28: no sessions
        if self._tokens(admission.peer, time.monotonic()) >= 1:
            return False
        self._refuse(admission, 429, self._too_fast(admission.peer))
        return True

    def _too_fast(self, peer: str) -> str:
        return (
            f"This client ({peer}) opens MCP sessions faster than {self.limits.opening_rate:g} a second "
            "(http.sessionOpeningRate). Keep using the session you have (its Mcp-Session-Id), or wait a "
            "second and try again."
        )

    def _refuse(self, admission: _Admission | None, status: int, message: str) -> None:
        # Logged once a minute per client address: a client refused in a loop must not flood the log.
        peer = admission.peer if admission is not None else "unknown"
        now = time.monotonic()
        if now - self._last_logged.get(peer, -math.inf) >= REFUSALS_LOGGED_EVERY:
            self._last_logged[peer] = now
            if len(self._last_logged) > 4 * self.limits.max_sessions:
                self._last_logged = {p: t for p, t in self._last_logged.items() if now - t < REFUSALS_LOGGED_EVERY}
            logger.warning("refused a new HTTP session (logged once a minute per client): %s", message)
        if admission is not None:
            admission.refusal = (status, message)

    def _evict_idlest(self, session_ids: Iterable[str]) -> bool:
        """Close the session among `session_ids` idle the longest; False if every one is busy."""
        chosen: tuple[str, StreamableHTTPServerTransport] | None = None
        earliest = math.inf
        for session_id in session_ids:
            transport = self._server_instances.get(session_id)
            scope = transport.idle_scope if transport is not None else None
            if transport is None or scope is None:  # not started yet: its opening request is being served
                continue
            deadline = -math.inf if scope.cancel_called else scope.deadline  # already on its way out: first
            if deadline < earliest:
                chosen, earliest = (session_id, transport), deadline
        if chosen is None:
            return False
        session_id, transport = chosen
        # Forgotten at once (its ID answers 404 from here, and the room is free for the caller);
        # cancelling its idle scope ends its server task as the idle expiry would, which discards it.
        self._server_instances.pop(session_id, None)
        self._session_owners.pop(session_id, None)
        self._forget(session_id)
        assert transport.idle_scope is not None
        transport.idle_scope.cancel()
        logger.debug("closed idle HTTP session %s to make room", session_id)
        return True

    def _forget(self, session_id: str) -> None:
        peer = self._peer_of.pop(session_id, None)
        if peer is None:
            return
        own = self._by_peer.get(peer)
        if own is not None:
            own.pop(session_id, None)
            if not own:
                del self._by_peer[peer]
                self._warned.discard(peer)

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        self._forget(session_id)
        await super()._discard_session(session_id, transport)


class PeerAdmission:
    """ASGI middleware telling `BoundedSessionManager` who a request is from, and turning its refusal
    into a response with the status and message it chose (the SDK's own is a bare 503)."""

    def __init__(self, app: ASGIApp, manager: BoundedSessionManager) -> None:
        self.app = app
        self.manager = manager

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        admission = _Admission(peer_of(scope))
        if self.manager.refuse_early(scope, admission):
            # Answered after a second (its Retry-After), not at once: a client opening sessions in a
            # loop, however many at a time, is then held to that many requests a second, where an
            # instant answer would let it keep the event loop busy with refusals instead.
            await anyio.sleep(REFUSAL_DELAY)
            await _refusal_response(admission, send)
            return
        token = _admission.set(admission)
        replaced = False

        async def sending(message: Message) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and admission.refusal is not None:
                replaced = True
                await _refusal_response(admission, send)
                return
            if replaced:  # the SDK's own refusal, already answered with ours
                return
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            _admission.reset(token)


async def _refusal_response(admission: _Admission, send: Send) -> None:
    assert admission.refusal is not None
    status, text = admission.refusal
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": text}}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(round(REFUSAL_DELAY)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


# Dynamic mode's loaded tools, shared between replicas


class SharedLoads:
    """Pulls and pushes the loaded tools of sessionless HTTP clients through `store`."""

    def __init__(self, store: SharedClientState) -> None:
        self.store = store
        self._down = False

    @staticmethod
    def client_of(ctx: Context) -> str | None:
        """The shared key of the client behind `ctx`, or None when its state is not shared."""
        if ctx.request is None:
            return None
        key = ClientSessions.http_key(ctx)
        return None if key[0] == "session" else repr(key)

    async def pull(self, ctx: Context, state: ClientState) -> tuple[tuple[str, str], ...]:
        """Make `state.loaded` what the registry has for this client; what it is now (to `push` after)."""
        client = self.client_of(ctx)
        if client is not None:
            try:
                loaded = await self.store.loaded_tools(client)
                self._up()
            except RegistryUnavailable as exc:
                self._warn(exc)
            else:
                if loaded is not None:
                    state.loaded = dict.fromkeys(loaded)
        return tuple(state.loaded)

    async def push(self, ctx: Context, state: ClientState, before: tuple[tuple[str, str], ...]) -> None:
        """Write `state.loaded` back if the request changed it."""
        client = self.client_of(ctx)
        if client is None or tuple(state.loaded) == before:
            return
        try:
            await self.store.set_loaded_tools(client, list(state.loaded))
            self._up()
        except RegistryUnavailable as exc:
            self._warn(exc)

    def _warn(self, exc: RegistryUnavailable) -> None:
        if not self._down:
            self._down = True
            logger.warning("loaded tools kept on this replica alone meanwhile: %s", exc.message)

    def _up(self) -> None:
        if self._down:
            self._down = False
            logger.info("loaded tools shared through the registry again")
