"""What runs beside one upstream's live connection: the resources the gateway is subscribed to on it,
kept across reconnects, and the watch that keeps its tools and its status true.

Clients subscribe through the gateway (serve/server.py, serve/notifications.py); each upstream
resource is subscribed to once, however many clients want it (a count per URI), and dropped
upstream when the last one goes. How depends on the upstream's era:

* 2024-11-05 … 2025-11-25: `resources/subscribe` and `resources/unsubscribe`, sent again after
  every reconnect; `notifications/resources/updated` arrives on the session.
* 2026-07-28: one `subscriptions/listen` stream with every watched URI, reopened when the set
  changes (the era has no other way to subscribe). Updates are taken from that stream (the SDK
  also hands its frames to the session's message handler, which leaves them alone: a stream
  being replaced would otherwise tell them twice).

An update that arrives while a stream is being reopened is lost: the MCP spec promises no replay
either, and a client that cares reads the resource again after it subscribes.

An endpoint may come and go: a server registered at run time often answers before it has loaded its
tools, and may die without a word. `EndpointWatch` lists tools again while the server lists none
(`relist_empty`), and pings the server every `ping_seconds` so that one that died
is seen to be gone, and connected again with backoff, without waiting for a call to fail on it.

A streamable HTTP server that dies says nothing: the SDK's client gives its event stream up after two
attempts, silently, and the connection would look live until the next call. A ping that finds the
transport gone, or goes unanswered for `PING_TIMEOUT` seconds, ends the connection; an answer, even
a JSON-RPC error (a server that does not implement ping), means the server is there. (At 2026-07-28,
which has no ping and no session, a request to a server that died fails without ending anything:
the ping is what tells.)
"""

from __future__ import annotations

import logging
import warnings
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.abc
import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolscout.errors import InvalidArguments, ToolscoutError, UpstreamRefused
from toolscout.upstream.calls import ServerTools
from toolscout.upstream.spec import UpstreamSpec

if TYPE_CHECKING:
    # The SDK is imported where it is used, on a live connection (connection.py says why).
    from mcp import Client

    Requester = Callable[[str, Callable[[Client], Awaitable[types.EmptyResult]]], Awaitable[types.EmptyResult]]
    """`Upstream.request`: runs one request on the kept session, failing as calls do."""

logger = logging.getLogger(__name__)


def _modern(client: Client) -> bool:
    return client.protocol_version in MODERN_PROTOCOL_VERSIONS


async def _subscribe(client: Client, uri: str) -> types.EmptyResult:
    from mcp.shared.exceptions import MCPDeprecationWarning

    with warnings.catch_warnings():  # deprecated at 2026-07-28 only, and only used before it
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return await client.subscribe_resource(uri)  # pyright: ignore[reportDeprecated]


async def _unsubscribe(client: Client, uri: str) -> types.EmptyResult:
    from mcp.shared.exceptions import MCPDeprecationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return await client.unsubscribe_resource(uri)  # pyright: ignore[reportDeprecated]


class ResourceWatch:
    """The upstream URIs subscribed to on one server, with how many gateway subscribers each has."""

    def __init__(self, server: str, request: Requester, updated: Callable[[str], Awaitable[None]]) -> None:
        self._server = server
        self._request = request
        self._updated = updated
        self._counts: Counter[str] = Counter()
        self._changed = anyio.Event()
        self._client: Client | None = None
        self._listening: frozenset[str] = frozenset()
        """The URIs of the 2026-07-28 listen stream the upstream has acknowledged."""
        self._acknowledged = anyio.Event()

    @property
    def uris(self) -> list[str]:
        """The URIs subscribed to."""
        return sorted(self._counts)

    def __bool__(self) -> bool:
        return bool(self._counts)

    def adopt(self, previous: ResourceWatch) -> None:
        """Take on the subscribers of `previous` (its server restarted with a new configuration): they are
        subscribed upstream on this watch's first connection, as after any reconnect."""
        self._counts.update(previous._counts)

    async def add(self, uri: str) -> None:
        """One more subscriber of `uri`; the first one subscribes upstream (its failure is raised)."""
        client = self._client
        if client is not None:
            capabilities = client.server_capabilities.resources
            if capabilities is None or not capabilities.subscribe:
                raise InvalidArguments(
                    f"Server {self._server!r} does not offer resource subscriptions; read {uri!r} again instead.",
                    server=self._server,
                    uri=uri,
                )
        self._counts[uri] += 1
        if self._counts[uri] > 1:
            return
        try:
            if client is not None and not _modern(client):
                await self._request(f"resources/subscribe {uri}", lambda c: _subscribe(c, uri))
            elif client is not None:
                self._changed.set()
                await self._request(f"subscriptions/listen {uri}", lambda _: self._until_listening(uri))
        except BaseException:
            self._drop(uri)
            self._changed.set()
            raise

    async def _until_listening(self, uri: str) -> types.EmptyResult:
        # Subscribed once the upstream acknowledged a stream with it: an update right after is not lost.
        while uri not in self._listening:
            acknowledged = self._acknowledged
            await acknowledged.wait()
            if uri not in self._listening:
                raise InvalidArguments(
                    f"Server {self._server!r} did not take the subscription to {uri!r}.", server=self._server, uri=uri
                )
        return types.EmptyResult()

    async def remove(self, uri: str) -> None:
        """One subscriber of `uri` fewer; the last one unsubscribes upstream (a failure is only logged)."""
        if self._counts[uri] > 1:
            self._counts[uri] -= 1
            return
        self._drop(uri)
        client = self._client
        self._changed.set()
        if client is None or _modern(client):
            return
        try:
            await self._request(f"resources/unsubscribe {uri}", lambda c: _unsubscribe(c, uri))
        except Exception as exc:  # the client is unsubscribed either way; a stray update is harmless
            logger.info("%s: resources/unsubscribe %s failed: %s", self._server, uri, exc)

    def _drop(self, uri: str) -> None:
        self._counts.pop(uri, None)

    async def keep(self, client: Client) -> None:
        """Hold the subscriptions on `client`'s connection until cancelled (run in the connection's task group)."""
        self._client = client
        try:
            if _modern(client):
                await self._keep_listening(client)
            else:
                for uri in self.uris:  # again after a reconnect
                    try:
                        await _subscribe(client, uri)
                    except Exception as exc:
                        logger.warning("%s: could not subscribe again to %s: %s", self._server, uri, exc)
                await anyio.sleep_forever()
        finally:
            self._client = None
            self._listening = frozenset()

    async def _keep_listening(self, client: Client) -> None:
        # The next stream is acknowledged before the last one closes, so no update falls between the
        # two (one may come twice meanwhile, which only means one more read for a client).
        async with anyio.create_task_group() as tg:
            current: anyio.CancelScope | None = None
            while True:
                self._changed = anyio.Event()
                uris = self.uris
                following: anyio.CancelScope | None = await tg.start(self._listen, client, uris) if uris else None
                if current is not None:
                    current.cancel()
                current = following
                if not uris:
                    self._listening = frozenset()
                await self._changed.wait()

    async def _listen(
        self, client: Client, uris: list[str], *, task_status: anyio.abc.TaskStatus[anyio.CancelScope | None]
    ) -> None:
        from mcp.shared.subscriptions import ResourceUpdated

        started = False
        with anyio.CancelScope() as scope:
            try:
                async with client.listen(resource_subscriptions=uris) as subscription:
                    self._listening = frozenset(subscription.honored.resource_subscriptions or ())
                    self._acknowledged.set()
                    self._acknowledged = anyio.Event()
                    task_status.started(scope)
                    started = True
                    async for event in subscription:
                        if isinstance(event, ResourceUpdated):
                            await self._updated(event.uri)
            except Exception as exc:  # without it no updates arrive, but the server itself still works
                logger.warning("%s: resource subscriptions stopped: %s", self._server, exc)
        if not started:
            self._acknowledged.set()  # a subscriber waiting for it learns it failed
            self._acknowledged = anyio.Event()
            task_status.started(None)


PING_TIMEOUT = 10.0
"""How long a ping may go unanswered before the connection is taken for gone."""


def _ping_for(client: Client) -> Callable[[Client], Awaitable[Any]]:
    """Return a ping in `client`'s era: `ping` in the handshake era; at 2026-07-28, which has none, the first
    page of `tools/list` (every server answers it; the SDK's response cache is off for upstreams)."""
    if _modern(client):
        return lambda live: live.list_tools()
    return lambda live: live.send_ping()  # pyright: ignore[reportDeprecated] (the handshake era's own)


class SendsRequests(Protocol):
    """The upstream's one guarded send for requests other than tool calls (`Upstream.request`)."""

    def __call__(
        self, what: str, operation: Callable[[Client], Awaitable[Any]], *, within: float | None = None, use: bool = True
    ) -> Awaitable[Any]: ...


class EndpointWatch:
    """What runs beside one upstream's live connection to keep its tools and its status true."""

    def __init__(
        self,
        spec: UpstreamSpec,
        tools: ServerTools,
        request: SendsRequests,
        refresh: Callable[[], None],
        gone: Callable[[], None],
    ) -> None:
        self._spec = spec
        self._tools = tools
        self._request = request
        self._refresh = refresh
        """Asks the connection to list tools again."""
        self._gone = gone
        """Gives the connection up: it is connected again, with backoff."""

    async def watch(self, client: Client, listed: Sequence[types.Tool]) -> None:
        """Watch the connection of `client`, whose first tool list was `listed` (cancelled with it)."""
        async with anyio.create_task_group() as tg:
            if not listed and self._spec.relist_empty and client.server_capabilities.tools is not None:
                tg.start_soon(self._tools.relist_while_empty, self._refresh)
            if self._spec.ping_seconds is not None:
                tg.start_soon(self._ping_every, self._spec.ping_seconds, client)

    async def _ping_every(self, seconds: float, client: Client) -> None:
        while True:
            await anyio.sleep(seconds)
            try:
                await self._request("ping", _ping_for(client), within=PING_TIMEOUT, use=False)
            except UpstreamRefused:
                continue  # it answered: it is there
            except ToolscoutError as exc:
                logger.info("%s: no answer to a ping (%s); connecting again", self._spec.name, exc.message)
                self._gone()
                return
