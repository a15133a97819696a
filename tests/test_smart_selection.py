"""Smart mode's parts below the face: each method's scores (`HybridBackend.by_method`), their
combination per selection mode (`smart.selection.choose`), the LLM's pick parsed, the caches, the
memory of what ran, and the `llm`/`smart` config sections."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from pydantic import ValidationError

from tests.helpers.callback_site import callback_site
from tests.helpers.chat_site import completion, scripted
from toolscout.catalog import Catalog, CatalogTool
from toolscout.config import GatewayConfig
from toolscout.config.models import LLMConfig, SmartConfig, SmartWeights
from toolscout.errors import LLMUnavailable
from toolscout.search import BM25Backend, make_backend
from toolscout.search.base import MethodHit, method_hits
from toolscout.search.hybrid import HybridBackend
from toolscout.smart.llm import OpenAICompatibleLLM
from toolscout.smart.memory import SmartMemory, TTLCache, normalised
from toolscout.smart.selection import (
    LLMPick,
    choose,
    hybrid_weights,
    parse_picks,
    pool,
    search_confidence,
    select_with_llm,
)


def _tools() -> list[CatalogTool]:
    catalog = Catalog()

    def tool(name: str, description: str) -> types.Tool:
        return types.Tool(name=name, description=description, input_schema={"type": "object", "properties": {}})

    catalog.set_server_tools(
        "fs",
        [
            tool("read_file", "Read the complete contents of a file."),
            tool("write_file", "Create or overwrite a file."),
            tool("delete_file", "Delete a file."),
        ],
    )
    catalog.set_server_tools(
        "net",
        [tool("ping", "Check that a host answers, by ICMP echo."), tool("http_get", "Fetch a URL over HTTP.")],
    )
    catalog.set_server_tools("units", [tool("convert_units", "Convert a value from one unit to another.")])
    return catalog.tools()


@pytest.fixture(scope="module")
def backend() -> HybridBackend:
    built = make_backend("hybrid", use_cache=False)
    assert isinstance(built, HybridBackend)
    built.rebuild(_tools())
    return built


def _names(hits: list[MethodHit]) -> list[str]:
    return [f"{h.tool.server}/{h.tool.name}" for h in hits]


def test_each_method_ranks_its_own_way_and_scores_every_candidate(backend: HybridBackend) -> None:
    for method in ("hybrid", "rule", "semantic"):
        hits = backend.by_method("read the contents of a file", limit=3, method=method)
        assert _names(hits)[0] == "fs/read_file", method
        assert len(hits) == 3
        for hit in hits:
            assert 0.0 <= hit.rule <= 1.0
            assert hit.semantic is not None and 0.0 <= hit.semantic <= 1.0
    rule = backend.by_method("ping", limit=2, method="rule")
    assert _names(rule)[0] == "net/ping" and rule[0].rule == 1.0  # a name the request says exactly
    semantic = backend.by_method("read the contents of a file", limit=6, method="semantic")
    assert [h.semantic for h in semantic] == sorted((h.semantic or 0.0 for h in semantic), reverse=True)


def test_preferred_tools_join_the_candidates_whatever_their_rank(backend: HybridBackend) -> None:
    plain = _names(backend.by_method("read a file", limit=1, method="hybrid"))
    assert plain == ["fs/read_file"]
    with_preferred = _names(
        backend.by_method("read a file", limit=1, method="hybrid", prefer=frozenset({"ping", "units/convert_units"}))
    )
    assert with_preferred == ["fs/read_file", "net/ping", "units/convert_units"]


def test_a_backend_of_one_method_gives_its_ranking_as_that_method_s_scores() -> None:
    lexical = BM25Backend()
    lexical.rebuild(_tools())
    hits = method_hits(lexical, "delete a file", limit=2, method="hybrid")
    assert _names(hits)[0] == "fs/delete_file"
    assert hits[0].semantic is None and hits[0].rule == hits[0].relevance > 0


def _hit(name: str, rule: float, semantic: float | None, relevance: float = 0.5) -> MethodHit:
    tool = CatalogTool("s", types.Tool(name=name, input_schema={"type": "object"}), True, ())
    return MethodHit(tool, rule, semantic, relevance)


def test_hybrid_weights_split_between_the_search_and_the_llm() -> None:
    weights = SmartWeights()
    assert hybrid_weights(weights, llm=True) == pytest.approx({"search": 0.45, "llm": 0.55})
    assert hybrid_weights(weights, llm=False) == {"search": 1.0}  # no LLM answer: the search decides
    assert hybrid_weights(SmartWeights(semantic=0.5, rule=0.5, llm=1.0), llm=True) == pytest.approx(
        {"search": 0.5, "llm": 0.5}
    )


def test_hybrid_reasoning_shows_each_method_s_part() -> None:
    # The spec's example scores; the search's share is its confidence model's (`search_confidence`).
    hits = [_hit("ping", 0.55, 0.732, 0.815), _hit("http_get", 0.2, 0.5, 0.6)]
    search = search_confidence(hits)
    llm = {("s", "ping"): LLMPick(0.9, "pings a host")}
    best, other = choose(hits, mode="hybrid", weights=SmartWeights(), llm=llm)
    assert best.tool.name == "ping"
    # The two chances averaged 45:55 (semantic + rule : llm).
    total = pool({"search": search[0], "llm": 0.9}, {"search": 0.45, "llm": 0.55})
    assert best.reasoning == f"Hybrid(Semantic: 0.732, Rule: 0.550 → Search: {search[0]:.3f}, LLM: 0.900) = {total:.3f}"
    assert best.confidence == pytest.approx(total, abs=1e-4)
    assert best.why == "pings a host" and best.scores["llm"] == 0.9 and best.scores["search"] == search[0]
    # Asked, not picked: the LLM's chance that its own pick is wrong, and never above it.
    assert other.scores["llm"] == pytest.approx(0.1) and "LLM: 0.100" in other.reasoning
    assert other.confidence <= 0.1  # the pool of a weak search and the LLM's doubt
    assert "contested" not in other.reasoning
    # Without an LLM answer, the search's confidence is the whole, and it orders the candidates.
    offline = choose(hits, mode="hybrid", weights=SmartWeights())
    assert [c.tool.name for c in offline] == ["ping", "http_get"]
    assert offline[0].confidence == search[0]


def test_the_search_s_confidence_rises_with_a_lead_and_falls_with_a_rival() -> None:
    alone = search_confidence([_hit("a", 0.8, 0.6, 0.9), _hit("b", 0.1, 0.2, 0.05)])
    rivalled = search_confidence([_hit("a", 0.8, 0.6, 0.9), _hit("b", 0.8, 0.6, 0.88)])
    assert alone[0] > 0.9 and alone[1] < 0.05
    assert rivalled[0] < alone[0] and rivalled[1] > alone[1]
    assert 0.0 < rivalled[1] < rivalled[0] < 1.0
    # Nothing close to the request: every candidate stays well below an even chance.
    assert max(search_confidence([_hit("a", 0.2, 0.3, 0.01), _hit("b", 0.2, 0.3, 0.01)])) < 0.3


def test_each_mode_decides_by_its_own_score() -> None:
    hits = [_hit("a", 0.9, 0.2), _hit("b", 0.1, 0.8)]
    assert [c.tool.name for c in choose(hits, mode="rule_based", weights=SmartWeights())] == ["a", "b"]
    semantic = choose(hits, mode="semantic_based", weights=SmartWeights())
    assert [c.tool.name for c in semantic] == ["b", "a"] and semantic[0].reasoning == "Semantic(0.800)"
    picks = {("s", "a"): LLMPick(0.7, "fits")}
    llm = choose(hits, mode="llm_based", weights=SmartWeights(), llm=picks)
    assert [(c.tool.name, c.confidence) for c in llm] == [("a", 0.7), ("b", 0.0)]
    # No LLM answer: llm_based decides as hybrid without it (the flow reports the method as hybrid).
    fallback = choose(hits, mode="llm_based", weights=SmartWeights(), llm=None)
    assert fallback[0].reasoning.startswith("Hybrid(Semantic: ")
    assert "LLM" not in fallback[0].reasoning
    # A search without embeddings: semantic mode says it decided by rule.
    assert choose([_hit("a", 0.4, None)], mode="semantic_based", weights=SmartWeights())[0].reasoning.endswith(
        "[no embeddings]"
    )


def test_preferred_and_learned_tools_weigh_in_as_odds_and_the_reasoning_says_so() -> None:
    hits = [_hit("a", 0.6, 0.6, 0.52), _hit("b", 0.6, 0.6, 0.5)]
    b_alone = search_confidence(hits)[1]
    learned = choose(hits, mode="hybrid", weights=SmartWeights(), learned={("s", "b"): 0.5})
    b = next(c for c in learned if c.tool.name == "b")
    odds = b_alone / (1 - b_alone) * 10**0.5
    assert b.confidence == pytest.approx(odds / (1 + odds), abs=1e-3) and "Learned ×3.162" in b.reasoning
    nudged = choose(hits, mode="hybrid", weights=SmartWeights(), preferred=frozenset({"b"}))
    assert nudged[0].tool.name == "b" and "Preferred ×10" in nudged[0].reasoning
    assert nudged[0].confidence <= 1.0


def test_an_llm_pick_is_read_by_candidate_number_and_junk_is_refused() -> None:
    keys = [("s", "a"), ("s", "b")]
    picks = parse_picks(
        json.dumps({"choices": [{"tool": 2, "confidence": 1.4, "reason": "x"}, {"tool": "1", "confidence": None}]}),
        keys,
    )
    assert picks == {("s", "b"): LLMPick(1.0, "x"), ("s", "a"): LLMPick(0.5, "")}
    assert parse_picks('{"choices": []}', keys) == {}  # no candidate fits: an answer, not a failure
    for junk in ("not json", '{"tools": []}', '{"choices": [{"tool": 9, "confidence": 1}]}'):
        with pytest.raises(LLMUnavailable) as caught:
            parse_picks(junk, keys)
        assert caught.value.reason == "bad_answer"


@pytest.mark.anyio
async def test_the_llm_sees_numbered_candidates_and_picks_by_number() -> None:
    answer = completion(json.dumps({"choices": [{"tool": 2, "confidence": 0.8, "reason": "converts"}]}))
    with anyio.fail_after(20):
        async with (
            callback_site(scripted([answer])) as site,
            OpenAICompatibleLLM(site.url("/v1"), "m", max_retries=0) as llm,
        ):
            candidates = [(("fs", "read_file"), "fs/read_file()"), (("u", "c"), "u/c(value)")]
            picks = await select_with_llm(llm, "5 miles in km", None, candidates)
    assert picks == {("u", "c"): LLMPick(0.8, "converts")}
    body: Any = site.received[0][1]
    prompt = body["messages"][1]["content"]
    assert "1. fs/read_file()" in prompt and "2. u/c(value)" in prompt and "Request: 5 miles in km" in prompt


def test_the_cache_forgets_after_its_ttl_and_drops_the_least_recently_used() -> None:
    now = [0.0]
    cache = TTLCache[str](2, 10.0, clock=lambda: now[0])
    cache.put("a", "A")
    cache.put("b", "B")
    assert cache.get("a") == "A"  # a is now the most recently used
    cache.put("c", "C")
    assert cache.get("b") is None and cache.get("a") == "A" and cache.get("c") == "C"
    now[0] = 10.0
    assert cache.get("a") is None and len(cache) == 1
    assert (cache.hits, cache.misses) == (3, 2)


def test_the_memory_finds_similar_requests_keeps_them_on_disk_and_forgets(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "memory.json"
    memory = SmartMemory(path)
    assert memory.similar("convert 5 miles to km") == {}
    memory.remember("Convert 5 miles to km", "units", "convert_units")
    assert normalised("convert 5 miles to km") == normalised("to km, convert 5 Miles")
    again = SmartMemory(path)  # a new process
    assert again.similar("convert 7 miles to km")[("units", "convert_units")] >= 0.5
    assert again.similar("read the config file") == {}
    assert not list(tmp_path.glob("deep/.smart-memory-*"))  # written whole, no temporary file left
    assert again.forget() == 1 and not path.exists() and again.similar("convert 5 miles to km") == {}


def test_an_unreadable_memory_is_set_aside_not_a_failure(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    path.write_text("{not json", encoding="utf-8")
    memory = SmartMemory(path)
    assert memory.similar("anything at all") == {}
    memory.remember("read the file", "fs", "read_file")
    assert json.loads(path.read_text(encoding="utf-8"))["requests"] == {
        normalised("read the file"): {"fs/read_file": 1}
    }


def test_the_llm_and_smart_sections_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    config = GatewayConfig.model_validate(
        {
            "mode": "smart",
            "llm": {"baseUrl": "http://localhost:11434/v1", "model": "llama3.1", "apiKeyEnv": "TS_TEST_KEY"},
            "smart": {"toolSelectionMode": "llm_based", "cache": False, "weights": {"llm": 0.5}},
        }
    )
    assert config.mode == "smart" and config.llm is not None and config.smart.cache.enabled is False
    assert config.smart.weights == SmartWeights(semantic=0.3, rule=0.15, llm=0.5)
    assert config.llm.api_key() is None
    monkeypatch.setenv("TS_TEST_KEY", "sk-test")
    assert config.llm.api_key() == "sk-test"
    with pytest.raises(ValidationError, match="http"):
        LLMConfig.model_validate({"baseUrl": "localhost:11434", "model": "m"})
    with pytest.raises(ValidationError, match="semantic and rule"):
        SmartConfig.model_validate({"weights": {"semantic": 0, "rule": 0}})
    with pytest.raises(ValidationError, match="toolSelectionMode"):
        GatewayConfig.model_validate({"smart": {"toolSelectionMode": "magic"}})
