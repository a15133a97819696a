"""A search index per scope: only the tools a scope sees, ranked as if there were no others.

Filtering the whole catalog's hits would answer within a scope, but not as well: BM25's IDF and
the scores' scale (relevance is relative to the best hit) would still count the tools outside it,
so one token's ranking would depend on what other namespaces registered. So each scope that
narrows gets its own backend, of the same kind as the gateway's (sharing its embedding model),
built from the tools it sees in a worker thread, kept for the last `MAX_SCOPES` scopes used, and
rebuilt when what it sees changed (a change elsewhere in the catalog costs it no rebuild).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from toolscout.catalog import CatalogTool
from toolscout.config.scopes import Scope
from toolscout.gateway.visibility import MAX_SCOPES, Visibility, scope_key

if TYPE_CHECKING:  # the search package (numpy, the model) is imported in a worker thread at start
    from toolscout.search import SearchBackend, SearchHit
    from toolscout.search.embedding import DenseBackend, VectorCache

EMBED_AFRESH_UP_TO = 1_000
"""A scope seeing up to this many tools embeds them afresh; beyond, their vectors come from the cache."""


class FilteredBackend:
    """The gateway's own index with the hits a scope does not see left out: for a backend of a kind
    this module cannot make a sibling of (visibility is exact; relevance is the whole catalog's)."""

    def __init__(self, full: SearchBackend, tools: Sequence[CatalogTool]) -> None:
        self._full = full
        self._visible = {(t.server, t.name) for t in tools}

    def rebuild(self, tools: Sequence[CatalogTool], servers: Mapping[str, str] | None = None) -> None:
        self._visible = {(t.server, t.name) for t in tools}

    def search(self, query: str, *, server: str | None = None, limit: int = 10) -> list[SearchHit]:
        hits = self._full.search(query, server=server, limit=limit + 1_000_000)
        return [h for h in hits if (h.tool.server, h.tool.name) in self._visible][:limit]


def narrowed(full: SearchBackend, tools: Sequence[CatalogTool], context: Mapping[str, str]) -> SearchBackend:
    """A backend of `full`'s kind (its model shared) over `tools` only (in a worker thread)."""
    from toolscout.search.bm25 import BM25Backend
    from toolscout.search.embedding import DenseBackend
    from toolscout.search.hybrid import HybridBackend

    backend: SearchBackend
    # A scope's few tools are embedded afresh (reading the vector cache on disk costs more); a scope
    # that sees most of a large catalog reads their vectors from the gateway's cache instead.
    if isinstance(full, HybridBackend):
        dense = None if full.dense is None else DenseBackend(full.dense.embedder, _cache(full.dense, tools))
        backend = HybridBackend(dense, full.weights)
    elif isinstance(full, DenseBackend):
        backend = DenseBackend(full.embedder, _cache(full, tools))
    elif isinstance(full, BM25Backend):
        backend = BM25Backend(full.weights)
    else:
        return FilteredBackend(full, tools)
    backend.rebuild(tools, context)
    return backend


def _cache(full: DenseBackend, tools: Sequence[CatalogTool]) -> VectorCache | None:
    return full.cache if len(tools) > EMBED_AFRESH_UP_TO else None


@dataclass
class _Entry:
    version: object
    backend: SearchBackend
    tools: list[CatalogTool]
    context: dict[str, str]

    def covers(self, tools: list[CatalogTool], context: dict[str, str]) -> bool:
        """Whether the index was built from these very tools (the catalog keeps the entries of servers
        that did not change, so a change outside the scope leaves every one the same object)."""
        return (
            len(tools) == len(self.tools)
            and all(new is old for new, old in zip(tools, self.tools, strict=True))
            and context == self.context
        )


class ScopedIndexes:
    """The search backend of each scope that narrows, built from what it sees, least recently used dropped.

    `version()`: what, when it changes, makes every scope's index stale (the catalog's version and the
    set of servers); `context(scope)`: what the servers a scope sees say about themselves.
    """

    def __init__(
        self,
        visibility: Visibility,
        version: Callable[[], object],
        context: Callable[[Scope], dict[str, str]],
        *,
        max_scopes: int = MAX_SCOPES,
    ) -> None:
        self._visibility = visibility
        self._version = version
        self._context = context
        self._max_scopes = max_scopes
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    async def backend(self, scope: Scope, full: SearchBackend) -> SearchBackend:
        """`scope`'s backend, rebuilt first (in a worker thread) if stale; the caller holds the index lock."""
        key, version = scope_key(scope), self._version()
        entry = self._entries.get(key)
        if entry is not None and entry.version == version:
            self._entries.move_to_end(key)
            return entry.backend
        tools, context = self._visibility.tools(scope), self._context(scope)
        if entry is not None and entry.covers(tools, context):
            # The change was outside this scope (another namespace registered a server, say): its index
            # stands, and a flood of such changes costs its clients no rebuild.
            entry.version = version
            self._entries.move_to_end(key)
            return entry.backend
        backend = await anyio.to_thread.run_sync(narrowed, full, tools, context)
        self._entries[key] = _Entry(version, backend, tools, context)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_scopes:
            self._entries.popitem(last=False)
        return backend

    def clear(self) -> None:
        """Forget every scope's index (the gateway's own backend changed)."""
        self._entries.clear()
