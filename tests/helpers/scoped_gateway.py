"""Scoped principals for tests: a bearer resolver with fixed scopes, a gateway of two namespaces, and
the face served over HTTP with that resolver (the real `http_app`, uvicorn on a free port)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager

import anyio
import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.requests import Request

from tests.helpers.gateway_client import notes_server
from tests.servers.kitchen import Kitchen
from tests.servers.library import Library
from toolscout.config.models import ModeName
from toolscout.config.scopes import Scope
from toolscout.gateway.core import Gateway
from toolscout.registry.base import SharedClientState
from toolscout.serve.auth import Principal
from toolscout.serve.http import bind, build_server, http_app
from toolscout.serve.http_guards import AllowList
from toolscout.upstream import InProcessUpstream, UpstreamSpec

ALPHA = Scope.of(
    namespace="alpha",
    servers=["books", "kitchen"],
    tools=["!delete_*"],
    # The rest are outside alpha's scope (another namespace's, a server it is not given, a tool its
    # rules hide), name no tool, or repeat one: never shown (twice).
    pinned_tools=[
        "books/add_note",
        "kitchen/get_weather",
        "films/add_note",
        "beta.films/add_prompt",
        "notes/create_note",
        "kitchen/delete_city",
        "kitchen",
        "books/add_note",
    ],
    label="alpha",
)
BETA = Scope.of(namespace="beta", servers=["films"], pinned_tools=["beta.films/add_prompt"], label="beta")
SCOPES = {"alpha-token": ALPHA, "beta-token": BETA}
UNSEEN = {
    "alpha-token": ("films", "beta", "create_note", "delete_city"),
    "beta-token": ("books", "alpha", "kitchen", "get_weather", "create_note"),
}
"""What must never appear in anything a token's holder is shown (names of what its scope does not see)."""


class BearerScopes:
    """A `PrincipalResolver` mapping `Authorization: Bearer <token>` to a fixed scope (no header: anonymous,
    unscoped); an unknown token sees nothing (a scope of no servers)."""

    def __init__(self, scopes: Mapping[str, Scope]) -> None:
        self.scopes = dict(scopes)

    async def resolve(self, request: Request) -> Principal:
        header = request.headers.get("authorization", "")
        if not header:
            return Principal(admin=True)
        token = header.removeprefix("Bearer ").strip()
        scope = self.scopes.get(token, Scope.of(namespace="nobody", servers=[]))
        return Principal(subject=token, scope=scope)


@asynccontextmanager
async def two_namespaces() -> AsyncGenerator[Gateway]:
    """A gateway with two global servers (kitchen, notes) and one server in each of the namespaces
    alpha (`alpha.books`) and beta (`beta.films`), all connected."""
    specs = [
        UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server)),
        UpstreamSpec("notes", InProcessUpstream(notes_server())),
        UpstreamSpec("alpha.books", InProcessUpstream(Library("books").server), namespace="alpha"),
        UpstreamSpec("beta.films", InProcessUpstream(Library("films").server), namespace="beta"),
    ]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        yield gateway


@asynccontextmanager
async def scoped_http(
    gateway: Gateway,
    mode: ModeName,
    scopes: Mapping[str, Scope] = SCOPES,
    *,
    stateless: bool = False,
    shared: SharedClientState | None = None,
) -> AsyncGenerator[str]:
    """`gateway`'s face in `mode` over streamable HTTP, principals decided by `BearerScopes(scopes)`;
    `shared`: the registry replicas share (Redis), as `serve` passes it."""
    server = build_server(gateway, mode, shared=shared)
    allow = AllowList.for_bind("127.0.0.1")
    app = http_app(server, allow=allow, stateless=stateless, principals=BearerScopes(scopes))
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    with bind("127.0.0.1", 0) as sock:  # closed however the block ends
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: web.serve(sockets=[sock]))
            try:
                yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
            finally:
                web.should_exit = True


@asynccontextmanager
async def client_with(url: str, token: str | None, era: str) -> AsyncGenerator[Client]:
    """An SDK client of `era` (`legacy`: 2025-11-25, `auto`: 2026-07-28) sending `token` as its bearer."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=era) as client,
    ):
        yield client
