"""Per-client state, and telling one client that its tool list changed, in both protocol eras.

What identifies "a client" depends on the transport and the era:

* stdio and in-process connections: the connection itself. `Server.run` enters the server's
  lifespan once per connection, so the lifespan yields a `ConnectionScope` that owns the state,
  and the state goes away with the connection.
* streamable HTTP at 2024-11-05 … 2025-11-25: the `Mcp-Session-Id` header.
* streamable HTTP at 2026-07-28, and stateless HTTP: the era has no sessions, so the state is
  keyed by the authenticated principal and the client's name (`clientInfo`). Without
  authentication every instance of one client program shares it.

HTTP states live in a bounded LRU (`max_http_clients`); an evicted client starts afresh.

Change notifications follow the era: handshake-era clients get `notifications/tools/list_changed`
on the stream of the request that caused it (the POST's response stream on HTTP, which needs no
standalone GET stream); 2026-07-28 clients only get it on a `subscriptions/listen` stream they
opened, so each client state has its own `SubscriptionBus` that its listen streams read.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncGenerator, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.request_state import authenticated_principal
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

DEFAULT_MAX_HTTP_CLIENTS = 1000


@dataclass(eq=False)
class ClientState:
    """What the gateway remembers about one client."""

    loaded: dict[tuple[str, str], None] = field(default_factory=dict[tuple[str, str], None])
    """Tools this client loaded in dynamic mode, as `(server, tool)`, in loading order."""
    bus: InMemorySubscriptionBus = field(default_factory=InMemorySubscriptionBus)
    """Events for this client's `subscriptions/listen` streams (2026-07-28 era)."""
    _listen: ListenHandler | None = None
    _tools_changed: bool = False

    @property
    def listen(self) -> ListenHandler:
        """The handler serving this client's listen streams."""
        if self._listen is None:
            self._listen = ListenHandler(self.bus, max_subscriptions=16)
        return self._listen

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


@asynccontextmanager
async def connection_scope(_: Any) -> AsyncGenerator[ConnectionScope]:
    """The low-level server's lifespan: a fresh `ConnectionScope` each time it is entered."""
    yield ConnectionScope()


class ClientSessions:
    """Finds the `ClientState` of the client behind a request, and notifies it of changes."""

    def __init__(self, *, max_http_clients: int = DEFAULT_MAX_HTTP_CLIENTS) -> None:
        self.max_http_clients = max_http_clients
        self._http: OrderedDict[Hashable, ClientState] = OrderedDict()

    def state(self, ctx: Context) -> ClientState:
        """The state of the client that sent this request, created on first use."""
        if ctx.request is None:  # stdio or in process: the connection is the client
            return ctx.lifespan_context.client
        key = self._http_key(ctx)
        state = self._http.get(key)
        if state is None:
            state = self._http[key] = ClientState()
            while len(self._http) > self.max_http_clients:
                self._http.popitem(last=False)
        else:
            self._http.move_to_end(key)
        return state

    @staticmethod
    def _http_key(ctx: Context) -> Hashable:
        headers = getattr(ctx.request, "headers", None)
        session_id = headers.get("mcp-session-id") if headers is not None else None
        if session_id:
            return ("session", session_id)
        params = ctx.session.client_params
        client = params.client_info.name if params is not None else None
        return ("client", authenticated_principal(ctx), client)

    async def announce(self, ctx: Context, state: ClientState) -> None:
        """Tell the client whose request this is that its tool list changed, if it did."""
        if not state.take_tools_changed():
            return
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await state.bus.publish(ToolsListChanged())
        else:
            await ctx.session.send_notification(types.ToolListChangedNotification(), related_request_id=ctx.request_id)

    async def listen(
        self, ctx: Context, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """`subscriptions/listen`: a stream of this client's own change events."""
        return await self.state(ctx).listen(ctx, params)
