"""The search index of the catalog, and one more for each scope that narrows what it sees.

The gateway's index is built in a worker thread at start, rebuilt there when the catalog changed
and scored there too, one search or rebuild at a time; queries are capped before any work. The
event loop never builds, rebuilds or scores, because rebuilding a large catalog's index, or
scoring a long query on it, would keep other clients waiting.

A catalog with many tools the embedding model has never read (the first start at 10,000 tools, a
new model) is embedded in the background: meanwhile searches are answered by an index of the
tools' words alone, built in a fraction of the time, and say so (`ranked_by_words`); when the
embeddings are done, the full index takes over.

A scope that narrows gets an index of its own, with only the tools it sees, ranked as if there
were no others. Filtering the whole catalog's hits would answer within a scope, but not as well:
BM25's IDF and the scores' scale (relevance is relative to the best hit) would still count the
tools outside it, so one token's ranking would depend on what other namespaces registered. So
each such scope gets a backend of the same kind as the gateway's (sharing its embedding model),
built from the tools it sees in a worker thread, kept for the last `MAX_SCOPES` scopes used, and
rebuilt when what it sees changed (a change elsewhere in the catalog costs it no rebuild).

A search that asks for the disabled tools too (`search_tools(includeDisabled: true)`, `toolscout
search --all`) is answered by another index, of every tool the rules disable as well as the enabled
ones, so that the default index and its rankings stay as they are. It is built the first time it is
asked for (in a worker thread, of the same kind as the gateway's, sharing its model) and again when
the catalog changed; a scope that narrows gets its hits filtered (`FilteredBackend`).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.abc

from toolscout.catalog import Catalog, CatalogTool
from toolscout.config.models import (
    DEFAULT_MAX_QUERY_CHARS,
    DEFAULT_MAX_QUERY_STEPS,
    DEFAULT_MIN_RELEVANCE,
    EmbeddingsConfig,
    SearchConfig,
)
from toolscout.config.scopes import Scope, current_scope
from toolscout.gateway.upstreams import UpstreamRegistry
from toolscout.gateway.visibility import MAX_SCOPES, Visibility, narrows, scope_key

if TYPE_CHECKING:  # the search package (numpy, the model) is imported in a worker thread at start
    from toolscout.search import SearchBackend, SearchHit
    from toolscout.search.base import Explained, Method, MethodHit
    from toolscout.search.embedding import DenseBackend, VectorCache
    from toolscout.upstream.connection import Upstream


logger = logging.getLogger(__name__)

T = TypeVar("T")


_SEARCH_IMPORT = threading.Lock()


def import_search_package() -> None:
    """Import the search package (and numpy, bm25s and the text tools under it) in one thread at a time.

    Python locks each module on its own while importing it. The index imports this package in a worker
    thread so the event loop keeps answering; if the event loop's thread meanwhile imports one of its
    submodules (smart mode's memory needs `search.text`), each thread can come to hold a lock the other
    waits for, and Python breaks the deadlock by failing one of the imports. Whoever comes second waits
    here for the whole package instead; once it is imported, this is an uncontended lock.
    """
    with _SEARCH_IMPORT:
        import toolscout.search  # noqa: F401  # pyright: ignore[reportUnusedImport]


def build_backend(
    name: str = "hybrid", model: str = "static", embeddings: EmbeddingsConfig | None = None, fuzzy_names: bool = True
) -> SearchBackend:
    """The search backend `name` with `model`, or `embeddings`' provider (the search package is imported
    here, on first use)."""
    import_search_package()
    from toolscout.search import make_backend

    return make_backend(name, model=model, embeddings=embeddings, fuzzy_names=fuzzy_names)


def search_settings(config: SearchConfig, given: Mapping[str, Any]) -> dict[str, Any]:
    """The `Gateway` arguments `config` gives the search, those in `given` (a caller's own) left out."""
    build = functools.partial(build_backend, config.backend, config.model, config.embeddings, config.fuzzy_names)
    settings: dict[str, Any] = {
        "min_relevance": config.min_relevance,
        "max_query_chars": config.max_query_chars,
        "max_query_steps": config.max_query_steps,
    }
    if config.model == "minilm" and config.embeddings is None:
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
        embed_in_background: bool = False,
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
        self._task_group: anyio.abc.TaskGroup | None = None
        """Where tools are embedded in the background (set in `start`)."""
        self._words_only: SearchBackend | None = None
        """While the full index embeds in the background: an index of the tools' words, for searches."""
        self._words_only_version = -1
        self._embed_in_background = embed_in_background
        """For a gateway that keeps running (serve): a command that answers once builds the full index
        at once, since a background build would be abandoned when it exits, its vectors never cached."""
        self._embedded: anyio.Event | None = None
        """While an embedding runs in the background: set when it is done (made in the event loop)."""
        self._with_disabled: tuple[object, SearchBackend] | None = None
        """The index of every tool, disabled ones too, with what it was built from (see the module's doc)."""

    @property
    def min_relevance(self) -> float:
        """The relevance below which `search` leaves hits out unless asked otherwise."""
        return self._min_relevance

    @property
    def backend(self) -> SearchBackend | None:
        """The search backend, once built (None before)."""
        return self._search

    def start(self, task_group: anyio.abc.TaskGroup) -> None:
        """Build the index in `task_group` now, while the client is still connecting, so that the
        first search is answered from it at once."""
        self._index_lock, self._loading = anyio.Lock(), anyio.CancelScope()
        self.built_at_start = anyio.Event()
        self._task_group = task_group
        self._embedding = anyio.CancelScope()
        """Around every embedding in the background; cancelled when the gateway stops, not to wait for it."""
        task_group.start_soon(self._build_at_start, name="search index")

    @property
    def ranked_by_words(self) -> bool:
        """Whether searches are answered by the tools' words alone just now, while the embeddings are built."""
        return self._words_only is not None

    def stop(self) -> None:
        """Abandon the index built at start and the embedding in the background, if they are still
        running (no search can come after)."""
        self._loading.cancel()
        self._embedding.cancel()

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
        include_disabled: bool = False,
    ) -> list[SearchHit]:
        """Enabled tools ranked for `query` (see `Gateway.search`): the query is checked against its
        caps and `server` looked up before any work; the index is rebuilt first if the catalog changed.

        Within the scope of the request (`current_scope()`), only the tools it sees are searched, by an
        index of those tools alone (`ScopedIndexes` below): what it cannot see changes no ranking.
        `include_disabled`: the tools the rules disable too, from the index of every tool.
        """
        from toolscout.search.base import check_queries, search_steps

        scope = current_scope()
        floor = self._min_relevance if min_relevance is None else min_relevance
        check_queries(query, limit, floor, max_chars=self._max_query_chars, max_steps=self._max_query_steps)
        if server is not None:
            self._visibility.named(server, scope)
        rank = functools.partial(search_steps, query=query, server=server, limit=limit, min_relevance=floor)
        return await (self._scored_with_disabled(rank) if include_disabled else self._scored(rank))

    async def explain(
        self, query: str, *, server: str | None = None, limit: int = 10, min_relevance: float | None = None
    ) -> list[Explained]:
        """The hits `search` gives for `query`, in its order, each with what each ranker added to it."""
        from toolscout.search.base import check_queries, explain_hits

        floor = self._min_relevance if min_relevance is None else min_relevance
        check_queries(query, limit, floor, max_chars=self._max_query_chars, max_steps=self._max_query_steps)
        if server is not None:
            self._visibility.named(server, current_scope())
        return await self._scored(
            functools.partial(explain_hits, query=query, server=server, limit=limit, min_relevance=floor)
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
        """Run `rank(backend)` on the index the request's scope searches (the whole one, or its own)."""
        scope = current_scope()
        async with self._index_lock:
            backend = await self._indexed()
            if narrows(scope):
                backend = await self._scoped.backend(scope, backend)
            # Scoring takes milliseconds per step on a large catalog, more on a long query: in a worker
            # thread, the event loop goes on answering other clients. Under the lock, no rebuild can
            # swap the index underneath it (one search at a time reads it).
            return await anyio.to_thread.run_sync(rank, backend)

    async def _scored_with_disabled(self, rank: Callable[[SearchBackend], T]) -> T:
        """Run `rank(backend)` on the index of every tool, disabled ones too, within the request's scope."""
        scope = current_scope()
        async with self._index_lock:
            full = await self._indexed()
            built_from = (self._catalog.version, tuple(u.name for u in self._upstreams), full)
            if self._with_disabled is None or self._with_disabled[0] != built_from:
                # Not the unusable ones: no call can reach them, whatever the rules say.
                tools = [t for t in self._catalog.tools(include_disabled=True) if t.unusable is None]
                backend = await anyio.to_thread.run_sync(narrowed, full, tools, self.server_context())
                self._with_disabled = (built_from, backend)
            backend = self._with_disabled[1]
            if narrows(scope):
                backend = FilteredBackend(backend, self._visibility.tools(scope, include_disabled=True))
            return await anyio.to_thread.run_sync(rank, backend)

    async def _indexed(self, *, abandon_on_cancel: bool = False) -> SearchBackend:
        """The search backend with the catalog as it is now indexed, both built in a worker thread
        (a rebuild of a large catalog takes long: the event loop goes on serving calls meanwhile).
        The caller holds `_index_lock`."""
        backend = self._search or await anyio.to_thread.run_sync(self._backend, abandon_on_cancel=abandon_on_cancel)
        if self._indexed_version == self._catalog.version:
            return backend
        version, tools, context = self._catalog.version, self._catalog.tools(), self.server_context()
        if self._words_only is not None:  # the full index is still embedding: not to be touched
            return await self._by_words(backend, version, tools, context, abandon_on_cancel)
        if (
            self._embed_in_background
            and self._task_group is not None
            and await anyio.to_thread.run_sync(_embeds_long, backend, tools, abandon_on_cancel=abandon_on_cancel)
        ):
            words = await self._by_words(backend, version, tools, context, abandon_on_cancel)
            self._embedded = anyio.Event()
            self._task_group.start_soon(self._embed, backend, version, tools, context, name="search embeddings")
            logger.info("embedding %d tools in the background; searches rank by words until then", len(tools))
            return words

        await anyio.to_thread.run_sync(rebuilt, backend, tools, context, abandon_on_cancel=abandon_on_cancel)
        self._indexed_version = version
        return backend

    async def _by_words(
        self,
        backend: SearchBackend,
        version: int,
        tools: list[CatalogTool],
        context: dict[str, str],
        abandon_on_cancel: bool,
    ) -> SearchBackend:
        """The index of the tools' words (a hybrid backend without embeddings) at `version`, built if it is older."""
        from toolscout.search.hybrid import HybridBackend

        words = self._words_only
        if words is None or self._words_only_version != version:
            assert isinstance(backend, HybridBackend)  # only such a backend embeds in the background
            words = HybridBackend(None, backend.weights)
            words.names.fuzzy = backend.names.fuzzy
            await anyio.to_thread.run_sync(words.rebuild, tools, context, abandon_on_cancel=abandon_on_cancel)
            self._words_only, self._words_only_version = words, version
            self._scoped.clear()
        return words

    async def _embed(
        self, backend: SearchBackend, version: int, tools: list[CatalogTool], context: dict[str, str]
    ) -> None:
        """Build the full index in a worker thread, then let searches use it (a newer catalog is indexed
        by the next search, from the vectors now cached)."""
        done = self._embedded  # this embedding's: the next one, once searches may start it, has its own
        try:
            with self._embedding_scope():
                try:
                    await anyio.to_thread.run_sync(rebuilt, backend, tools, context, abandon_on_cancel=True)
                except Exception as exc:  # the next search builds it again, and reports what fails
                    logger.warning("the search embeddings could not be built: %s", exc)
                    async with self._index_lock:
                        self._words_only = None
                    return
                async with self._index_lock:
                    if self._search is backend:  # not replaced by `configure` meanwhile
                        self._indexed_version = version
                    self._words_only = None
                    self._scoped.clear()
                await anyio.to_thread.run_sync(release_freed_memory)  # what the words' index held
                logger.info("search embeddings ready: %d tools", len(tools))
        finally:
            if done is not None:
                done.set()

    def _embedding_scope(self) -> anyio.CancelScope:
        """A new cancel scope for one embedding, which `stop` cancels (a scope is entered once only)."""
        stopped = self._embedding.cancel_called
        self._embedding = anyio.CancelScope()
        if stopped:
            self._embedding.cancel()
        return self._embedding

    async def embedded(self) -> None:
        """Wait until no embedding runs in the background (bound it with a cancel scope)."""
        if self._embedded is not None:
            await self._embedded.wait()

    def configure(self, config: SearchConfig, factory: Callable[[], SearchBackend] | None) -> None:
        """Search by `config` from the next search on: its floor and caps at once; with `factory`, a new
        backend (another kind or model) built by it on first use, every scope's index dropped."""
        self._min_relevance = config.min_relevance
        self._max_query_chars, self._max_query_steps = config.max_query_chars, config.max_query_steps
        if factory is not None:
            with self._search_lock:
                self._search, self._search_factory = None, factory
            self._indexed_version = -1
            self._scoped.clear()
            self._with_disabled = None

    async def semantic_state(self, *, sync: bool) -> SemanticState:
        """What the embeddings hold against the catalog as it is now; with `sync`, the index rebuilt
        first (what is stale embedded, in a worker thread)."""
        from toolscout.search.embedding import DenseBackend, tool_key
        from toolscout.search.hybrid import HybridBackend

        if sync:  # what is asked for is the embeddings: those being built are waited for
            await self.embedded()
        async with self._index_lock:
            backend = self._search or await anyio.to_thread.run_sync(self._backend)
            dense = backend.dense if isinstance(backend, HybridBackend) else backend
            if sync and isinstance(dense, DenseBackend) and dense.fallback_reason is not None:
                self._indexed_version = -1  # a sync asks a provider that failed again
            before = self._indexed_version
            if sync:
                backend = await self._indexed()
            dense = backend.dense if isinstance(backend, HybridBackend) else backend
            if not isinstance(dense, DenseBackend):
                return SemanticState(None, None, 0, 0, rebuilt=sync and before != self._indexed_version)
            tools = self._catalog.tools()

            def compared() -> tuple[set[str], set[str]]:
                return dense.embedded(), {tool_key(t) for t in tools}  # hashing every text: off the loop

            indexed, current = await anyio.to_thread.run_sync(compared)
            stale = len(current - indexed) + len(indexed - current)  # to embed, and to drop
            changes = dense.take_changes() if sync else None
            return SemanticState(
                dense.space.model_id,
                dense.dimensions,
                len(indexed & current),
                stale,
                rebuilt=sync and before != self._indexed_version,
                configured=dense.embedder.model_id,
                fallback=dense.fallback_reason,
                created=changes.created if changes else 0,
                updated=changes.updated if changes else 0,
                unchanged=changes.unchanged if changes else 0,
                failed=changes.failed if changes else 0,
            )

    @property
    def scoped_indexes(self) -> int:
        """How many scopes have an index of their own just now."""
        return len(self._scoped)

    def _backend(self) -> SearchBackend:
        """The search backend, built on first use (from any thread: at start, a worker's)."""
        with self._search_lock:
            if self._search is None:
                self._search = (self._search_factory or build_backend)()
            return self._search

    def server_context(self, scope: Scope | None = None) -> dict[str, str]:
        """What each server (each one `scope` sees, if given) says about itself: context for its tools,
        and the document a server is ranked by (its description made from its tools when it says nothing)."""
        if scope is None:
            return server_contexts(self._upstreams)
        return server_contexts(self._visibility.upstreams(scope), lambda up: self._visibility.description(scope, up))


def server_contexts(upstreams: Iterable[Upstream], describe: Callable[[Upstream], str] | None = None) -> dict[str, str]:
    """What each of `upstreams` says about itself (description, instructions), by name: context for its
    tools. `describe`: its description as the request's scope reads it (default: `Upstream.description`)."""
    from toolscout.search.base import server_context

    return {
        up.name: server_context(
            describe(up) if describe is not None else up.description, up.identity.instructions if up.identity else None
        )
        for up in upstreams
    }


@dataclass(frozen=True)
class SemanticState:
    """The embeddings of the search index: the model (None without embeddings), its dimensions, how
    many tools are embedded, how many catalog changes they are behind by (tools added, removed or
    changed), and whether this question rebuilt them."""

    model: str | None
    dimensions: int | None
    embedded: int
    stale: int
    rebuilt: bool = False
    configured: str | None = None
    """The model configured (`model` differs while a provider's packaged fallback embeds)."""
    fallback: str | None = None
    """Why the configured provider is not embedding just now (None: it is)."""
    created: int = 0
    """With a sync, tools embedded for the first time since the last sync (or, after a restart, ever)."""
    updated: int = 0
    """Tools embedded again because their text changed."""
    unchanged: int = 0
    """Tools whose vectors were kept (from memory or the disk cache)."""
    failed: int = 0
    """Tools the configured provider could not embed (the packaged model did)."""


EMBED_AFRESH_UP_TO = 1_000
"""A scope seeing up to this many tools embeds them afresh; beyond, their vectors come from the cache."""
EMBED_IN_BACKGROUND_FROM = 1_000
"""Tools to embed from which the index is built in the background, searches ranking by words meanwhile
(fewer are embedded before the search is answered: a short wait, where ranking by words would cost
the answer its semantic half)."""


def _embeds_long(backend: SearchBackend, tools: Sequence[CatalogTool]) -> bool:
    """Whether indexing `tools` in `backend` means embedding at least `EMBED_IN_BACKGROUND_FROM` of them."""
    from toolscout.search.embedding import DenseBackend
    from toolscout.search.hybrid import HybridBackend

    if not isinstance(backend, HybridBackend) or not isinstance(backend.dense, DenseBackend):
        return False
    return len(tools) >= EMBED_IN_BACKGROUND_FROM and backend.dense.embeds_at_least(tools, EMBED_IN_BACKGROUND_FROM)


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
        """Return `scope`'s backend, rebuilt first (in a worker thread) if stale; the caller holds the index lock."""
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


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None where the C library is another (musl, macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def rebuilt(backend: SearchBackend, tools: Sequence[CatalogTool], context: Mapping[str, str]) -> None:
    """Rebuild `backend` with `tools` (in a worker thread), then give back what the build freed."""
    backend.rebuild(tools, context)
    release_freed_memory()


def release_freed_memory() -> None:
    """Give the memory an index build freed back to the system.

    A build runs in a worker thread, and glibc keeps what a thread frees in that thread's own
    arena, for the next allocation there. After a large catalog's build that is tens of MiB the
    process holds and never uses again (docs/BENCHMARKS.md, "Memory and start-up"); `malloc_trim(0)`
    returns the free pages of every arena. Without glibc it does nothing.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
