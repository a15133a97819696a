"""The off-the-shelf baseline rankers toolscout's search is compared with (benchmarks only, never shipped).

* `PlainBM25`: what the eval README's BM25 baseline is: `bm25s` over `server name description`,
  its own tokenizer with English stop words, no stemming, no fields, no synonyms.
* The other baseline, all-MiniLM-L6-v2 alone, is toolscout's `dense` backend with `model="minilm"`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import bm25s
import numpy as np

from toolscout.catalog import CatalogTool
from toolscout.search.base import SearchHit, top_hits

logging.getLogger("bm25s").setLevel(logging.NOTSET)


def _tokens(texts: list[str]) -> list[list[str]]:
    found: Any = bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)  # pyright: ignore[reportUnknownMemberType]
    return [list(map(str, row)) for row in found]


class PlainBM25:
    """bm25s with its defaults over `server name description`: the README's lexical baseline."""

    def __init__(self) -> None:
        self._tools: list[CatalogTool] = []
        self._index: bm25s.BM25 | None = None

    def rebuild(self, tools: Sequence[CatalogTool], servers: Mapping[str, str] | None = None) -> None:
        self._tools = list(tools)
        corpus = _tokens([f"{t.server} {t.name} {t.description}" for t in self._tools])
        self._index = bm25s.BM25()
        self._index.index([doc or ["\x00"] for doc in corpus], show_progress=False)  # pyright: ignore[reportUnknownMemberType]

    def search(self, query: str, *, server: str | None = None, limit: int = 10) -> list[SearchHit]:
        terms = _tokens([query])[0]
        if self._index is None or not terms:
            return []
        raw: Any = self._index.get_scores(terms)  # pyright: ignore[reportUnknownMemberType]
        scores = np.asarray(raw, dtype=np.float32)
        best = float(scores.max()) if scores.size else 0.0
        return top_hits(self._tools, scores, 1.0 / best if best > 0 else 0.0, server=server, limit=limit)
