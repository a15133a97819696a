"""The search index of the catalog: built in a worker thread at start, rebuilt there when the
catalog changed, scored there too, one search or rebuild at a time; queries capped before any work.

The event loop never builds, rebuilds or scores: a rebuild of 10,000 tools takes a second, and
scoring a long query on a large catalog takes milliseconds per step, while other clients wait.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.abc

from toolscout.catalog import Catalog
from toolscout.config.models import (
    DEFAULT_MAX_QUERY_CHARS,
    DEFAULT_MAX_QUERY_STEPS,
    DEFAULT_MIN_RELEVANCE,
    SearchConfig,
)
from toolscout.config.scopes import Scope, current_scope
from toolscout.gateway.scoped_search import ScopedIndexes
from toolscout.gateway.upstreams import UpstreamRegistry
from toolscout.gateway.visibility import Visibility, narrows

if TYPE_CHECKING:  # the search package (numpy, the model) is imported in a worker thread at start
    from toolscout.search import SearchBackend, SearchHit
    from toolscout.search.base import Method, MethodHit
    from toolscout.upstream.connection import Upstream

logger = logging.getLogger(__name__)

T = TypeVar("T")


def build_backend(name: str = "hybrid", model: str = "static") -> SearchBackend:
    """The search backend `name` with `model` (the search package is imported here, on first use)."""
    from toolscout.search import make_backend

    return make_backend(name, model=model)


def search_settings(config: SearchConfig, given: Mapping[str, Any]) -> dict[str, Any]:
    """The `Gateway` arguments `config` gives the search, those in `given` (a caller's own) left out."""
    build = functools.partial(build_backend, config.backend, config.model)
    settings: dict[str, Any] = {
        "min_relevance": config.min_relevance,
        "max_query_chars": config.max_query_chars,
        "max_query_steps": config.max_query_steps,
    }
    if config.model == "minilm":
        # Built here, as ever: a missing extra must stop `serve` at once with its config error.
        settings["search"] = build() if "search" not in given else None
    elif "search" not in given:
        # Built in a worker thread when the gateway starts, off the path to the client's handshake.
        settings["search_factory"] = build
    return {key: value for key, value in settings.items() if key not in given}


class SearchIndex:
    """The enabled tools of `catalog`, searchable; the servers' descriptions and instructions
    (from `upstreams`) give their tools context.

    `search`: a backend already built; else `search_factory` (default: `build_backend()`) builds
    one in a worker thread at start.
    """

    def __init__(
        self,
        catalog: Catalog,
        upstreams: UpstreamRegistry,
        *,
        search: SearchBackend | None = None,
        search_factory: Callable[[], SearchBackend] | None = None,
        min_relevance: float = DEFAULT_MIN_RELEVANCE,
        max_query_chars: int = DEFAULT_MAX_QUERY_CHARS,
        max_query_steps: int = DEFAULT_MAX_QUERY_STEPS,
    ) -> None:
        self._catalog = catalog
        self._upstreams = upstreams
        self._search = search
        """None until built by `_search_factory` (the default backend without one): see `_backend`."""
        self._search_factory = search_factory
        self._search_lock = threading.Lock()
        self._min_relevance = min_relevance
        self._max_query_chars, self._max_query_steps = max_query_chars, max_query_steps
        self._indexed_version = -1
        self._visibility = Visibility(upstreams, catalog)
        self._scoped = ScopedIndexes(
            self._visibility, lambda: (catalog.version, tuple(u.name for u in upstreams)), self.server_context
        )
        # All three made in `start`, in the event loop they belong to.
        self._index_lock: anyio.Lock
        """Held while the index is rebuilt (in a worker thread) or read: one at a time, off the event loop."""
        self._loading: anyio.CancelScope
        """Around the index built at start; cancelled when the gateway stops, not to wait for it."""
        self.built_at_start: anyio.Event
        """Set once the index built at start (of the stored catalog, if any) is ready, or failed."""

    @property
    def min_relevance(self) -> float:
        """The relevance below which `search` leaves hits out unless asked otherwise."""
        return self._min_relevance

    def start(self, task_group: anyio.abc.TaskGroup) -> None:
        """Build the index in `task_group` now, while the client is still connecting, so that the
        first search is answered from it at once."""
        self._index_lock, self._loading = anyio.Lock(), anyio.CancelScope()
        self.built_at_start = anyio.Event()
        task_group.start_soon(self._build_at_start, name="search index")

    def stop(self) -> None:
        """Abandon the index built at start, if it is still being built (no search can come after)."""
        self._loading.cancel()

    async def _build_at_start(self) -> None:
        try:
            with self._loading:
                async with self._index_lock:
                    # Abandoned only when the gateway stops: no search can come after.
                    await self._indexed(abandon_on_cancel=True)
        except Exception as exc:  # raised again where the backend is used, for the caller to report
            logger.warning("the search backend could not be built: %s", exc)
        finally:
            self.built_at_start.set()

    async def search(
        self,
        query: str | Sequence[str],
        *,
        server: str | None = None,
        limit: int = 10,
        min_relevance: float | None = None,
    ) -> list[SearchHit]:
        """Enabled tools ranked for `query` (see `Gateway.search`): the query is checked against its
        caps and `server` looked up before any work; the index is rebuilt first if the catalog changed.

        Within the scope of the request (`current_scope()`), only the tools it sees are searched, by an
        index of those tools alone (scoped_search.py): what it cannot see changes no ranking.
        """
        from toolscout.search.base import check_queries, search_steps

        scope = current_scope()
        floor = self._min_relevance if min_relevance is None else min_relevance
        check_queries(query, limit, floor, max_chars=self._max_query_chars, max_steps=self._max_query_steps)
        if server is not None:
            self._visibility.named(server, scope)
        return await self._scored(
            functools.partial(search_steps, query=query, server=server, limit=limit, min_relevance=floor)
        )

    async def by_method(
        self, query: str, *, limit: int, method: Method, prefer: frozenset[str] = frozenset()
    ) -> list[MethodHit]:
        """The candidates of smart mode: the best `limit` tools by `method`, with every method's
        scores (`search.base.method_hits`), within the request's scope as `search` is."""
        from toolscout.search.base import check_queries, method_hits

        check_queries(query, limit, 0.0, max_chars=self._max_query_chars, max_steps=self._max_query_steps)
        return await self._scored(
            functools.partial(method_hits, query=query, limit=limit, method=method, prefer=prefer)
        )

    async def _scored(self, rank: Callable[[SearchBackend], T]) -> T:
        """`rank(backend)` on the index the request's scope searches (the whole one, or its own)."""
        scope = current_scope()
        async with self._index_lock:
            backend = await self._indexed()
            if narrows(scope):
                backend = await self._scoped.backend(scope, backend)
            # Scoring takes milliseconds per step on a large catalog, more on a long query: in a worker
            # thread, the event loop goes on answering other clients. Under the lock, no rebuild can
            # swap the index underneath it (one search at a time reads it).
            return await anyio.to_thread.run_sync(rank, backend)

    async def _indexed(self, *, abandon_on_cancel: bool = False) -> SearchBackend:
        """The search backend with the catalog as it is now indexed, both built in a worker thread
        (a rebuild of 10,000 tools takes a second: the event loop goes on serving calls meanwhile).
        The caller holds `_index_lock`."""
        backend = self._search or await anyio.to_thread.run_sync(self._backend, abandon_on_cancel=abandon_on_cancel)
        if self._indexed_version != self._catalog.version:
            version, tools, context = self._catalog.version, self._catalog.tools(), self.server_context()
            await anyio.to_thread.run_sync(backend.rebuild, tools, context, abandon_on_cancel=abandon_on_cancel)
            self._indexed_version = version
        return backend

    def _backend(self) -> SearchBackend:
        """The search backend, built on first use (from any thread: at start, a worker's)."""
        with self._search_lock:
            if self._search is None:
                self._search = (self._search_factory or build_backend)()
            return self._search

    def server_context(self, scope: Scope | None = None) -> dict[str, str]:
        """What each server (each one `scope` sees, if given) says about itself: context for its tools."""
        return server_contexts(self._upstreams if scope is None else self._visibility.upstreams(scope))


def server_contexts(upstreams: Iterable[Upstream]) -> dict[str, str]:
    """What each of `upstreams` says about itself (description, instructions), by name: context for its tools."""
    from toolscout.search.base import server_context

    return {
        up.name: server_context(up.description, up.identity.instructions if up.identity else None) for up in upstreams
    }
