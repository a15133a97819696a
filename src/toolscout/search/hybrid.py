"""The default search, which fuses the lexical and semantic rankings and puts the tools a query names first.

The rankings are fused by hand-set weights (`FusionWeights`) or, when asked, by the learned ranker.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from toolscout.catalog import CatalogTool
from toolscout.search.base import Method, MethodHit, SearchHit, rank
from toolscout.search.bm25 import BM25Backend
from toolscout.search.embedding import DenseBackend
from toolscout.search.ranker import (
    DENSE_REFERENCE,
    Ranker,
    RankerError,
    ServerIndex,
    Signals,
    by_best,
    candidates,
    feature_matrix,
    packaged_rankers,
)
from toolscout.search.text import NameMatcher, expand, terms, with_implied_words

log = logging.getLogger(__name__)

Scores = np.ndarray[Any, np.dtype[np.float32]]

# Sentence ends, semicolons and "then"-style step words separate the steps of a long task.
_STEPS = re.compile(
    r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+|,?\s+(?:and then|then|after that|afterwards|finally|next)\s+", re.I
)
_STEP_WORD = re.compile(r"^(?:and\s+)?(?:then|after that|afterwards|finally|next)\b,?\s*", re.I)


@dataclass(frozen=True)
class FusionWeights:
    """The weights by which the rankers combine by hand, when the learned ranker is off.

    `dense` and `lexical` were chosen on the validation split of `../shared/train`
    (`benchmarks/search_train.py --validation`), the rest on the dev sets; the model card
    (`model/README.md`) and docs/BENCHMARKS.md give the figures. The fused score is
    `dense × cosine / max(best cosine, dense_reference) + lexical × bm25 / best bm25`, where BM25
    counts the query's implied words and synonyms (`text.expand`). Each step of a long task adds its
    own fused scores × `steps`, so every step's tools surface. The relevance of a hit is a logistic
    curve of its fused score (averaged over query and steps), fitted by log loss on the top-10 hits of
    the dev queries: roughly the chance that the hit is a tool the query needs, so it means the same
    for every query (0.5 is a coin flip).
    """

    # With the fine-tuned embeddings, 0.7/0.3 ranks best on the validation split, the held-out source
    # and MetaTool dev. Sources the embeddings never saw rank their long API-call requests a little
    # better with more lexical weight: a trade-off the short queries an agent types win.
    dense: float = 0.7
    lexical: float = 0.3
    # Tuned on LiveMCPBench's long tasks; on the train set's multi-tool requests it is level to
    # slightly worse, so it is kept for step-per-sentence tasks, not validated as general.
    steps: float = 0.25
    min_step_terms: int = 3
    slope: float = 9.5
    midpoint: float = 0.93
    # Every tool has some cosine with any text, so embeddings alone cannot say "nothing matches". A
    # query no BM25 term matches counts as matched only if some tool is this close: nonsense ("zebra
    # migration patterns", "asdf") stays below it on the dev catalogs, while every dev query has a
    # BM25 match and is unaffected.
    dense_floor: float = 0.35
    # The cosines are divided by the best one only when it is at least this: in a small catalog the
    # best of a few unrelated tools is still a weak cosine, and dividing by it would make that tool
    # read as a perfect semantic match ("zebra migration patterns" made `echo` one). Rankings barely
    # move; junk in small catalogs reads far lower.
    dense_reference: float = DENSE_REFERENCE
    # Rank with the learned ranker (`ranker`, model/ranker.json) rather than the hand-set fusion
    # above. Off by default: with the fine-tuned embeddings it ties the fusion on the dev sets while
    # winning on the validation split, and its relevance reads a search no server answers too high
    # ("create a github issue" finds `create_note`: tests/test_search_everyday.py). See
    # scripts/train_ranker.py.
    learned: bool = False
    # Candidates scored by the ranker: the top this many of each ranking of the query and its steps.
    depth: int = 100


# The real MiniLM ranks well enough on its own to deserve more weight (tuned and fitted the same way).
# Its cosines run on another scale, not measured for `dense_reference`: divided by the best, as before.
# No ranker has been trained on its features: it keeps the hand-set fusion.
MINILM_WEIGHTS = FusionWeights(dense=0.7, lexical=0.3, slope=10.5, midpoint=0.91, dense_reference=0.0)


def split_steps(query: str, min_terms: int) -> list[str]:
    """The steps of a multi-step task (each with at least `min_terms` search terms); [] for a simple query."""
    parts = [_STEP_WORD.sub("", p.strip()) for p in _STEPS.split(query) if p and p.strip()]
    steps = [p for p in parts if len(terms(p)) >= min_terms]
    return steps if len(steps) >= 2 else []


def _default_ranker(dense: bool) -> Ranker | None:
    try:
        return packaged_rankers()["static" if dense else "lexical"]
    except (RankerError, KeyError) as exc:
        log.warning("search uses the hand-set fusion: the packaged ranker cannot be used (%s)", exc)
        return None


TAG_RELEVANCE = 0.3
"""The least relevance of a tool carrying a tag the query names: a tag match counts for less than
the query's words matching a tool's own (a partial match, 0.5) or naming it (1.0)."""


class HybridBackend:
    """BM25 and embeddings (optional), exact or typo-tolerant names first.

    By default they are fused by the hand-set `weights`. With `weights.learned` (or a `ranker`),
    the learned ranker scores them instead: the packaged one for the backend's kind, unless given.
    """

    def __init__(
        self, dense: DenseBackend | None, weights: FusionWeights | None = None, ranker: Ranker | None = None
    ) -> None:
        self.weights = weights or FusionWeights()
        self.lexical = BM25Backend()
        self.dense = dense
        self.names = NameMatcher()
        self.ranker = ranker if ranker is not None or not self.weights.learned else _default_ranker(dense is not None)
        self._tools: list[CatalogTool] = []
        self._servers = ServerIndex.build([], None)
        self._server_vectors: Scores = np.zeros((0, 0), dtype=np.float32)
        self._name_terms: list[frozenset[str]] = []
        self._position: dict[tuple[str, str], int] = {}
        self._by_tool_name: dict[str, list[int]] = {}
        self._tagged: list[tuple[int, tuple[frozenset[str], ...]]] = []

    def rebuild(self, tools: Sequence[CatalogTool], servers: Mapping[str, str] | None = None) -> None:
        self._tools = list(tools)
        self._position = {(t.server, t.name): i for i, t in enumerate(self._tools)}
        self._by_tool_name = {}
        for i, tool in enumerate(self._tools):
            self._by_tool_name.setdefault(tool.name, []).append(i)
        self._tagged = [
            (i, tuple(frozenset(terms(tag)) for tag in tool.tags)) for i, tool in enumerate(self._tools) if tool.tags
        ]
        self.lexical.rebuild(self._tools, servers)
        self.names.rebuild(self._tools)
        if self.dense is not None:
            self.dense.rebuild(self._tools, servers)
        if self.weights.learned:
            self._servers = ServerIndex.build(self._tools, servers)
            self._name_terms = [frozenset(terms(f"{t.name} {t.title or ''}")) for t in self._tools]
            if self.dense is not None and self._servers.documents:
                self._server_vectors = self.dense.encode(self._servers.documents)

    def signals(self, query: str) -> tuple[Signals, bool]:
        """What the rankers say about every tool for `query` and its steps, and whether anything matched."""
        texts = [query, *split_steps(query, self.weights.min_step_terms)]
        lexical = np.stack([self.lexical.scores(text) for text in texts]).astype(np.float32)
        matched = bool(lexical.size) and float(lexical.max()) > 0
        dense = server_dense = None
        if self.dense is not None:
            dense = np.clip(self.dense.scores_many(texts), 0.0, None).astype(np.float32)
            matched = matched or (dense.size > 0 and float(dense.max()) >= self.weights.dense_floor)
            if self._server_vectors.size:
                vector = self.dense.encode([with_implied_words(query)])[0]
                server_dense = np.clip(self._server_vectors @ vector, 0.0, None).astype(np.float32)
        found = Signals(
            lexical,
            dense,
            self.names.scores(query),
            self._servers.lexical(query),
            server_dense,
            expand(query),
        )
        return found, matched

    def candidate_features(self, signals: Signals) -> tuple[np.ndarray[Any, np.dtype[np.int64]], Scores]:
        """The candidates of a search and their features (what the ranker scores; also its training data)."""
        picked = candidates(signals, self.weights.depth)
        return picked, feature_matrix(signals, picked, self._servers, self.lexical.doc_terms, self._name_terms)

    def search(self, query: str, *, server: str | None = None, limit: int = 10) -> list[SearchHit]:
        if not self._tools or limit <= 0:
            return []
        return self._with_tags(self._ranked(query, server=server, limit=limit), query, server=server, limit=limit)

    def _with_tags(self, hits: list[SearchHit], query: str, *, server: str | None, limit: int) -> list[SearchHit]:
        """`hits` with every tool carrying a tag the query names at `TAG_RELEVANCE` at least.

        Tags are the user's own labels (`toolRules`): a query that names one ("dangerous") finds the
        tools they put it on, even where nothing else about them matches (to BM25 a tag is one word
        among many, and embeddings do not see it at all).
        """
        named = self._tag_named(query, server)
        if not named:
            return hits
        found = {(h.tool.server, h.tool.name): h for h in hits}
        for i in named:
            tool = self._tools[i]
            hit = found.get((tool.server, tool.name))
            if hit is None or hit.relevance < TAG_RELEVANCE:
                found[tool.server, tool.name] = SearchHit(tool, TAG_RELEVANCE)
        # Among equal relevance, the rankers' order, then the catalog's.
        order = {(h.tool.server, h.tool.name): n for n, h in enumerate(hits)}

        def place(hit: SearchHit) -> tuple[float, int]:
            key = (hit.tool.server, hit.tool.name)
            return -hit.relevance, order.get(key, len(hits) + self._position[key])

        return sorted(found.values(), key=place)[:limit]

    def _tag_named(self, query: str, server: str | None = None) -> set[int]:
        """The tools (their positions) carrying a tag every word of which the query has (of `server` only, if given)."""
        if not self._tagged:
            return set()
        words = frozenset(terms(query))
        return {
            i
            for i, tags in self._tagged
            if any(tag and tag <= words for tag in tags) and (server is None or self._tools[i].server == server)
        }

    def _ranked(self, query: str, *, server: str | None, limit: int) -> list[SearchHit]:
        if self.ranker is None:
            return self._fused_search(query, server=server, limit=limit)
        signals, matched = self.signals(query)
        named = signals.named
        if not matched and float(named.max()) <= 0:
            return []
        picked, features = self.candidate_features(signals)
        scores = np.zeros(len(self._tools), dtype=np.float32)
        relevance = self.ranker.relevance(self.ranker.score(features))
        scores[picked] = np.maximum(relevance, np.float32(1e-9))
        # A tool the query names goes first, whatever the rankers think of it.
        scores = np.where(named >= 0.85, 10.0 + named, scores).astype(np.float32)
        return [
            SearchHit(self._tools[i], self._relevance(float(scores[i])))
            for i in rank(self._tools, scores, server=server, limit=limit)
        ]

    def _relevance(self, score: float) -> float:
        if score >= 10.0:
            return round(min(1.0, score - 10.0 + 0.05), 3)
        if self.ranker is not None:
            # A learned probability, never certainty: 1.0 is for a tool the query names.
            return round(min(score, 0.99), 3)
        w = self.weights
        return round(1.0 / (1.0 + math.exp(-w.slope * (score - w.midpoint))), 3)

    def _raw(self, texts: Sequence[str]) -> tuple[list[Scores], Scores | None]:
        """Each text's BM25 scores, and its cosines (one row per text; None without embeddings)."""
        raw = [self.lexical.scores(text) for text in texts]
        # One batch for the query and its steps: a transformer embeds them for the price of one.
        dense = None if self.dense is None else np.clip(self.dense.scores_many(texts), 0.0, None)
        return raw, dense

    def fused(
        self, texts: Sequence[str], raw: tuple[list[Scores], Scores | None] | None = None
    ) -> tuple[list[Scores], bool]:
        """The hand-set fusion of every tool for each text (without the name boost), and whether any
        matched; `raw`: the texts' scores (`_raw`) when the caller has them already."""
        w = self.weights
        lexical_raw, dense = raw or self._raw(texts)
        matched = any(float(r.max()) > 0 for r in lexical_raw if r.size)
        lexical = [by_best(r) for r in lexical_raw]
        if dense is None:
            return lexical, matched
        matched = matched or (dense.size > 0 and float(dense.max()) >= w.dense_floor)
        fused = [
            (w.lexical * lex + w.dense * by_best(dense[i], w.dense_reference)).astype(np.float32)
            for i, lex in enumerate(lexical)
        ]
        return fused, matched

    def _fused_search(
        self,
        query: str,
        *,
        server: str | None,
        limit: int,
        raw: tuple[list[Scores], Scores | None] | None = None,
        named: Scores | None = None,
    ) -> list[SearchHit]:
        steps = split_steps(query, self.weights.min_step_terms)
        (whole, *parts), matched = self.fused([query, *steps], raw)
        named = self.names.scores(query) if named is None else named
        if not matched and float(named.max()) <= 0:
            return []
        scores = whole + self.weights.steps * sum(parts, np.zeros_like(whole))
        # Back to the scale of one query, so that relevance means the same with or without steps.
        scores = scores / (1.0 + self.weights.steps * len(steps))
        scores = np.where(named >= 0.85, 10.0 + named, scores + named * 0.5).astype(np.float32)
        return [
            SearchHit(self._tools[i], self._relevance(float(scores[i])))
            for i in rank(self._tools, scores, server=server, limit=limit)
        ]

    def by_method(
        self, query: str, *, limit: int, method: Method = "hybrid", prefer: frozenset[str] = frozenset()
    ) -> list[MethodHit]:
        """The best `limit` tools by `method` (and every tool named in `prefer`, by name or
        `server/tool`), each with its rule and semantic scores (`MethodHit`); best first."""
        count = len(self._tools)
        if not count or limit <= 0:
            return []
        named = self.names.scores(query)
        wanted = max(limit, 50)
        if self.ranker is None:  # the fusion's own scores serve both: each text scored once
            texts = [query, *split_steps(query, self.weights.min_step_terms)]
            raw = self._raw(texts)
            fused = self._fused_search(query, server=None, limit=wanted, raw=raw, named=named)
            hits = self._with_tags(fused, query, server=None, limit=wanted)  # the floor `search` applies
            lexical, cosines = raw[0][0], None if raw[1] is None else raw[1][0]
        else:
            hits = self.search(query, limit=wanted)
            lexical = self.lexical.scores(query)
            cosines = None if self.dense is None else np.clip(self.dense.scores(query), 0.0, None)
        rule = np.zeros(count, dtype=np.float32)
        if float(lexical.max()) > 0:
            best = int(np.argmax(lexical))
            rule = lexical * np.float32(self.lexical.coverage(query, best) / float(lexical[best]))
        rule = np.clip(np.maximum(rule, named), 0.0, 1.0)
        # The cosine itself (smart mode's semantic score is a cosine similarity), not against the best
        # one as the fusion takes it: against the best, the first candidate of every request read as a
        # perfect match.
        semantic = None if cosines is None else np.clip(cosines, 0.0, 1.0)
        relevance = {(h.tool.server, h.tool.name): h.relevance for h in hits}
        if method == "hybrid":  # the search's own ranking, best first
            picked = [self._position[key] for key in relevance][:limit]
        else:
            by = semantic if method == "semantic" and semantic is not None else rule
            picked = rank(self._tools, by, server=None, limit=limit)
        if prefer:
            chosen = set(picked)
            for name in sorted(prefer):
                server, qualified, tool = name.partition("/")
                found = [self._position[(server, tool)]] if qualified and (server, tool) in self._position else []
                for i in found or self._by_tool_name.get(name, []):
                    if i not in chosen:
                        chosen.add(i)
                        picked.append(i)
        return [
            MethodHit(
                self._tools[i],
                round(float(rule[i]), 3),
                None if semantic is None else round(float(semantic[i]), 3),
                relevance.get((self._tools[i].server, self._tools[i].name), 0.0),
            )
            for i in picked
        ]

    def contributions(self, query: str, tools: Sequence[CatalogTool]) -> list[dict[str, float]]:
        """What each ranker adds to the score of each of `tools` (indexed hits of `query`): `lexical`
        (BM25), `embeddings` (cosines), `names` (the name matcher), `ranker` (the learned ranker's
        relevance, when it ranks) and `fusion`, the score the ranking sorts by.

        With the hand-set fusion the parts add up to `fusion`: BM25 and cosines each divided by the
        best one and weighted (`FusionWeights`), steps folded in as the search folds them, and half
        the name match; a tool the query names (a name match of 0.85 or more) goes first, its fusion
        10 + the name match, and `names` is then what lifts it there. With the learned ranker the
        lexical, embeddings and names values are its inputs (each by the best), not shares.

        A tool carrying a tag the query names has `tags` too: `TAG_RELEVANCE`, the least relevance
        that gives it (its relevance may then be more than its fusion says).
        """
        rows = [self._position[(t.server, t.name)] for t in tools]
        if not rows:
            return []
        tagged = self._tag_named(query)
        return [
            parts | ({"tags": TAG_RELEVANCE} if row in tagged else {})
            for row, parts in zip(rows, self._contributions(query, rows), strict=True)
        ]

    def _contributions(self, query: str, rows: Sequence[int]) -> list[dict[str, float]]:
        w = self.weights
        texts = [query, *split_steps(query, w.min_step_terms)]
        lexical_raw, dense = self._raw(texts)
        named = self.names.scores(query)
        if self.ranker is not None:
            return self._ranker_parts(query, rows, lexical_raw[0], dense, named)

        def folded(per_text: Sequence[Scores]) -> Scores:
            whole, *parts = per_text
            return (whole + w.steps * sum(parts, np.zeros_like(whole))) / (1.0 + w.steps * len(parts))

        lexical = folded([by_best(r) for r in lexical_raw])
        embeddings = None
        if dense is not None:
            lexical = lexical * np.float32(w.lexical)
            embeddings = folded([by_best(dense[i], w.dense_reference) for i in range(len(texts))]) * np.float32(w.dense)
        found: list[dict[str, float]] = []
        for i in rows:
            lex = float(lexical[i])
            emb = None if embeddings is None else float(embeddings[i])
            base = lex + (emb or 0.0)
            fusion = 10.0 + float(named[i]) if named[i] >= 0.85 else base + 0.5 * float(named[i])
            parts = {"lexical": lex} | ({} if emb is None else {"embeddings": emb})
            parts |= {"names": fusion - base, "fusion": fusion}
            found.append({key: round(value, 4) for key, value in parts.items()})
        return found

    def _ranker_parts(
        self, query: str, rows: Sequence[int], lexical: Scores, dense: Scores | None, named: Scores
    ) -> list[dict[str, float]]:
        assert self.ranker is not None
        signals, _ = self.signals(query)
        picked, features = self.candidate_features(signals)
        learned = dict(zip(picked.tolist(), self.ranker.relevance(self.ranker.score(features)).tolist(), strict=True))
        lexical_share = by_best(lexical)
        dense_share = None if dense is None else by_best(dense[0], self.weights.dense_reference)
        found: list[dict[str, float]] = []
        for i in rows:
            ranker = float(learned.get(i, 0.0))
            parts = {"lexical": float(lexical_share[i])}
            if dense_share is not None:
                parts["embeddings"] = float(dense_share[i])
            fusion = 10.0 + float(named[i]) if named[i] >= 0.85 else ranker
            parts |= {"names": float(named[i]), "ranker": ranker, "fusion": fusion}
            found.append({key: round(value, 4) for key, value in parts.items()})
        return found
