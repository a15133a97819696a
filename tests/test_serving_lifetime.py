"""The gateway's MCP server, which follows the gateway only while it serves, and the HTTP edge
where a request's principal is decided.

Real parts: an in-process upstream with resources the gateway subscribes to, the gateway's server
served in process and over streamable HTTP on a real socket (`serve_http`), the SDK's client.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPDeprecationWarning
from starlette.requests import Request

from tests.helpers.gateway_client import notes_server
from tests.servers.kitchen import Kitchen
from toolscout.config.models import ModeName
from toolscout.gateway.core import Gateway
from toolscout.resources.core import gateway_uri
from toolscout.serve.auth import Principal, PrincipalResolver
from toolscout.serve.http import bind, http_app, serve_http
from toolscout.serve.http_guards import AllowList
from toolscout.serve.server import build_server
from toolscout.serve.sessions import ClientSessions
from toolscout.upstream import InProcessUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio

URIS = ["note://1", "note://2"]


class Shelf:
    """An upstream with resources the gateway subscribes to (handshake era), and a way to say one changed."""

    def __init__(self) -> None:
        self.subscribed: set[str] = set()
        self._subscriptions_changed = anyio.Event()
        self._sessions: dict[str, ServerSession] = {}
        """The session each URI was subscribed on, to send its updates on."""
        self.server: Server[Any] = Server(
            "shelf",
            on_list_resources=self._list,
            on_read_resource=self._read,
            on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe,
        )

    async def _list(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(name=uri, uri=uri) for uri in URIS])

    async def _read(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, text="on the shelf")])

    async def _subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        self._sessions[params.uri] = ctx.session
        self.subscribed.add(params.uri)
        self._changed()
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self.subscribed.discard(params.uri)
        self._changed()
        return types.EmptyResult()

    def _changed(self) -> None:
        self._subscriptions_changed.set()
        self._subscriptions_changed = anyio.Event()

    async def wait_subscribed(self, uris: set[str]) -> None:
        """Until what the gateway is subscribed to is `uris`."""
        with anyio.fail_after(10):
            while self.subscribed != uris:
                await self._subscriptions_changed.wait()

    async def touch(self, uri: str) -> None:
        """Say that resource `uri` changed, to whoever subscribed to it."""
        await self._sessions[uri].send_resource_updated(uri)


class Updates:
    """The URIs of the `notifications/resources/updated` a client gets, in order."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self._came = anyio.Event()

    async def message_handler(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(message.params.uri)
            self._came.set()
            self._came = anyio.Event()

    async def wait_for(self, uri: str) -> None:
        with anyio.fail_after(10):
            while uri not in self.uris:
                await self._came.wait()


@asynccontextmanager
async def served_over_http(
    gateway: Gateway,
    *,
    mode: ModeName = "discovery",
    stateless: bool = False,
    principals: PrincipalResolver | None = None,
) -> AsyncGenerator[str]:
    """A server newly built on `gateway`, served over streamable HTTP until the block ends (and serving is over)."""
    sock = bind("127.0.0.1", 0)
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: serve_http(
                gateway,
                sock,
                host="127.0.0.1",
                log_level=None,
                mode=mode,
                stateless=stateless,
                stop=stop,
                principals=principals,
            )
        )
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        finally:
            stop.set()  # the task group waits for serving to end, lifespan included


@pytest.mark.parametrize("transport", ["in_process", "http"])
async def test_servers_served_one_after_another_on_one_gateway_leave_nothing_behind(transport: str) -> None:
    """Each client is told of an update once, and once a server stops serving, the upstream
    subscriptions its clients held are let go (over HTTP too, where clients have no connection of
    their own to end them)."""
    shelf = Shelf()
    async with Gateway([UpstreamSpec("shelf", InProcessUpstream(shelf.server), protocol="legacy")]) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        for _ in range(2):
            updates = Updates()
            async with (
                served_over_http(gateway) if transport == "http" else _in_process(gateway) as target,
                Client(target, mode="legacy", message_handler=updates.message_handler) as client,
            ):
                with warnings.catch_warnings():
                    # Deprecated at 2026-07-28 (listen streams instead); this client speaks 2025-11-25.
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    for uri in URIS:
                        await client.subscribe_resource(gateway_uri("shelf", uri))  # pyright: ignore[reportDeprecated]
                await shelf.wait_subscribed(set(URIS))
                await shelf.touch(URIS[0])
                await shelf.touch(URIS[1])  # told after the first: once it came, so did every copy of the first
                await updates.wait_for(gateway_uri("shelf", URIS[1]))
                assert updates.uris == [gateway_uri("shelf", uri) for uri in URIS]
            await shelf.wait_subscribed(set())


@asynccontextmanager
async def _in_process(gateway: Gateway) -> AsyncGenerator[Server[Any]]:
    yield build_server(gateway)


class HeaderPrincipals:
    """A resolver that takes the principal a trusted proxy put in `x-user` (bearer tokens would do the same)."""

    async def resolve(self, request: Request) -> Principal:
        return Principal(subject=request.headers.get("x-user"))


async def _loaded(url: str, user: str, load: bool) -> list[str]:
    """The tools `user`'s client sees in dynamic mode over stateless HTTP, after loading one if `load`."""
    async with (
        httpx2.AsyncClient(headers={"x-user": user}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        if load:
            await client.call_tool("load_tools", {"tools": [{"server": "kitchen", "tool": "get_weather"}]})
        return [t.name for t in (await client.list_tools()).tools]


@pytest.mark.parametrize("resolver", ["anonymous", "by header"])
async def test_the_principal_the_http_edge_decides_tells_clients_apart(resolver: str) -> None:
    """Stateless HTTP has no sessions: a client is its principal and its program's name. Anonymous
    (today), two users of one client program share what they loaded; told apart by a resolver, not."""
    specs = [
        UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server)),
        UpstreamSpec("notes", InProcessUpstream(notes_server())),
    ]
    principals = HeaderPrincipals() if resolver == "by header" else None
    async with Gateway(specs) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        async with served_over_http(gateway, mode="dynamic", stateless=True, principals=principals) as url:
            assert "kitchen__get_weather" in await _loaded(url, "alice", load=True)
            bob_sees_it = "kitchen__get_weather" in await _loaded(url, "bob", load=False)
            assert bob_sees_it == (resolver == "anonymous")


async def test_a_client_forgotten_to_make_room_lets_go_of_its_subscriptions_whatever_else_shares_its_sessions() -> None:
    """Two servers built on one gateway and one set of client sessions: the HTTP client the one
    serving forgets to make room loses its upstream subscriptions (building the other one must not
    take over who is told of evictions)."""
    shelf = Shelf()
    sessions = ClientSessions(max_http_clients=1)
    async with Gateway([UpstreamSpec("shelf", InProcessUpstream(shelf.server), protocol="legacy")]) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        serving = build_server(gateway, sessions=sessions)
        build_server(gateway, sessions=sessions)  # built, never served
        sock = bind("127.0.0.1", 0)
        app = http_app(serving, allow=AllowList.for_bind("127.0.0.1"))
        web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: web.serve(sockets=[sock]))
            async with Client(url, mode="legacy") as first:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", MCPDeprecationWarning)  # as above: a 2025-11-25 client
                    await first.subscribe_resource(gateway_uri("shelf", URIS[0]))  # pyright: ignore[reportDeprecated]
                await shelf.wait_subscribed({URIS[0]})
                async with Client(url, mode="legacy") as second:
                    await second.list_resources()  # the only room for a client: the first one is forgotten
                    await shelf.wait_subscribed(set())
            web.should_exit = True
