"""Explaining a search: the same hits in the same order as the search itself (whole catalog, one
server, a scope), each ranker's part in each hit (the hand-set fusion, the learned ranker, one
ranker alone), smart mode's scores, the embeddings' state and their sync, and `toolscout search
--explain` at the terminal and in JSON."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from tests.helpers.callback_site import callback_site
from tests.helpers.cli_sandbox import make_sandbox
from tests.helpers.gateway_client import notes_server
from tests.helpers.paths import PYTHON
from tests.helpers.smart_gateway import smart_client, smart_gateway
from tests.helpers.smart_llm import ScriptedModel
from tests.servers.kitchen import Kitchen
from tests.servers.library import Library
from toolscout.config.models import LLMConfig, SearchConfig, SmartConfig
from toolscout.config.scopes import Scope, scoped
from toolscout.gateway.core import Gateway
from toolscout.search.base import explain_hits, search_steps
from toolscout.search.bm25 import BM25Backend
from toolscout.search.hybrid import FusionWeights, HybridBackend
from toolscout.search.ranker import packaged_rankers
from toolscout.upstream import InProcessUpstream, UpstreamSpec

QUERIES = (
    "what is the weather in a city",
    "add_note",
    "write a note, then look up a book by its author",
    "borrow a book",
    "asdf qwerty",
)


def specs() -> list[UpstreamSpec]:
    return [
        UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server)),
        UpstreamSpec("notes", InProcessUpstream(notes_server())),
        UpstreamSpec("books", InProcessUpstream(Library("books").server)),
    ]


@asynccontextmanager
async def gateway(smart: bool = False) -> AsyncGenerator[Gateway]:
    async with Gateway(specs()) as found:
        with anyio.fail_after(10):
            await found.settle()
        if smart:
            found.smart = SmartConfig()
        yield found


def key(server: str, tool: str, relevance: float) -> tuple[str, str, float]:
    return (server, tool, relevance)


@pytest.mark.anyio
async def test_explained_hits_are_the_search_in_its_order() -> None:
    async with gateway() as found:
        for query in QUERIES:
            for server in (None, "books"):
                hits = await found.search(query, server=server, limit=5)
                explained = await found.explain_search(query, server=server, limit=5)
                assert [key(e.server, e.tool, e.relevance) for e in explained] == [
                    key(h.tool.server, h.tool.name, h.relevance) for h in hits
                ], (query, server)
                for hit in explained:
                    parts = hit.contributions
                    assert list(parts) == ["lexical", "names", "embeddings", "fusion"]
                    assert parts["lexical"] + parts["names"] + parts["embeddings"] == pytest.approx(
                        parts["fusion"], abs=2e-3
                    )
                    assert hit.smart is None  # smart mode is off
        assert not await found.explain_search("asdf qwerty")
        assert found.stats.explained == len(QUERIES) * 2 + 1
        assert found.stats.searches == len(QUERIES) * 2  # an explanation is not counted as a search

        named = (await found.explain_search("add_note"))[0]
        assert (named.tool, named.relevance) == ("add_note", 1.0)
        assert named.contributions["fusion"] >= 10.0  # a tool the query names goes first


@pytest.mark.anyio
async def test_a_scope_explains_only_what_it_sees() -> None:
    only_books = Scope.of(namespace="alpha", servers=["books"], label="alpha")
    async with gateway() as found:
        explained = await found.explain_search("add a note", scope=only_books)
        with scoped(only_books):
            hits = await found.search("add a note")
        assert explained and [(e.server, e.tool) for e in explained] == [(h.tool.server, h.tool.name) for h in hits]
        assert {e.server for e in explained} == {"books"}
        unscoped = await found.explain_search("add a note")
        assert {e.server for e in unscoped} > {"books"}


@pytest.mark.anyio
async def test_smart_mode_scores_each_method() -> None:
    async with gateway(smart=True) as found:
        explained = await found.explain_search("what is the weather in a city")
        candidates = await found.candidates("what is the weather in a city", limit=30, method="hybrid")
        by_key = {(c.tool.server, c.tool.name): c for c in candidates}
        for hit in explained:
            assert hit.smart is not None
            candidate = by_key[(hit.server, hit.tool)]
            assert hit.smart["rule_based"] == candidate.rule
            assert hit.smart["semantic_based"] == candidate.semantic
            assert 0.0 <= hit.smart["combined"] <= 1.0
        assert explained[0].smart is not None and explained[0].smart["combined"] == max(
            h.smart["combined"] for h in explained if h.smart is not None
        )


@pytest.mark.anyio
async def test_the_learned_ranker_and_a_single_ranker_explain_their_own_parts() -> None:
    async with gateway() as found:
        tools = found.catalog.tools()
    learned = HybridBackend(None, FusionWeights(learned=True), ranker=packaged_rankers()["lexical"])
    learned.rebuild(tools)
    bm25 = BM25Backend()
    bm25.rebuild(tools)
    for query in QUERIES:
        hits = search_steps(learned, query, server=None, limit=5, min_relevance=0.0)
        explained = explain_hits(learned, query, server=None, limit=5, min_relevance=0.0)
        assert [hit for hit, _ in explained] == hits
        for hit, parts in explained:
            assert list(parts) == ["lexical", "names", "ranker", "fusion"]
            if parts["names"] < 0.85:  # the ranker's relevance is the score, and the hit's relevance
                assert parts["fusion"] == parts["ranker"] == pytest.approx(hit.relevance, abs=1e-3)
        lexical = explain_hits(bm25, query, server=None, limit=5, min_relevance=0.0)
        assert [(hit.tool.name, parts) for hit, parts in lexical] == [
            (hit.tool.name, {"lexical": hit.relevance, "fusion": hit.relevance})
            for hit in search_steps(bm25, query, server=None, limit=5, min_relevance=0.0)
        ]


@pytest.mark.anyio
async def test_stale_embeddings_are_counted_and_synced() -> None:
    async with gateway() as found:
        # Synced first: an index built in the background while the servers were still connecting holds
        # only the tools listed by then, which this test would otherwise count as stale.
        state = await found.semantic_state(sync=True)
        total = len(found.catalog.tools())
        assert (state.embedded, state.stale, state.dimensions) == (total, 0, 256)
        await found.set_servers(
            [*specs(), UpstreamSpec("films", InProcessUpstream(Library("films").server))], owner="config"
        )
        with anyio.fail_after(10):
            await found.settle()
        added = len(found.catalog.tools("films"))
        assert added > 0
        stale = await found.semantic_state()
        assert (stale.embedded, stale.stale, stale.rebuilt) == (total, added, False)
        synced = await found.semantic_state(sync=True)
        assert (synced.embedded, synced.stale, synced.rebuilt) == (total + added, 0, True)
        again = await found.semantic_state(sync=True)
        assert again.rebuilt is False


def test_cli_explain_prints_a_column_per_ranker(tmp_path: Path) -> None:
    sandbox = make_sandbox(tmp_path)
    config = {
        "mcpServers": {"units": {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]}},
        "catalogCache": {"path": str(tmp_path / "catalog.sqlite3")},
        "smartTool": True,
    }
    path = sandbox.write("work/toolscout.json", json.dumps(config))
    done = sandbox.run("search", "convert miles to km", "-c", str(path), "--explain")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == 'Search results for "convert miles to km" (2 found), each ranker\'s part:'
    assert lines[1].split() == ["#", "tool", "relevance", "lexical", "names", "embeddings", "fusion"]
    assert lines[4] == "smart mode"
    assert lines[5].split() == ["#", "tool", "rule_based", "semantic_based", "combined"]

    data = sandbox.json("search", "convert miles to km", "-c", str(path), "--explain")
    results = data["results"]
    assert [r["tool"] for r in results] == ["convert_units", "list_units"]
    for row, line, smart_line in zip(results, lines[2:4], lines[6:8], strict=True):
        parts, smart = row["contributions"], row["smart"]
        assert line.split() == [
            line.split()[0],
            f"units/{row['tool']}",
            f"{row['relevance']:.3f}",
            *(f"{parts[name]:.3f}" for name in ("lexical", "names", "embeddings", "fusion")),
        ]
        assert smart_line.split()[2:] == [f"{smart[name]:.3f}" for name in ("rule_based", "semantic_based", "combined")]

    plain = sandbox.json("search", "convert miles to km", "-c", str(path))
    assert [r["tool"] for r in plain["results"]] == ["convert_units", "list_units"]
    assert "contributions" not in plain["results"][0]


@pytest.mark.anyio
async def test_new_search_settings_apply_from_the_next_search() -> None:
    async with gateway() as found:
        before = await found.search("borrow a book", limit=5)
        await found.configure_search(SearchConfig(backend="bm25", min_relevance=0.0))
        explained = await found.explain_search("borrow a book", limit=5)
        hits = await found.search("borrow a book", limit=5)
        assert [(e.server, e.tool, e.relevance) for e in explained] == [
            (h.tool.server, h.tool.name, h.relevance) for h in hits
        ]
        assert hits != before  # ranked by BM25 alone now
        assert all(e.contributions == {"lexical": e.relevance, "fusion": e.relevance} for e in explained)
        state = await found.semantic_state()
        assert (state.model, state.embedded, state.stale) == (None, 0, 0)

        await found.configure_search(SearchConfig(min_relevance=0.9))
        assert all(h.relevance >= 0.9 for h in await found.search("borrow a book", limit=5))
        assert (await found.semantic_state(sync=True)).model is not None


@pytest.mark.anyio
async def test_an_llm_pick_smart_mode_remembers_shows_in_the_explanation() -> None:
    request = "convert 5 miles to km"
    model = ScriptedModel("units/convert_units", 0.9, [{"value": 5, "from_unit": "mi", "to_unit": "km"}])
    async with (
        smart_gateway() as found,
        callback_site(model.chat) as site,
        smart_client(found, "legacy", llm=LLMConfig(base_url=site.url("/v1"), model="m", max_retries=0)) as client,
    ):
        found.smart = SmartConfig()
        offline = await found.explain_search(request)
        assert offline[0].smart is not None and "llm" not in offline[0].smart
        with anyio.fail_after(30):
            result = await client.call_tool("smart_tool_discovery", {"request": request})
        assert not result.is_error and model.selections == 1
        explained = await found.explain_search(request)
    assert [(e.server, e.tool) for e in explained] == [(e.server, e.tool) for e in offline]
    scores = {f"{e.server}/{e.tool}": e.smart for e in explained}
    assert scores["units/convert_units"] is not None and scores["units/convert_units"]["llm"] == 0.9
    # A tool the LLM did not pick: the chance it leaves open that its own pick is wrong.
    assert all(
        s is not None and s["llm"] == pytest.approx(0.1) for name, s in scores.items() if name != "units/convert_units"
    )
    assert model.selections == 1  # explaining asked the LLM nothing
