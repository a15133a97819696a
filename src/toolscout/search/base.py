"""The seam every search backend fits, and what every backend shares: ranking, steps, query checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from toolscout.catalog import CatalogTool
from toolscout.errors import InvalidArguments


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A tool found for a query. `relevance` is in [0, 1], higher is better.

    `steps`: for a query given as a list of steps, the indexes (from 0) of the steps it answers.
    """

    tool: CatalogTool
    relevance: float
    steps: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class MethodHit:
    """A candidate tool with what each search method says of it, for smart mode's choice of a tool.

    `rule`: names and BM25 (the relevance BM25 alone gives, or a name's match), `semantic`: the
    embeddings' cosine (None without embeddings), both in [0, 1]; `relevance`: the default search's
    own, its calibrated fusion of the two (about the chance that the tool is one the query needs).
    """

    tool: CatalogTool
    rule: float
    semantic: float | None
    relevance: float


Method = Literal["hybrid", "rule", "semantic"]
"""Which ranking picks the candidates of `by_method`."""


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


def merge_steps(rankings: Sequence[Sequence[SearchHit]], limit: int) -> list[SearchHit]:
    """The rankings of a task's steps as one list, each tool once, tagged with the steps it answers.

    Every step's best tool comes first, in step order, even when there are more steps than
    `limit` (the list then has one tool per step): a step is never left out. The rest is filled
    round-robin (second of each step, then third, ...) up to `limit`, so that every step's tools
    surface even when another step's scores run higher. A tool reached from several steps is
    listed once, with all of them in `steps`.
    """
    merged: dict[tuple[str, str], SearchHit] = {}

    def take(step: int, hit: SearchHit) -> None:
        key = (hit.tool.server, hit.tool.name)
        found = merged.get(key)
        if found is None:
            merged[key] = replace(hit, steps=(step,))
        elif step not in found.steps:
            merged[key] = replace(found, steps=(*found.steps, step))

    for step, ranking in enumerate(rankings):
        if ranking:
            take(step, ranking[0])
    for rank_index in range(1, max((len(r) for r in rankings), default=0)):
        for step, ranking in enumerate(rankings):
            if len(merged) >= limit:
                return list(merged.values())
            if rank_index < len(ranking):
                take(step, ranking[rank_index])
    return list(merged.values())


def server_context(description: str | None, instructions: str | None) -> str:
    """What a server says about itself (its description, its instructions): context in the index for
    all of its tools (`SearchBackend.rebuild`)."""
    return " ".join(p for p in (description, instructions) if p)


def check_queries(
    query: str | Sequence[str], limit: int, min_relevance: float, *, max_chars: int, max_steps: int
) -> list[str]:
    """The queries of a search (one, or one per step of a task), or `InvalidArguments` saying what is wrong.

    `max_chars` bounds the characters of all the queries together, `max_steps` the number of steps
    (`search.maxQueryChars`, `search.maxQuerySteps`): scoring costs time in proportion to both.
    """
    queries = [query] if isinstance(query, str) else list(query)
    if len(queries) > max_steps:
        raise InvalidArguments(
            f"The task has {len(queries):,} steps; a search takes at most {max_steps:,} "
            f"(search.maxQuerySteps). Search for the first {max_steps:,} steps, then for the rest."
        )
    size = sum(len(q) for q in queries)
    if size > max_chars:
        what = "The search query has" if isinstance(query, str) else "The task's steps have"
        raise InvalidArguments(
            f"{what} {size:,} characters; a search takes at most {max_chars:,} (search.maxQueryChars). "
            "Describe what the tool should do in a sentence or two, without the data it will work on"
            f"{'' if isinstance(query, str) else ', or search for a few steps at a time'}."
        )
    if not queries or not all(q.strip() for q in queries):
        raise InvalidArguments("The search query is empty; describe the task, e.g. 'convert miles to km'.")
    if limit < 1:
        raise InvalidArguments(f"limit must be at least 1, got {limit}.")
    if not 0.0 <= min_relevance <= 1.0:
        raise InvalidArguments(f"minRelevance must be between 0 and 1 (0 keeps every match), got {min_relevance}.")
    return queries


def search_steps(
    backend: SearchBackend,
    query: str | Sequence[str],
    *,
    server: str | None,
    limit: int,
    min_relevance: float,
) -> list[SearchHit]:
    """What a search answers (the gateway's, and the command line's from the stored catalog).

    One query: its ranking without the hits below `min_relevance`. A list is the steps of a task:
    each step is ranked on its own and the floor cuts each step's tail, never its best tool, so a
    step keeps the answer it has (`merge_steps`).
    """
    if isinstance(query, str):
        return [h for h in backend.search(query, server=server, limit=limit) if h.relevance >= min_relevance]
    rankings = [backend.search(q, server=server, limit=limit) for q in query]
    return merge_steps([r[:1] + [h for h in r[1:] if h.relevance >= min_relevance] for r in rankings], limit)


@runtime_checkable
class MethodScorer(Protocol):
    """A backend that can say what each search method thinks of its candidates (the hybrid one)."""

    def by_method(
        self, query: str, *, limit: int, method: Method = "hybrid", prefer: frozenset[str] = frozenset()
    ) -> list[MethodHit]: ...


def method_hits(
    backend: SearchBackend, query: str, *, limit: int, method: Method, prefer: frozenset[str] = frozenset()
) -> list[MethodHit]:
    """Return what each search method says of the best candidates, by `by_method` when the backend has it.

    A backend that ranks by one method only (`search.backend: bm25` or `dense`) gives its ranking as
    that method's scores, and nothing from the other."""
    if isinstance(backend, MethodScorer):
        return backend.by_method(query, limit=limit, method=method, prefer=prefer)
    dense = getattr(backend, "ranks_by", "rule") == "semantic"
    return [
        MethodHit(h.tool, 0.0 if dense else h.relevance, h.relevance if dense else None, h.relevance)
        for h in backend.search(query, limit=limit)
    ]


@runtime_checkable
class Explainer(Protocol):
    """A backend that can say what each of its rankers adds to a hit's score (the hybrid one)."""

    def contributions(self, query: str, tools: Sequence[CatalogTool]) -> list[dict[str, float]]: ...


Explained = tuple[SearchHit, dict[str, float]]
"""A hit and each ranker's part in it (`Explainer.contributions`)."""


def explain_hits(
    backend: SearchBackend, query: str, *, server: str | None, limit: int, min_relevance: float
) -> list[Explained]:
    """The hits `search_steps` gives for `query`, in its order, each with what each ranker added.

    A backend of one ranker gives its relevance as that ranker's part, and as the fusion."""
    hits = search_steps(backend, query, server=server, limit=limit, min_relevance=min_relevance)
    if isinstance(backend, Explainer):
        return list(zip(hits, backend.contributions(query, [h.tool for h in hits]), strict=True))
    ranks_by = getattr(backend, "ranks_by", None)
    own = {"semantic": "embeddings", "rule": "lexical"}.get(ranks_by) if isinstance(ranks_by, str) else None
    return [(h, ({own: h.relevance} if own else {}) | {"fusion": h.relevance}) for h in hits]
