"""Lexical ranking: BM25 (`bm25s`) over the weighted fields of each tool, with stemmed, identifier-split terms."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import bm25s
import numpy as np

from toolscout.catalog import CatalogTool
from toolscout.search.base import SearchHit, top_hits
from toolscout.search.text import SYNONYM_WEIGHT, expand, terms

# bm25s pins its logger to DEBUG when imported, which would print index builds on the CLI's
# stderr and in the gateway log; hand the decision back to the application's logging setup.
logging.getLogger("bm25s").setLevel(logging.NOTSET)

Scores = np.ndarray[Any, np.dtype[np.float32]]


@dataclass(frozen=True)
class FieldWeights:
    """How many times each field's terms count in a tool's document (BM25 by repetition).

    The name and title count twice, being the densest signal a tool has. Parameter names and
    descriptions count once: they often carry the words a person uses ("miles" is only in
    `convert_units`'s `from_unit`: 'e.g. "mi", "miles"'), and they lift the ranking on the training
    pairs of `../shared/train` (benchmarks/search_train.py), for BM25 alone and in the hybrid search.
    The server's own description made no difference or cost a little on the dev sets, so it is off by
    default and available to callers with catalogs where it helps.
    """

    name: int = 2
    title: int = 2
    server: int = 1
    description: int = 1
    parameters: int = 1
    server_context: int = 0


ENUM_VALUES_INDEXED = 20
"""The most of one parameter's enum values indexed (a long list is data, not words a task uses)."""


def parameter_text(schema: Mapping[str, Any]) -> str:
    """Top-level parameter names, descriptions and string enum values of an input schema, as one
    string. The values are words a request uses ("upper case", "kebab") that a description may not."""
    properties: Any = schema.get("properties")
    if not isinstance(properties, dict):
        return ""
    parts: list[str] = []
    for name, spec in cast(dict[str, Any], properties).items():
        parts.append(name)
        if isinstance(spec, dict):
            fields = cast(dict[str, Any], spec)
            description: Any = fields.get("description")
            if isinstance(description, str):
                parts.append(description)
            values: Any = fields.get("enum")
            if isinstance(values, list):
                parts.extend(v for v in cast(list[Any], values)[:ENUM_VALUES_INDEXED] if isinstance(v, str))
    return " ".join(parts)


def document_terms(
    tool: CatalogTool, weights: FieldWeights, context: str = "", tokenize: Callable[[str], list[str]] = terms
) -> list[str]:
    """The terms BM25 indexes for one tool, each field repeated by its weight."""
    fields = (
        (tool.name, weights.name),
        (tool.title or "", weights.title),
        (tool.server, weights.server),
        (tool.description, weights.description),
        (parameter_text(tool.input_schema), weights.parameters),
        (context, weights.server_context),
        (" ".join(tool.tags), 1),
    )
    out: list[str] = []
    for text, weight in fields:
        if text and weight > 0:
            out.extend(tokenize(text) * weight)
    return out


class DocumentTerms:
    """Each indexed tool's distinct terms, read from the BM25 index itself rather than kept as sets.

    A set of strings per tool cost about 1.7 KiB a tool (17 MiB at 10,000 tools); the index already
    holds which tools contain each term (its postings), so the same facts are kept as term ids per
    tool, 4 bytes a term, and a tool's set is made when asked for (a ranking asks for a few dozen).
    """

    def __init__(self, index: bm25s.BM25 | None, documents: int) -> None:
        self._words: list[str] = []
        self._starts = np.zeros(documents + 1, dtype=np.int64)
        self._ids = np.zeros(0, dtype=np.int32)
        if index is None or not documents:
            return
        vocabulary = cast(dict[str, int], index.vocab_dict)  # pyright: ignore[reportUnknownMemberType]
        self._words = [""] * len(vocabulary)
        for word, number in vocabulary.items():
            self._words[number] = word
        postings = cast(dict[str, Any], index.scores)  # pyright: ignore[reportUnknownMemberType]
        pointers = np.asarray(postings["indptr"], dtype=np.int64)
        holders = np.asarray(postings["indices"], dtype=np.int64)
        # Postings run term by term; regrouped tool by tool (a stable sort keeps each tool's ids in order).
        term_of = np.repeat(np.arange(len(pointers) - 1, dtype=np.int32), np.diff(pointers))
        order = np.argsort(holders, kind="stable")
        self._ids = term_of[order]
        np.cumsum(np.bincount(holders, minlength=documents), out=self._starts[1:])

    def __len__(self) -> int:
        return len(self._starts) - 1

    def __getitem__(self, index: int) -> frozenset[str]:
        ids: list[int] = self._ids[self._starts[index] : self._starts[index + 1]].tolist()
        return frozenset(self._words[i] for i in ids)

    def count(self, index: int) -> int:
        """How many distinct terms tool `index` has."""
        return int(self._starts[index + 1] - self._starts[index])


class BM25Backend:
    """Okapi BM25 over weighted fields; relevance is the score against the best hit, scaled by query coverage."""

    ranks_by = "rule"
    """The one method it ranks by (`search.base.method_hits`, `explain_hits`)."""

    def __init__(self, weights: FieldWeights | None = None, *, k1: float = 1.2, b: float = 0.75) -> None:
        self.weights = weights or FieldWeights()
        self._k1 = k1
        self._b = b
        self._tools: list[CatalogTool] = []
        self._doc_terms = DocumentTerms(None, 0)
        self._index: bm25s.BM25 | None = None
        self._field_terms: dict[str, list[str]] = {}
        """The terms of every field text of the last rebuild: a rebuild after one server's list
        changed tokenizes only what is new (and a server's context once, not once per tool)."""

    def rebuild(self, tools: Sequence[CatalogTool], servers: Mapping[str, str] | None = None) -> None:
        self._tools = list(tools)
        context = servers or {}
        known, kept = self._field_terms, dict[str, list[str]]()

        def tokenize(text: str) -> list[str]:
            found = kept.get(text)
            if found is None:
                found = kept[text] = known.get(text) or terms(text)
            return found

        corpus = [document_terms(t, self.weights, context.get(t.server, ""), tokenize) or ["\x00"] for t in self._tools]
        self._field_terms = kept
        self._index = None
        if corpus:
            index = bm25s.BM25(k1=self._k1, b=self._b)
            index.index(corpus, show_progress=False)  # pyright: ignore[reportUnknownMemberType]
            self._index = index
        self._doc_terms = DocumentTerms(self._index, len(corpus))

    def scores(self, query: str) -> Scores:
        """One BM25 score per indexed tool (0 where no query term occurs).

        The query's terms count with the words it implies, and the synonyms of its actions at
        `SYNONYM_WEIGHT` (`toolscout.search.text`).
        """
        expansion = expand(query)
        if self._index is None or not expansion.terms:
            return np.zeros(len(self._tools), dtype=np.float32)
        raw: Any = self._index.get_scores(list(expansion.terms))  # pyright: ignore[reportUnknownMemberType]
        scores = np.asarray(raw, dtype=np.float32)
        if expansion.synonyms:
            extra: Any = self._index.get_scores(list(expansion.synonyms))  # pyright: ignore[reportUnknownMemberType]
            scores = (scores + SYNONYM_WEIGHT * np.asarray(extra, dtype=np.float32)).astype(np.float32)
        return scores

    @property
    def doc_terms(self) -> DocumentTerms:
        """Each indexed tool's distinct terms (as of the last rebuild)."""
        return self._doc_terms

    def coverage(self, query: str, index: int) -> float:
        """The share of the query's terms (with the implied ones) that tool `index` contains."""
        query_terms = set(expand(query).terms)
        return len(self._doc_terms[index] & query_terms) / len(query_terms) if query_terms else 0.0

    def search(self, query: str, *, server: str | None = None, limit: int = 10) -> list[SearchHit]:
        scores = self.scores(query)
        if limit <= 0 or not scores.size or float(scores.max()) <= 0:
            return []
        best = int(np.argmax(scores))
        # Relevance: the score relative to the best, scaled by how much of the query the best
        # hit covers, so a lone partial match does not read as 100%.
        scale = self.coverage(query, best) / float(scores[best])
        return top_hits(self._tools, scores, scale, server=server, limit=limit)
