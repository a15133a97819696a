"""The seam every search backend fits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from toolscout.catalog import CatalogTool
from toolscout.errors import InvalidRequest


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A tool found for a query. `relevance` is in [0, 1], higher is better."""

    tool: CatalogTool
    relevance: float


class SearchBackend(Protocol):
    """Ranks catalog tools for a free-text query."""

    def rebuild(self, tools: Sequence[CatalogTool], servers: Mapping[str, str] | None = None) -> None:
        """Index `tools`, replacing whatever was indexed before.

        `servers` maps a server name to what it says about itself (description, instructions):
        context for all of its tools.
        """
        ...

    def search(self, query: str, *, server: str | None = None, limit: int = 10) -> list[SearchHit]:
        """The best `limit` tools for `query`, optionally only from `server`; best first."""
        ...


def rank(
    tools: Sequence[CatalogTool], scores: np.ndarray[Any, np.dtype[Any]], *, server: str | None, limit: int
) -> list[int]:
    """Indexes of the `limit` best tools with a positive score (of `server` only, if given), best first."""
    if limit <= 0 or not len(tools):
        return []
    masked = scores
    if server is not None:
        keep = np.fromiter((t.server == server for t in tools), dtype=bool, count=len(tools))
        masked = np.where(keep, scores, 0.0)
    count = min(limit, int(np.count_nonzero(masked > 0)))
    if count == 0:
        return []
    if count < len(tools):
        part = np.argpartition(-masked, count - 1)[:count]
        order = part[np.argsort(-masked[part], kind="stable")]
    else:
        order = np.argsort(-masked, kind="stable")[:count]
    return [int(i) for i in order]


def top_hits(
    tools: Sequence[CatalogTool],
    scores: np.ndarray[Any, np.dtype[Any]],
    scale: float,
    *,
    server: str | None,
    limit: int,
) -> list[SearchHit]:
    """The best tools as hits with relevance = score × scale, clipped to [0, 1]."""
    return [
        SearchHit(tools[i], round(min(1.0, max(0.0, float(scores[i]) * scale)), 3))
        for i in rank(tools, scores, server=server, limit=limit)
    ]


def interleave(rankings: Sequence[Sequence[SearchHit]], limit: int) -> list[SearchHit]:
    """Several queries' hits merged round-robin (first of each, then second of each, ...), each tool once.

    Round-robin rather than by relevance, so that every query's best tools surface even when
    another query's scores run higher.
    """
    seen: set[tuple[str, str]] = set()
    merged: list[SearchHit] = []
    for rank_index in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if rank_index < len(ranking):
                hit = ranking[rank_index]
                key = (hit.tool.server, hit.tool.name)
                if key not in seen:
                    seen.add(key)
                    merged.append(hit)
                    if len(merged) >= limit:
                        return merged
    return merged


def server_context(description: str | None, instructions: str | None) -> str:
    """What a server says about itself (its description, its instructions): context in the index for
    all of its tools (`SearchBackend.rebuild`)."""
    return " ".join(p for p in (description, instructions) if p)


def check_queries(query: str | Sequence[str], limit: int) -> list[str]:
    """The queries of a search (one, or one per step of a task), or `InvalidRequest` saying what is wrong."""
    queries = [query] if isinstance(query, str) else list(query)
    if not queries or not all(q.strip() for q in queries):
        raise InvalidRequest("The search query is empty; describe the task, e.g. 'convert miles to km'.")
    if limit < 1:
        raise InvalidRequest(f"limit must be at least 1, got {limit}.")
    return queries


def search_steps(
    backend: SearchBackend, queries: Sequence[str], *, server: str | None, limit: int, min_relevance: float
) -> list[SearchHit]:
    """What a search answers (the gateway's, and the command line's from the stored catalog): each
    query ranked by `backend` without the hits below `min_relevance`; several merged round-robin."""
    rankings = [
        [h for h in backend.search(q, server=server, limit=limit) if h.relevance >= min_relevance] for q in queries
    ]
    if len(rankings) == 1:
        return rankings[0]
    return interleave(rankings, limit)
