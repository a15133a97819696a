"""BM25 over server, name, title, description and tags (`bm25s`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, cast

import bm25s
import numpy as np

from toolscout.catalog import CatalogTool
from toolscout.search.base import SearchHit
from toolscout.search.text import split_identifier, terms

# bm25s pins its logger to DEBUG when imported, which would print index builds on the CLI's
# stderr and in the gateway log; hand the decision back to the application's logging setup.
logging.getLogger("bm25s").setLevel(logging.NOTSET)

# The name is the densest signal a tool has; counting its terms twice weighs it
# above a long description that mentions the same words in passing.
NAME_WEIGHT = 2


def document_terms(tool: CatalogTool) -> list[str]:
    name_terms = split_identifier(tool.name)
    return [
        *split_identifier(tool.server),
        *(name_terms * NAME_WEIGHT),
        *terms(tool.title or ""),
        *terms(tool.description),
        *(t for tag in tool.tags for t in split_identifier(tag)),
    ]


class BM25Backend:
    """Okapi BM25 ranking with bm25s' defaults (k1=1.5, b=0.75)."""

    def __init__(self) -> None:
        self._tools: list[CatalogTool] = []
        self._doc_terms: list[set[str]] = []
        self._index: bm25s.BM25 | None = None

    def rebuild(self, tools: Sequence[CatalogTool]) -> None:
        self._tools = list(tools)
        corpus = [document_terms(t) or ["\x00"] for t in self._tools]
        self._doc_terms = [set(doc) for doc in corpus]
        self._index = None
        if corpus:
            index = bm25s.BM25()
            index.index(corpus, show_progress=False)  # pyright: ignore[reportUnknownMemberType]
            self._index = index

    def search(self, query: str, *, server: str | None = None, limit: int = 10) -> list[SearchHit]:
        query_terms = list(dict.fromkeys(terms(query)))
        if self._index is None or not query_terms or limit <= 0:
            return []
        scores = cast("np.ndarray[Any, np.dtype[np.float64]]", self._index.get_scores(query_terms))  # pyright: ignore[reportUnknownMemberType]
        order = np.argsort(-scores, kind="stable")
        ranked = [int(i) for i in order if scores[i] > 0 and (server is None or self._tools[int(i)].server == server)][
            :limit
        ]
        if not ranked:
            return []
        # Relevance: the score relative to the best, scaled by how much of the
        # query the best hit covers, so a lone partial match does not read as 100%.
        best = float(scores[ranked[0]])
        coverage = len(self._doc_terms[ranked[0]].intersection(query_terms)) / len(query_terms)
        return [SearchHit(self._tools[i], round(coverage * float(scores[i]) / best, 3)) for i in ranked]
