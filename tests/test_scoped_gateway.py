"""Below the face, under `scoped(...)`: servers by the namespace prefix rule, search within a scope
(unaffected by tools outside it), the per-scope index cache, and a property: for random scopes and
catalogs, nothing outside a scope is ever listed, found or executable.

Real gateways over in-process servers (`toolscout.demo.catalog_server.build_server`).
"""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolscout.config.models import HttpServerConfig
from toolscout.config.scopes import Scope, scoped
from toolscout.demo.catalog_server import build_server
from toolscout.errors import NotFound
from toolscout.gateway.core import Gateway
from toolscout.gateway.visibility import MAX_SCOPES
from toolscout.search import BM25Backend, make_backend
from toolscout.upstream import InProcessUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio

WORDS = ["convert", "weather", "note", "invoice", "calendar", "delete", "search", "upload", "chart", "email"]


def tool(name: str, description: str = "") -> types.Tool:
    return types.Tool(name=name, description=description or name.replace("_", " "), input_schema={"type": "object"})


def spec(name: str, tools: Sequence[types.Tool], namespace: str | None = None, description: str = "") -> UpstreamSpec:
    shown = name if namespace is None else f"{namespace}.{name}"
    server = build_server(shown, tools)
    return UpstreamSpec(shown, InProcessUpstream(server), namespace=namespace, description=description or None)


@asynccontextmanager
async def running(specs: Sequence[UpstreamSpec], **kwargs: object) -> AsyncGenerator[Gateway]:
    async with Gateway(specs, **kwargs) as gateway:  # pyright: ignore[reportArgumentType]
        with anyio.fail_after(20):
            await gateway.settle()
        yield gateway


PREFIX_SERVERS = ["aws-mcp-group", "aws-mcp-group-aws-cloudtrail", "awsome", "aws", "aws-mcp-groupie"]


@pytest.mark.parametrize(
    ("allowed", "seen"),
    [
        (["aws-mcp-group"], ["aws-mcp-group", "aws-mcp-group-aws-cloudtrail"]),
        (["aws"], ["aws-mcp-group", "aws-mcp-group-aws-cloudtrail", "aws", "aws-mcp-groupie"]),
        (["aws-mcp-group-aws-cloudtrail"], ["aws-mcp-group-aws-cloudtrail"]),
        (["awsome", "aws-mcp-groupie"], ["awsome", "aws-mcp-groupie"]),
        (["aw"], []),
        (["*"], PREFIX_SERVERS),
    ],
)
async def test_servers_are_allowed_by_name_or_group_prefix_never_by_a_bare_prefix(
    allowed: list[str], seen: list[str]
) -> None:
    specs = [spec(name, [tool(f"{name.replace('-', '_')}_info")], namespace="run1") for name in PREFIX_SERVERS]
    specs.append(spec("aws-mcp-group", [tool("other_run_info")], namespace="run2"))  # another run's namesake
    async with running(specs, search=BM25Backend()) as gateway:
        with scoped(Scope.of(namespace="run1", servers=allowed)):
            assert [u.name for u in gateway.upstreams] == [f"run1.{name}" for name in PREFIX_SERVERS if name in seen]
            hits = await gateway.search("info", limit=50, min_relevance=0.0)
            assert sorted({h.tool.server for h in hits}) == sorted(f"run1.{name}" for name in seen)
            for name in set(PREFIX_SERVERS) - set(seen):
                with pytest.raises(NotFound) as refused:
                    await gateway.execute(f"run1.{name}", f"{name.replace('-', '_')}_info", {})
                assert refused.value.code == "SERVER_NOT_FOUND"
            with pytest.raises(NotFound):
                await gateway.tools("run2.aws-mcp-group")


async def test_search_within_a_scope_ranks_as_if_the_rest_did_not_exist() -> None:
    """BM25's IDF and the relevance scale count only the scope's tools: the same answers as a gateway
    of those servers alone (the default hybrid backend)."""
    mine = [
        spec("notes", [tool("create_note", "Create a note."), tool("find_note", "Find a note by words.")], "a"),
        spec("mail", [tool("send_email", "Send an email with a note attached.")], "a"),
    ]
    # Others' tools that would change every term's rarity ("note" everywhere) and the best score.
    noise = [tool(f"note_{i}", "A note note note about notes and email.") for i in range(40)]
    crowd = [spec("crowd", noise, "b"), spec("more", [tool("note_taker", "Takes a note of a note.")], "b")]
    queries = ["create a note", "email a note", "find note"]
    async with running(mine + crowd, search=make_backend("hybrid")) as shared:
        with scoped(Scope.of(namespace="a")):
            within = [[(h.tool.name, h.relevance) for h in await shared.search(q, min_relevance=0.0)] for q in queries]
        whole = [[(h.tool.name, h.relevance) for h in await shared.search(q, min_relevance=0.0)] for q in queries]
    alone_specs = [
        spec("notes", [tool("create_note", "Create a note."), tool("find_note", "Find a note by words.")], "a"),
        spec("mail", [tool("send_email", "Send an email with a note attached.")], "a"),
    ]
    async with running(alone_specs, search=make_backend("hybrid")) as alone:
        expected = [[(h.tool.name, h.relevance) for h in await alone.search(q, min_relevance=0.0)] for q in queries]
    assert within == expected
    assert within != whole  # (the crowd does change the whole catalog's ranking: the comparison means something)


async def test_the_index_of_each_scope_is_bounded_and_follows_the_catalog() -> None:
    specs = [spec(f"s{i}", [tool(f"tool_{i}_{w}") for w in WORDS[:3]]) for i in range(MAX_SCOPES + 8)]
    async with running(specs, search=BM25Backend()) as gateway:
        for i in range(MAX_SCOPES + 8):
            with scoped(Scope.of(servers=[f"s{i}"])):
                hits = await gateway.search("convert", min_relevance=0.0)
                assert [h.tool.server for h in hits] == [f"s{i}"]
        assert len(gateway._index._scoped) == MAX_SCOPES  # pyright: ignore[reportPrivateUsage]
        with scoped(Scope.of(servers=["s0"])):
            assert not await gateway.search("upload", min_relevance=0.0)
            gateway.catalog.set_server_tools("s0", [tool("upload_file", "Upload a file.")])
            assert [h.tool.name for h in await gateway.search("upload", min_relevance=0.0)] == ["upload_file"]


# The property: a gateway of servers in two namespaces and the global one, catalogs and scopes drawn at random.

NAMESPACES = ["red", "blue"]
SERVERS = [("red", "grp"), ("red", "grp-one"), ("red", "grpx"), ("blue", "grp"), (None, "shared"), (None, "grp-two")]


def shown(namespace: str | None, name: str) -> str:
    return name if namespace is None else f"{namespace}.{name}"


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[BlockingPortal, Gateway]]:
    """One gateway for every example (each draws its own catalog into it)."""
    specs = [spec(name, [tool("seed")], namespace) for namespace, name in SERVERS]
    with start_blocking_portal("asyncio") as portal, portal.wrap_async_context_manager(running(specs)) as gateway:
        yield portal, gateway


tool_names = st.lists(st.sampled_from([f"{v}_{w}" for v in ("get", "delete", "make") for w in WORDS]), max_size=6)
catalogs = st.lists(tool_names, min_size=len(SERVERS), max_size=len(SERVERS))


def make_scope(namespace: str | None, servers: list[str] | None, tools: list[str]) -> Scope:
    return Scope.of(namespace=namespace, servers=servers, tools=tools)


scopes = st.builds(
    make_scope,
    st.sampled_from([*NAMESPACES, None]),
    st.one_of(st.none(), st.lists(st.sampled_from(["grp", "grp-one", "gr", "shared", "grpx", "*", "grp-two"]))),
    st.lists(st.sampled_from(["!delete_*", "get_*", "*_note", "!*_chart"]), max_size=2),
)


async def check_scope(gateway: Gateway, catalog: list[list[str]], scope: Scope) -> None:
    for (namespace, name), names in zip(SERVERS, catalog, strict=True):
        gateway.catalog.set_server_tools(shown(namespace, name), [tool(n) for n in sorted(set(names))])
    visible = {
        (shown(ns, name), t)
        for (ns, name), names in zip(SERVERS, catalog, strict=True)
        for t in names
        if scope.sees_tool(ns, name, shown(ns, name), t)
    }
    seen_servers = {shown(ns, name) for ns, name in SERVERS if scope.sees_server(ns, name)}
    unseen_names = {t for names in catalog for t in names} - {t for _, t in visible}
    with scoped(scope):
        assert {u.name for u in gateway.upstreams} == seen_servers
        listed = {(s, t.name) for s in seen_servers for t in await gateway.tools(s, include_disabled=True)}
        assert listed == visible
        hits = await gateway.search(" ".join(WORDS), limit=50, min_relevance=0.0)
        assert {(h.tool.server, h.tool.name) for h in hits} <= visible
        for (namespace, name), names in zip(SERVERS, catalog, strict=True):
            for t in names:
                if (shown(namespace, name), t) in visible:
                    continue
                with pytest.raises(NotFound) as refused:
                    await gateway.execute(shown(namespace, name), t, {})
                suggested: list[Any] = refused.value.details.get("suggestions") or []
                # Did-you-mean names nothing the scope does not see.
                for s in suggested:
                    assert (s["server"], s["tool"]) in visible if isinstance(s, dict) else s in seen_servers
                text = refused.value.message.replace(shown(namespace, name), "").replace(t, "")
                assert not any(u in text for u in unseen_names if u != t), text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(catalog=catalogs, scope=scopes)
def test_nothing_outside_a_scope_is_listed_found_or_executable(
    live: tuple[BlockingPortal, Gateway], catalog: list[list[str]], scope: Scope
) -> None:
    portal, gateway = live
    portal.call(check_scope, gateway, catalog, scope)


async def test_one_namespaces_hanging_endpoint_never_delays_anothers_answer() -> None:
    # An endpoint that accepts the connection and never answers: its first attempt lasts its whole
    # connect timeout (10 minutes here), which only its own namespace's first answer waits for.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
        config = HttpServerConfig.model_validate({"url": url, "connectTimeout": 600})
        hanging = dataclasses.replace(UpstreamSpec.from_config("a.hangs", config), namespace="a")
        other = spec("books", [tool("add_book", "add a book to the shelf")], namespace="b")
        async with Gateway([hanging, other], search=BM25Backend()) as gateway:
            with scoped(Scope.of(namespace="b", servers=["*"])), anyio.fail_after(60):
                await gateway.settle_startup()  # what every catalog question waits for first
                hits = await gateway.search("add a book", min_relevance=0.0)
                assert [(hit.tool.server, hit.tool.name) for hit in hits] == [("b.books", "add_book")]
                assert [u.name for u in gateway.upstreams] == ["b.books"]
            assert not gateway.upstream("a.hangs").first_attempt_over  # it was hanging all along
    finally:
        listener.close()


async def test_a_change_outside_a_scope_costs_its_index_no_rebuild() -> None:
    """A registration flood in one namespace must not rebuild every other scope's index (its clients would
    wait for each rebuild): a scope's index stands until what the scope sees changes."""
    specs = [spec("notes", [tool("create_note", "Create a note.")], "a"), spec("crowd", [tool("note_0")], "b")]
    async with running(specs, search=make_backend("hybrid")) as gateway:
        scope = Scope.of(namespace="a")
        indexes = gateway._index._scoped  # pyright: ignore[reportPrivateUsage]

        async def backend() -> object:
            with scoped(scope):
                hits = await gateway.search("create a note", min_relevance=0.0)
            assert hits[0].tool.name == "create_note"
            (entry,) = indexes._entries.values()  # pyright: ignore[reportPrivateUsage]
            return entry.backend

        built = await backend()
        gateway.catalog.set_server_tools("b.crowd", [tool(f"note_{i}") for i in range(5)])  # namespace b's change
        assert await backend() is built
        gateway.catalog.set_server_tools("a.notes", [tool("create_note", "Create a note."), tool("find_note")])
        assert await backend() is not built  # a change the scope sees rebuilds it
