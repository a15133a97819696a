"""The discovery-engine design's own relevance: fixed weights for where the query's words are found.

`search.backend: weighted` ranks as that design writes it, for people who want its scores rather than
toolscout's: the whole query found in the tool's name counts 1.0 and in its summary 0.8; each of the
query's words found in the name 0.5 and in the summary 0.3; each of the tool's tags the query contains
0.3; the sum is capped at 1. Matching is by substring, ignoring case, as the design's pseudo-code does
it. A tool nothing matches is left out. Ties keep the catalog's order.

It needs no model and no index beyond the lowered strings; every query is a pass over the catalog,
which is the design's "simple in-memory indexing" (BENCHMARKS.md has it beside the default ranking).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from toolscout.catalog import CatalogTool
from toolscout.search.base import SearchHit


@dataclass(frozen=True)
class RelevanceWeights:
    """What each kind of match adds to a tool's relevance, as the design gives them."""

    query_in_name: float = 1.0
    query_in_summary: float = 0.8
    word_in_name: float = 0.5
    word_in_summary: float = 0.3
    tag_in_query: float = 0.3


@dataclass(frozen=True)
class _Entry:
    tool: CatalogTool
    name: str
    summary: str
    tags: tuple[str, ...]


class WeightedBackend:
    """Ranks tools by the design's fixed-weight relevance (module docstring)."""

    def __init__(self, weights: RelevanceWeights | None = None) -> None:
        self.weights = weights or RelevanceWeights()
        self._entries: list[_Entry] = []

    def rebuild(self, tools: Sequence[CatalogTool], servers: Mapping[str, str] | None = None) -> None:
        self._entries = [
            _Entry(tool, tool.name.lower(), tool.summary.lower(), tuple(t.lower() for t in tool.tags if t))
            for tool in tools
        ]

    def relevance(self, entry: _Entry, query: str, words: Sequence[str]) -> float:
        """The design's `calculateRelevance` for one tool (`query` lowered, `words` its words)."""
        w = self.weights
        score = 0.0
        if query in entry.name:
            score += w.query_in_name
        if query in entry.summary:
            score += w.query_in_summary
        for word in words:
            if word in entry.name:
                score += w.word_in_name
            if word in entry.summary:
                score += w.word_in_summary
        score += w.tag_in_query * sum(1 for tag in entry.tags if tag in query)
        return min(score, 1.0)

    def search(self, query: str, *, server: str | None = None, limit: int = 10) -> list[SearchHit]:
        lowered = query.lower().strip()
        if not lowered or limit <= 0:
            return []
        words = lowered.split()
        scored = [
            (self.relevance(entry, lowered, words), index)
            for index, entry in enumerate(self._entries)
            if server is None or entry.tool.server == server
        ]
        best = sorted((pair for pair in scored if pair[0] > 0), key=lambda pair: (-pair[0], pair[1]))[:limit]
        return [SearchHit(self._entries[index].tool, round(score, 3)) for score, index in best]
