"""Telling clients what changed: that their tool, resource (template) or prompt list changed, once per
change, and that a resource they subscribed to was updated.

The catalog (`gateway.catalog.changes`) and the mirror of upstream resources and prompts
(`gateway.mirror.changes`) say that something changed; the watchers here work out which clients
would now get a different list than the one they got, and tell only those (sessions.py sends the
notice in the client's era). The server's lifespan runs them for as long as it serves
(`watching_changes`).

A client's resource subscriptions are passed on to the upstream that owns each resource. A
handshake-era client subscribes with `resources/subscribe` (and stops with
`resources/unsubscribe`, or by going away); a 2026-07-28 client names the URIs in its
`subscriptions/listen` request, for as long as that stream is open. Either way the URI is the
one the client uses, a gateway URI or the upstream's own (`resources.core.uri_owners`), and the update it is told
about carries that same URI. Each upstream resource is subscribed to once for all clients
(upstream/watch.py counts them).

A client whose connection ends (stdio, in process) or whose HTTP session state is evicted
(sessions.py) loses its subscriptions, and the upstream ones nobody else wants go with them.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncGenerator, Hashable
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
from mcp.server.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated, ToolsListChanged

from toolscout.catalog import LIST_NAMES, ListName
from toolscout.config.scopes import Scope, scoped
from toolscout.errors import ToolscoutError
from toolscout.gateway.core import Gateway
from toolscout.gateway.visibility import scope_key, unscoped
from toolscout.modes.base import Surface
from toolscout.modes.client import digest_off_loop
from toolscout.resources.core import Mirror
from toolscout.serve.sessions import ClientSessions, ClientState, ConnectionScope, Context, ListChanged

logger = logging.getLogger(__name__)


# List changes

CHANGE_QUIET_SECONDS = 0.2
"""How long catalog changes are gathered before clients are told about them."""

_NOTICES: dict[str, ListChanged] = {
    "tools": ToolsListChanged(),
    "resources": ResourcesListChanged(),
    "resource_templates": ResourcesListChanged(),  # templates have no notice of their own
    "prompts": PromptsListChanged(),
}

News = dict[int, tuple[ClientState, set[ListChanged]]]
"""The notices due to each client (by the id of its state)."""


def view_key(scope: Scope) -> Hashable:
    """What two clients whose lists are the same share: what their scopes see, and pin."""
    return (scope_key(scope), scope.pinned_tools)


@asynccontextmanager
async def watching_changes(
    gateway: Gateway, surface: Surface, clients: ClientSessions, scope: ConnectionScope, *, tools_change: bool
) -> AsyncGenerator[None]:
    """Tell the clients of `scope` and the HTTP clients of `clients` about list changes while the block runs.

    `tools_change`: whether the surface's tool list can change at all (the five meta-tools never do).
    """
    async with anyio.create_task_group() as tg:
        if tools_change:
            tg.start_soon(watch_catalog, gateway, surface, clients, scope)
        tg.start_soon(watch_mirror, gateway, clients, scope)
        try:
            yield
        finally:
            tg.cancel_scope.cancel()


async def tell_news(clients: ClientSessions, news: News) -> None:
    """Send each client its notices, once each."""
    for state, notices in news.values():
        for notice in notices:
            try:
                await clients.tell(state, notice)
            except Exception as exc:  # a client gone away must not stop the others being told
                logger.debug("could not tell a client %s: %s", notice, exc)


async def watch_catalog(gateway: Gateway, surface: Surface, clients: ClientSessions, scope: ConnectionScope) -> None:
    """Tell each client whose tool list the catalog changed, once per change, until cancelled.

    Only clients that have listed tools are told, and only when what they would now get differs
    from what they got (or were last told about): a server reconnecting with the same tools
    tells no one. Changes that come together (start-up, several servers at once) are told once.
    Each client's list is made under its principal's scope: a change it cannot see tells it nothing.
    """
    async for _ in gateway.catalog.changes.bursts(CHANGE_QUIET_SECONDS):
        news: News = {}
        shared: dict[Hashable, str] = {}  # a list that is the same for every client of a view is listed once
        for state in [scope.client, *clients.http_states()]:
            if "tools" not in state.listed:
                continue
            view = view_key(state.scope)
            current = shared.get(view)
            if current is None:
                with scoped(state.scope):
                    current = await digest_off_loop(await surface.tools(state))
                if not surface.per_client:
                    shared[view] = current
            if state.news("tools", current):
                news[id(state)] = (state, {_NOTICES["tools"]})
        await tell_news(clients, news)


async def watch_mirror(gateway: Gateway, clients: ClientSessions, scope: ConnectionScope) -> None:
    """Tell each client whose resource, template or prompt list changed, once per change, until cancelled.

    As `watch_catalog` for tools. Templates and resources share one notice
    (`notifications/resources/list_changed`), sent once when both changed.
    """
    mirror = gateway.mirror
    async for _ in mirror.changes.bursts(CHANGE_QUIET_SECONDS):
        states = [scope.client, *clients.http_states()]
        news: News = {}
        for name in LIST_NAMES:
            listeners = [state for state in states if name in state.listed]
            digests: dict[Hashable, str | None] = {}  # per scope: each client compares what it sees
            for state in listeners:
                view = scope_key(state.scope)
                if view not in digests:
                    digests[view] = await _mirror_digest(gateway, name, state.scope)
                current = digests[view]
                if current is not None and state.news(name, current):
                    news.setdefault(id(state), (state, set()))[1].add(_NOTICES[name])
        await tell_news(clients, news)


async def _mirror_digest(gateway: Gateway, name: ListName, scope: Scope) -> str | None:
    """The digest of the mirror's list `name` as `scope` sees it (None: it could not be listed)."""
    try:
        with scoped(scope):
            return await digest_off_loop(await gateway.mirror.listed(name))
    except Exception:  # never a reason to stop telling clients about later changes
        logger.exception("could not list %s to compare", name)
        return None


# Resource subscriptions

UNSUBSCRIBE_WAIT = 5.0
"""How long a closing listen stream waits for its resources to be unsubscribed upstream."""
Key = tuple[str, str]
"""(server, the upstream's URI)."""


class ResourceSubscriptions:
    """Which client wants updates of which resource, under which URI."""

    def __init__(self, mirror: Mirror, clients: ClientSessions) -> None:
        self._mirror = mirror
        self._upstreams = mirror.upstreams
        self._clients = clients
        self._wanted: dict[Key, Counter[tuple[ClientState, str]]] = {}

    async def subscribe(self, state: ClientState, uri: str, *, stream: bool = False) -> None:
        """Subscribe `state`'s client to updates of `uri`, for one listen stream (counted) with `stream`, else once."""
        server, original, _ = await self._mirror.route_uri(uri)
        await self._mirror.check_usable("resource", server, original)
        key = (server, original)
        wanted = self._wanted.setdefault(key, Counter())
        if wanted[(state, uri)] and not stream:
            return  # subscribing twice is subscribing once
        first = not wanted
        wanted[(state, uri)] += 1
        if not first:
            return
        try:
            upstream = await self._upstreams.live_upstream(server)
            await upstream.resource_subscriptions.add(original)
        except BaseException:
            self._forget(key, state, uri)
            raise

    async def unsubscribe(self, state: ClientState, uri: str, *, stream: bool = False) -> None:
        """Unsubscribe `state`'s client from updates of `uri` (one listen stream's worth, with `stream`)."""
        # Found among what it subscribed to, not routed again: nothing to look up upstream.
        key = next((key for key, wanted in self._wanted.items() if (state, uri) in wanted), None)
        if key is None:
            return  # never subscribed: unsubscribing is a no-op, as the spec has it
        if stream:
            self._wanted[key][(state, uri)] -= 1
            if self._wanted[key][(state, uri)] > 0:
                return
        await self._release(key, state, uri)

    async def drop(self, state: ClientState) -> None:
        """Every subscription of a client that is gone."""
        for key, wanted in list(self._wanted.items()):
            for holder, uri in [pair for pair in wanted if pair[0] is state]:
                await self._release(key, holder, uri)

    def drop_soon(self, state: ClientState) -> None:
        """Run `drop` in the background, for callers that cannot wait."""
        # Outside any scope: it may be started from another principal's request (an eviction).
        self._upstreams.start_soon(unscoped, self.drop, state, name="drop resource subscriptions")

    async def _release(self, key: Key, state: ClientState, uri: str) -> None:
        if self._forget(key, state, uri):
            try:
                await self._upstreams.upstream(key[0]).resource_subscriptions.remove(key[1])
            except ToolscoutError as exc:
                logger.info("%s: not unsubscribed from %s: %s", key[0], key[1], exc.message)

    def _forget(self, key: Key, state: ClientState, uri: str) -> bool:
        """Forget one client's subscription; True when nobody wants the resource any more."""
        wanted = self._wanted.get(key)
        if wanted is None:
            return False
        wanted.pop((state, uri), None)
        if wanted:
            return False
        del self._wanted[key]
        return True

    async def updated(self, server: str, uri: str) -> None:
        """The upstream says its resource `uri` changed: tell every client that wants it, in its own URI."""
        for state, client_uri in list(self._wanted.get((server, uri), ())):
            try:
                await self._clients.tell(state, ResourceUpdated(uri=client_uri))
            except Exception as exc:  # one client gone away must not keep the others from hearing
                logger.debug("could not tell a client %s changed: %s", client_uri, exc)

    async def listen(
        self, ctx: Context, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """Serve `subscriptions/listen` (2026-07-28): the client's change events, its resources subscribed meanwhile.

        A URI that cannot be subscribed to (unknown, disabled, its server cannot) is left out of
        the honored filter the stream is acknowledged with, which is how the client learns it.
        """
        state = self._clients.state(ctx)
        requested = params.notifications.resource_subscriptions or []
        honored: list[str] = []
        try:
            for uri in requested:
                try:
                    await self.subscribe(state, uri, stream=True)
                    honored.append(uri)
                except ToolscoutError as exc:
                    logger.info("listen: not subscribed to %s: %s", uri, exc.message)
            if requested:
                notifications = params.notifications.model_copy(update={"resource_subscriptions": honored})
                params = params.model_copy(update={"notifications": notifications})
            return await state.listen(ctx, params)
        finally:
            with anyio.move_on_after(UNSUBSCRIBE_WAIT, shield=True):
                for uri in honored:
                    await self.unsubscribe(state, uri, stream=True)
