"""Clients' resource subscriptions, passed on to the upstream that owns each resource.

A handshake-era client subscribes with `resources/subscribe` (and stops with
`resources/unsubscribe`, or by going away); a 2026-07-28 client names the URIs in its
`subscriptions/listen` request, for as long as that stream is open. Either way the URI is the
one the client uses, a gateway URI or the upstream's own (`resources.core.uri_owners`), and the
update it is told about carries that same URI. Each upstream resource is subscribed to once for all clients
(upstream/watch.py counts them).

A client whose connection ends (stdio, in process) or whose HTTP session state is evicted
(serve/sessions.py) loses its subscriptions, and the upstream ones nobody else wants go with them.
"""

from __future__ import annotations

import logging
from collections import Counter

import anyio
import mcp_types as types
from mcp.server.subscriptions import ResourceUpdated

from toolscout.errors import ToolscoutError
from toolscout.gateway.visibility import unscoped
from toolscout.resources.core import Mirror
from toolscout.serve.sessions import ClientSessions, ClientState, Context

logger = logging.getLogger(__name__)

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
        """`state`'s client wants updates of `uri`. `stream`: for one listen stream (counted), else once."""
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
        """`state`'s client no longer wants updates of `uri` (one listen stream's worth, with `stream`)."""
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
        """`drop`, in the background (for callers that cannot wait)."""
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
        """`subscriptions/listen` (2026-07-28): the client's change events, its resources subscribed meanwhile.

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
