"""The learned ranker: cheap features of each candidate tool, and the fitted model that scores them.

The features come from the score vectors the other rankers give (BM25, embeddings, names, the
servers' documents). The model's weights are in `model/ranker.json`, fitted by
`scripts/train_ranker.py` on the train split of `../shared/train` (a development step that may use
torch); scoring is numpy only. A model is a linear scorer over standardised features, optionally
plus a small ReLU layer, and a logistic calibration, fitted on the validation split, that turns its
score into the chance that the tool is one the query needs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import bm25s
import numpy as np

from toolscout.catalog import CatalogTool
from toolscout.search.text import SYNONYM_WEIGHT, SYNONYMS, Expansion, expand, terms

if TYPE_CHECKING:
    from toolscout.search.bm25 import DocumentTerms

Scores = np.ndarray[Any, np.dtype[np.float32]]
Indexes = np.ndarray[Any, np.dtype[np.int64]]

# Lexical features (also what the ranker without embeddings sees), then the semantic ones.
LEXICAL = (
    "lex_rel",  # BM25 / best BM25 of the query
    "lex_log",  # log1p(BM25)
    "lex_rr",  # 1 / (1 + rank by BM25 among the candidates)
    "step_lex_max",  # the steps' BM25 / their best: max and mean over the steps (0 without steps)
    "step_lex_mean",
    "step_lex_rr",  # the best reciprocal rank the tool has in any step
    "steps",  # log1p(number of steps)
    "name",  # NameMatcher score
    "coverage",  # share of the query's terms in the tool's document (a synonym's counts half)
    "name_coverage",  # the same in the tool's name and title
    "query_len",  # log1p(query terms)
    "doc_len",  # log1p(distinct terms of the tool)
    "server_lex_max",  # the best BM25 / best of the tool's server's tools
    "server_lex_mean",
    "server_doc_lex",  # BM25 of the query against the server's document / best
    "server_size",  # log1p(tools of the server)
)
DENSE = (
    "cos",
    "cos_rel",  # cosine / max(best cosine, reference)
    "cos_rr",
    "step_cos_max",
    "step_cos_mean",
    "step_cos_rr",
    "server_cos_max",
    "server_cos_mean",
    "server_doc_cos",  # cosine of the query with the server's document vector
)
DENSE_REFERENCE = 0.4
"""Cosines are divided by the best one only when it is at least this (in a small catalog the best of
a few unrelated tools is still a weak cosine, and must not read as a perfect match)."""


def server_document(server: str, names: Sequence[str], context: str) -> str:
    """What a server's document says: its name, what it says about itself, its tools' names."""
    return " ".join([server, context, *names])


@dataclass
class ServerIndex:
    """Which server each tool belongs to, grouped for per-server reductions, and BM25 over server documents."""

    ids: Indexes
    order: Indexes
    starts: Indexes
    sizes: Scores
    documents: list[str]
    index: bm25s.BM25 | None

    @classmethod
    def build(cls, tools: Sequence[CatalogTool], servers: Mapping[str, str] | None) -> ServerIndex:
        number: dict[str, int] = {}
        names: list[list[str]] = []
        ids = np.empty(len(tools), dtype=np.int64)
        for i, tool in enumerate(tools):
            k = number.setdefault(tool.server, len(number))
            if k == len(names):
                names.append([])
            names[k].append(tool.name)
            ids[i] = k
        order = np.argsort(ids, kind="stable")
        counts = np.bincount(ids, minlength=len(number)).astype(np.int64)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64) if len(number) else counts
        context = servers or {}
        documents = [server_document(s, names[k], context.get(s, "")) for s, k in number.items()]
        corpus = [terms(d) or ["\x00"] for d in documents]
        index = None
        if corpus:
            index = bm25s.BM25()
            index.index(corpus, show_progress=False)  # pyright: ignore[reportUnknownMemberType]
        return cls(ids, order, starts, counts.astype(np.float32), documents, index)

    def lexical(self, query: str) -> Scores:
        """BM25 of the query against every server's document."""
        words = list(expand(query).terms)
        if self.index is None or not words:
            return np.zeros(len(self.documents), dtype=np.float32)
        raw: Any = self.index.get_scores(words)  # pyright: ignore[reportUnknownMemberType]
        return np.asarray(raw, dtype=np.float32)

    def max(self, values: Scores) -> Scores:
        """The best of each server's tools' values."""
        return np.maximum.reduceat(values[self.order], self.starts) if values.size else values

    def mean(self, values: Scores) -> Scores:
        """The mean of each server's tools' values."""
        return (
            (np.add.reduceat(values[self.order], self.starts) / self.sizes).astype(np.float32)
            if values.size
            else values
        )


@dataclass
class Signals:
    """What the rankers say about every tool for a query and its steps."""

    lexical: Scores  # (texts, tools) raw BM25: the query, then each step
    dense: Scores | None  # (texts, tools) cosines clipped at 0, or None without embeddings
    named: Scores  # (tools,)
    server_lexical: Scores  # (servers,) BM25 of the query against the server documents
    server_dense: Scores | None  # (servers,) cosine of the query with the server documents
    query: Expansion  # the query's terms, implied words and synonyms


class TermSets(Protocol):
    """Each tool's distinct terms, by the tool's position (a list of sets, or the index's `DocumentTerms`)."""

    def __getitem__(self, index: int, /) -> frozenset[str]: ...


def coverage(query: Expansion, documents: TermSets, picked: Indexes) -> Scores:
    """The share of the query's terms each picked tool's `documents` entry holds; a term whose synonym
    it holds instead counts `SYNONYM_WEIGHT` (only where the query brings synonyms: short queries)."""
    own = frozenset(query.terms)
    if not own:
        return np.zeros(len(picked), dtype=np.float32)
    related = {t: SYNONYMS.get(t, frozenset()) for t in own} if query.synonyms else {}
    out = np.empty(len(picked), dtype=np.float32)
    for k, i in enumerate(picked.tolist()):
        document: frozenset[str] = documents[int(i)]
        direct = document & own
        partial = sum(1 for t in own - direct if related.get(t, frozenset()) & document) if related else 0
        out[k] = (len(direct) + SYNONYM_WEIGHT * partial) / len(own)
    return out


def by_best(scores: Scores, reference: float = 0.0) -> Scores:
    """Scores (last axis) divided by the best one, or by `reference` when that is higher (0 where none matched)."""
    best = np.maximum(scores.max(axis=-1, keepdims=True) if scores.size else np.zeros(1), reference)
    return np.where(best > 0, scores / np.where(best > 0, best, 1.0), 0.0).astype(np.float32)


def candidates(signals: Signals, depth: int) -> Indexes:
    """The tools worth scoring: the top `depth` of each ranking of the query and of its steps, and named tools."""
    tools = signals.named.size
    if tools <= depth:
        return np.arange(tools, dtype=np.int64)
    picked: list[Indexes] = [np.flatnonzero(signals.named > 0)]
    rows = [signals.lexical] + ([] if signals.dense is None else [signals.dense])
    for matrix in rows:
        part = np.argpartition(-matrix, depth - 1, axis=1)[:, :depth]
        picked.append(part[np.take_along_axis(matrix, part, axis=1) > 0].ravel())
    return np.unique(np.concatenate(picked)).astype(np.int64)


def _reciprocal_ranks(values: Scores) -> Scores:
    """The reciprocal rank, 1 / (1 + rank), of each value along the last axis (best first; ties by position)."""
    order = np.argsort(-values, axis=-1, kind="stable")
    ranks = np.empty_like(order)
    shape: tuple[int, ...] = tuple(int(d) for d in values.shape)
    positions = np.broadcast_to(np.arange(shape[-1], dtype=np.int64), shape)
    np.put_along_axis(ranks, order, positions, axis=-1)
    return np.where(values > 0, 1.0 / (1.0 + ranks), 0.0).astype(np.float32)


def feature_matrix(
    signals: Signals,
    picked: Indexes,
    servers: ServerIndex,
    doc_terms: DocumentTerms,
    name_terms: TermSets,
) -> Scores:
    """One row per candidate, one column per feature (`LEXICAL`, then `DENSE` when there are embeddings)."""
    n = len(picked)
    steps = signals.lexical.shape[0] - 1
    lex_all = signals.lexical[:, picked]
    lex_rel_full = by_best(signals.lexical[0])
    lex_rel = by_best(lex_all)  # relative to the best candidate: the best tool is always one
    lex_rr = _reciprocal_ranks(lex_all)
    doc_len = np.log1p(np.array([doc_terms.count(int(i)) for i in picked.tolist()], dtype=np.float32))
    sid = servers.ids[picked]
    columns: list[Scores | float] = [
        lex_rel[0],
        np.log1p(lex_all[0]),
        lex_rr[0],
        lex_rel[1:].max(axis=0) if steps else 0.0,
        lex_rel[1:].mean(axis=0) if steps else 0.0,
        lex_rr[1:].max(axis=0) if steps else 0.0,
        math.log1p(steps),
        signals.named[picked],
        coverage(signals.query, doc_terms, picked),
        coverage(signals.query, name_terms, picked),
        math.log1p(len(signals.query.terms)),
        doc_len,
        servers.max(lex_rel_full)[sid],
        servers.mean(lex_rel_full)[sid],
        by_best(signals.server_lexical)[sid] if signals.server_lexical.size else 0.0,
        np.log1p(servers.sizes[sid]),
    ]
    if signals.dense is not None:
        cos_all = signals.dense[:, picked]
        cos_rel = by_best(cos_all, DENSE_REFERENCE)
        cos_rr = _reciprocal_ranks(cos_all)
        full = signals.dense[0]
        server_dense = signals.server_dense
        columns += [
            cos_all[0],
            cos_rel[0],
            cos_rr[0],
            cos_rel[1:].max(axis=0) if steps else 0.0,
            cos_rel[1:].mean(axis=0) if steps else 0.0,
            cos_rr[1:].max(axis=0) if steps else 0.0,
            servers.max(full)[sid],
            servers.mean(full)[sid],
            server_dense[sid] if server_dense is not None and server_dense.size else 0.0,
        ]
    out = np.empty((n, len(columns)), dtype=np.float32)
    for j, column in enumerate(columns):
        out[:, j] = column
    return out


def names_of(dense: bool) -> tuple[str, ...]:
    """The feature names of a matrix with or without the semantic features."""
    return LEXICAL + DENSE if dense else LEXICAL


RANKER_FILE = Path(__file__).resolve().parent / "model" / "ranker.json"
Matrix = np.ndarray[Any, np.dtype[np.float32]]


class RankerError(ValueError):
    """A ranker file that cannot be used, and why."""


@dataclass(frozen=True)
class Ranker:
    """One fitted scorer: `score` ranks candidates, `relevance` calibrates a score to a probability."""

    features: tuple[str, ...]
    mean: Matrix
    scale: Matrix
    weights: Matrix
    bias: float
    hidden: Matrix | None  # (features, units) or None
    hidden_bias: Matrix | None
    output: Matrix | None  # (units,)
    slope: float
    intercept: float

    def score(self, features: Matrix) -> Matrix:
        x = (features - self.mean) / self.scale
        out = x @ self.weights + self.bias
        if self.hidden is not None and self.hidden_bias is not None and self.output is not None:
            out = out + np.maximum(x @ self.hidden + self.hidden_bias, 0.0) @ self.output
        return out.astype(np.float32)

    def relevance(self, scores: Matrix) -> Matrix:
        z = np.clip(self.slope * scores + self.intercept, -30.0, 30.0)
        return (1.0 / (1.0 + np.exp(-z))).astype(np.float32)


def _vector(spec: Mapping[str, Any], key: str, size: int, where: str) -> Matrix:
    value = np.asarray(spec.get(key), dtype=np.float32)
    if value.shape != (size,) or not np.all(np.isfinite(value)):
        raise RankerError(f"{where}: '{key}' must be {size} finite numbers")
    return value


def parse_ranker(spec: Mapping[str, Any], where: str, *, dense: bool) -> Ranker:
    """One model of a ranker file, checked against the features this version computes."""
    features = tuple(str(f) for f in cast(list[Any], spec.get("features") or []))
    expected = names_of(dense)
    if features != expected:
        raise RankerError(f"{where}: features {list(features)} are not the ones this version computes {list(expected)}")
    n = len(features)
    mean, scale = _vector(spec, "mean", n, where), _vector(spec, "scale", n, where)
    if np.any(scale <= 0):
        raise RankerError(f"{where}: 'scale' must be positive")
    hidden = hidden_bias = output = None
    if spec.get("hidden") is not None:
        hidden = np.asarray(spec["hidden"], dtype=np.float32)
        if hidden.ndim != 2 or hidden.shape[0] != n or not np.all(np.isfinite(hidden)):
            raise RankerError(f"{where}: 'hidden' must be a finite {n} x units matrix")
        hidden_bias = _vector(spec, "hidden_bias", hidden.shape[1], where)
        output = _vector(spec, "output", hidden.shape[1], where)
    try:
        bias, slope, intercept = (float(spec[k]) for k in ("bias", "slope", "intercept"))
    except (KeyError, TypeError, ValueError):
        raise RankerError(f"{where}: needs numbers 'bias', 'slope' and 'intercept'") from None
    if slope <= 0:
        raise RankerError(f"{where}: 'slope' must be positive (a higher score is a likelier tool)")
    return Ranker(
        features, mean, scale, _vector(spec, "weights", n, where), bias, hidden, hidden_bias, output, slope, intercept
    )


def load_rankers(path: Path = RANKER_FILE) -> dict[str, Ranker]:
    """The models of a ranker file by name: `lexical` (BM25 only) and `static` (with the packaged embeddings)."""
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RankerError(f"cannot read the ranker {path}: {exc}") from None
    models: Any = cast(dict[str, Any], raw).get("models") if isinstance(raw, dict) else None
    if not isinstance(models, dict) or not models:
        raise RankerError(f"{path}: no 'models' object")
    out: dict[str, Ranker] = {}
    for name, spec in cast(dict[str, Any], models).items():
        if not isinstance(spec, dict):
            raise RankerError(f"{path}: model {name!r} is not an object")
        out[name] = parse_ranker(cast(dict[str, Any], spec), f"{path} model {name!r}", dense=name != "lexical")
    if "lexical" not in out:
        raise RankerError(f"{path}: no 'lexical' model (the search without embeddings needs one)")
    return out


@lru_cache(maxsize=1)
def packaged_rankers() -> dict[str, Ranker]:
    """The rankers shipped with toolscout (loaded once)."""
    return load_rankers()
