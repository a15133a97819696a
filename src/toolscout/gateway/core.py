"""The gateway: upstream connections, the catalog and search behind one facade.

The MCP server (serve/) and the CLI call only this; it raises `ToolscoutError`s, which they turn
into MCP results or exit codes. Its parts, each built whole before the next: the upstreams by name
(`upstreams.py`), the catalog (`toolscout.catalog`), what is kept of it between runs
(`snapshots.py`), the search index (`index.py`), the start-up policy (`runtime.py`), resources and
prompts (`resources/`). The facade runs them (entered once), finds servers and tools, and executes a
call: look up, validate, call, cap the result, audit.

The caps on a result live here too, at the end. Long text is cut with a notice and nothing else is
touched; a result too large for a client to read in one message (`fit_result`) is cut to fit or
refused. Only text blocks count and only text is cut: `structuredContent` is data for programs, and
images, audio and resources are not divisible, so they pass whole. The notice says how much was
dropped and how to get it, because a model that does not know output was cut will trust it."""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Coroutine, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, TypeVarTuple, cast

import anyio
import anyio.abc
import anyio.to_thread
import mcp_types as types

from toolscout.catalog import Catalog, CatalogTool
from toolscout.config.models import (
    DEFAULT_MAX_CONNECTING,
    DEFAULT_MAX_QUERY_CHARS,
    DEFAULT_MAX_QUERY_STEPS,
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MIN_RELEVANCE,
    ConfiguredServers,
    GatewayConfig,
    ListCacheConfig,
    SearchConfig,
    ServerSource,
    SmartConfig,
)
from toolscout.config.rules import RuleSet
from toolscout.config.scopes import Scope, current_scope, scoped
from toolscout.config.secrets import config_secrets, shown_server
from toolscout.errors import InvalidArguments, ToolscoutError
from toolscout.gateway.audit import AuditLog
from toolscout.gateway.explain import ExplainedHit, explained, smart_scores
from toolscout.gateway.gauges import state_families, vector_cache
from toolscout.gateway.index import SearchIndex, SemanticState, build_backend, search_settings
from toolscout.gateway.pins import ToolPins
from toolscout.gateway.runtime import ServerChanges, ServerSet, Startup
from toolscout.gateway.snapshots import Snapshots
from toolscout.gateway.stats import DiscoveryStats
from toolscout.gateway.store import SnapshotStore, catalog_store
from toolscout.gateway.upstreams import UpstreamRegistry, wait_until_connected
from toolscout.gateway.validation import ArgumentValidator
from toolscout.gateway.visibility import Visibility
from toolscout.masking import install_log_masking, remember_secrets
from toolscout.resources.core import Mirror
from toolscout.telemetry.metrics import Metrics
from toolscout.upstream import Status, Upstream, UpstreamSpec
from toolscout.upstream.calls import current_relay, without_hop_metadata
from toolscout.upstream.connection import ListKind

if TYPE_CHECKING:  # the search package (numpy, the model) is imported in a worker thread at start
    from toolscout.search import SearchBackend, SearchHit
    from toolscout.search.base import Method, MethodHit
    from toolscout.smart.selection import LLMPick

logger = logging.getLogger(__name__)

Ts = TypeVarTuple("Ts")
T = TypeVar("T")

ResultShape = Callable[[types.CallToolResult], Awaitable[types.CallToolResult]]
Confirm = Callable[[CatalogTool, dict[str, Any]], Awaitable[None]]
"""Asked of a call admitted and validated, just before it leaves for its server; raises to refuse it."""
"""What a mode makes of an upstream's result before the caps on its text and size (compact mode's TOON)."""


class Gateway:
    """Connects to every enabled upstream and answers questions about their tools.

    Use as an async context manager, once: entering starts one task per upstream and returns at
    once, so a slow or broken server never delays readiness; a gateway that was entered cannot be
    entered again (not while it runs, nor after it stopped): make a new one.
    """

    def __init__(
        self,
        specs: Sequence[UpstreamSpec],
        *,
        rules: RuleSet | None = None,
        search: SearchBackend | None = None,
        search_factory: Callable[[], SearchBackend] | None = None,
        min_relevance: float = DEFAULT_MIN_RELEVANCE,
        max_query_chars: int = DEFAULT_MAX_QUERY_CHARS,
        max_query_steps: int = DEFAULT_MAX_QUERY_STEPS,
        max_output_chars: int | None = None,
        max_result_bytes: int | None = DEFAULT_MAX_RESULT_BYTES,
        audit: AuditLog | None = None,
        catalog_store: SnapshotStore | None = None,
        pins: ToolPins | None = None,
        metrics: Metrics | None = None,
        max_connecting: int | None = DEFAULT_MAX_CONNECTING,
        embed_in_background: bool = False,
    ) -> None:
        install_log_masking()  # whoever runs a gateway, its log masks secrets (toolscout.masking)
        names = [s.name for s in specs]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate upstream names in {names}")
        self.metrics = metrics or Metrics()
        """This gateway's metrics (`toolscout.telemetry.metrics`): what `/metrics` writes, and what a page
        may read (`Metrics.tool_calls`); recorded by its upstreams, its searches and its MCP face."""
        self.rules = rules or RuleSet()
        """`toolRules`: tools through the catalog, prompts and resources through `mirror`."""
        self.pins = pins or ToolPins()
        """Tool definitions pinned on first sight (`toolPinning`): a changed one is reported, or quarantined."""
        self.catalog = Catalog(self.rules, quarantined=self.pins.quarantined)
        self.pins.on_changed = self.catalog.rules_changed  # approved or reset elsewhere: judged again
        self._connecting = anyio.CapacityLimiter(max_connecting) if max_connecting is not None else None
        """The places of the servers connecting at once (`maxConnecting`; None: no limit)."""
        # An upstream reports to the gateway's methods below, which hand on to the parts built
        # after it; it runs (and reports) only once the gateway is entered, all parts built.
        self._upstreams = UpstreamRegistry(self._new_upstream(spec) for spec in specs)
        self.catalog.order_servers(self._upstreams.names)  # not the order they happen to connect in
        self.visibility = Visibility(self._upstreams, self.catalog)
        """What the scope of the request being served sees (`current_scope()`): every lookup below asks it."""
        self._snapshots = Snapshots(catalog_store, self._upstreams)
        self._index = SearchIndex(
            self.catalog,
            self._upstreams,
            search=search,
            search_factory=search_factory,
            min_relevance=min_relevance,
            max_query_chars=max_query_chars,
            max_query_steps=max_query_steps,
            embed_in_background=embed_in_background,
        )
        self._startup = Startup(self._upstreams, self._snapshots.answers_for)
        self.validator = ArgumentValidator()
        """Arguments against input schemas (every execution's check; smart mode's LLM answers too)."""
        self.max_output_chars = max_output_chars
        """Default cap on the text of a tool's result (None: no cap); a call may ask for another."""
        self.max_result_bytes = max_result_bytes
        """The most bytes of JSON a tool's result may be (`maxResultBytes`): cut to fit, else refused."""
        self._state: Literal["new", "running", "stopped"] = "new"
        self._task_group: anyio.abc.TaskGroup | None = None
        self.audit = self.pins.audit = audit
        """Where every execution (and changed tool definition) is recorded (None: nowhere)."""
        # Built last, from the parts above (its background fetches run in the gateway's task group).
        self.mirror = Mirror(self, self.rules, on_listed=self._snapshots.content_listed)
        """The upstreams' resources and prompts under gateway names (resources/)."""
        parts = (self.catalog, self.mirror, self._snapshots)
        self._servers = ServerSet(self._upstreams, self._startup, *parts, build=self._new_upstream)
        self._servers.state = lambda: self._state
        # What the metrics read from this gateway when scraped (gateway/gauges.py).
        self.metrics.add_source(functools.partial(state_families, self))
        self.metrics.add_cache("embeddings", lambda: vector_cache(self.search_backend))
        self.stats = DiscoveryStats()
        """What searches and smart calls were made, and how the caches answered (the HTTP API's stats)."""
        self.search_config = SearchConfig(
            min_relevance=min_relevance, max_query_chars=max_query_chars, max_query_steps=max_query_steps
        )
        """The `search` settings searches run by (`configure_search` changes them while running)."""
        self.list_cache = ListCacheConfig()
        """`cache`: how long a server's tool list answers listings before it is listed again (a reload sets it)."""
        self.smart: SmartConfig | None = None
        """Smart mode's settings when a client may call `smart_tool_discovery` (`explain_search` adds its scores)."""
        self.llm_picks: list[Callable[[str], Mapping[tuple[str, str], LLMPick] | None]] = []
        """Where smart mode's engines remember the LLM's picks for a request (`explain_search` shows them)."""

    @classmethod
    def from_config(
        cls,
        config: GatewayConfig,
        *,
        only: Collection[str] | None = None,
        reconnect: bool | None = None,
        lazy: bool | None = None,
        source: ServerSource | None = None,
        **kwargs: Any,
    ) -> Gateway:
        """A gateway for the configured servers (or just those named in `only`).

        `source`: where the upstream servers come from (default: the config's `mcpServers`, the
        `ServerSource` seam's one implementation today). `reconnect=False`: one connection attempt
        per server, whatever the config says (for a command that ends once it has its answer, a
        server trying again would only be waited for). `lazy=True`: every server whose tools are
        known (stored or declared) waits for a call before it connects, as `connect: lazy` does.
        """
        remember_secrets(config_secrets(config))  # a config built in code, not read by load_config
        servers = (source or ConfiguredServers(config, only)).servers()
        specs = [UpstreamSpec.from_config(name, server) for name, server in servers.items()]
        if reconnect is not None:
            specs = [dataclasses.replace(spec, reconnect=reconnect) for spec in specs]
        if lazy is not None:
            specs = [dataclasses.replace(spec, lazy=lazy) for spec in specs]
        kwargs.update(search_settings(config.search, kwargs))
        kwargs.setdefault("max_output_chars", config.max_output_chars)
        kwargs.setdefault("max_result_bytes", config.max_result_bytes)
        kwargs.setdefault("max_connecting", config.max_connecting)
        if config.audit.enabled:
            kwargs.setdefault("audit", AuditLog.from_config(config.audit))
        if config.catalog_cache.enabled:
            kwargs.setdefault("catalog_store", catalog_store(config))  # shared through Redis by replicas
        kwargs.setdefault("pins", ToolPins.from_config(config))
        kwargs.setdefault("metrics", Metrics(enabled=config.telemetry.metrics.enabled))
        gateway = cls(specs, rules=RuleSet(config.tool_rules, config.tool_rules_evaluation), **kwargs)
        gateway.search_config = config.search
        gateway.list_cache = config.cache
        if config.mode == "smart" or config.smart_tool:
            gateway.smart = config.smart
        return gateway

    # Lifecycle

    async def __aenter__(self) -> Gateway:
        if self._state != "new":
            raise RuntimeError(
                f"this gateway was already entered ({self._state}): a Gateway runs once; make a new one to start again"
            )
        self._state = "running"
        try:
            await self.pins.load()  # before any tool is judged, the stored catalog's included
            # Before any upstream starts: from here on, catalog questions about a server with a stored
            # catalog are answered at once, whatever its connection does.
            for name, snapshot in (await self._snapshots.load()).items():
                self.mirror.use_stored(self._upstreams.named(name), snapshot.content())
            self._task_group = await anyio.create_task_group().__aenter__()
        except BaseException:
            self._state = "stopped"
            raise
        # The search index first (the first search needs it), then the store's writer, then the upstreams.
        self._index.start(self._task_group)
        self._task_group.start_soon(self._snapshots.save_until_closed, name="catalog store")
        self._task_group.start_soon(self.pins.follow, name="tool pins")
        self._servers.runner.attach(self._task_group)
        self._startup.start(self._task_group, self._servers.runner.start, self._index.built_at_start)
        if self.audit is not None:
            self.audit.open()  # never raises: an unwritable log is a warning, not a reason not to serve
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        self._state = "stopped"
        self._startup.stop()  # upstreams not started yet never start
        self._index.stop()
        for upstream in self._upstreams:
            upstream.stop()
        self._snapshots.close()  # its task saves what is left, then ends (so do the pins')
        self.pins.close()
        assert self._task_group is not None
        task_group, self._task_group = self._task_group, None
        try:
            if exc is not None and not isinstance(exc, anyio.get_cancelled_exc_class()):
                # The upstream tasks end on stop() and never raise; hand the caller's own error back
                # as it was raised instead of wrapped in an exception group.
                await task_group.__aexit__(None, None, None)
                return None
            return await task_group.__aexit__(exc_type, exc, tb)
        finally:
            if self.audit is not None:
                self.audit.close()

    def start_soon(self, func: Callable[[*Ts], Coroutine[Any, Any, Any]], *args: *Ts, name: str) -> None:
        """Run `func(*args)` in the gateway's task group: it outlives its request, never the gateway."""
        if self._task_group is None:
            raise RuntimeError("the gateway is not running")
        self._task_group.start_soon(func, *args, name=name)

    # The set of upstreams (gateway/runtime.py)

    async def set_servers(
        self, specs: Sequence[UpstreamSpec], *, owner: str, remove: Sequence[str] | None = None
    ) -> ServerChanges:
        """Make the upstreams `owner` owns ("config": the config file's; "registry": registered at run
        time) exactly `specs`, starting, stopping and restarting only what changed (`ServerSet.apply`);
        given `remove`, only add or restart `specs` and stop `remove`, the others not looked at (`change`)."""
        if remove is not None:
            return await self._servers.change(specs, remove, owner=owner)
        return await self._servers.apply(specs, owner=owner)

    def _new_upstream(self, spec: UpstreamSpec) -> Upstream:
        tools, lists, updated = self._tools_listed, self._lists_changed, self._resource_updated
        durations = self.metrics.upstream_calls if self.metrics.enabled else None
        return Upstream(
            spec,
            self.catalog,
            on_tools_listed=tools,
            on_list_changed=lists,
            on_resource_updated=updated,
            durations=durations,
            connecting=self._connecting,
        )

    # What the upstreams report (while the gateway runs)

    def _tools_listed(self, upstream: Upstream, tools: Sequence[types.Tool]) -> None:
        """A live tool list arrived (connect, list_changed); not kept from one stopped (it may have left)."""
        if not upstream.stopped:
            self.mirror.upstream_connected(upstream)  # (or its tools changed): its other lists may have too
            self._snapshots.tools_listed(upstream, tools)

    def _lists_changed(self, upstream: Upstream, kind: ListKind) -> None:
        self.mirror.upstream_changed(upstream, kind)

    async def _resource_updated(self, upstream: Upstream, uri: str) -> None:
        await self.mirror.resource_updated(upstream, uri)

    # Servers

    @property
    def upstreams(self) -> list[Upstream]:
        """Every upstream the request's scope sees (all, outside a request): the config's in file
        order, then the others by name."""
        return self.visibility.upstreams(current_scope())

    def owner_of(self, name: str) -> str | None:
        """Who put the server `name` in the gateway (`CONFIG_OWNER` for the config file's); None if none is named so."""
        return self._upstreams.owner(name)

    def upstream(self, name: str) -> Upstream:
        """The upstream called `name` if the request's scope sees it, or `ServerNotFound` with the
        closest names it sees."""
        return self.visibility.named(name, current_scope())

    async def live_upstream(self, server: str) -> Upstream:
        """The upstream `server`, connected (woken when idle, waited for while connecting), or why not."""
        return await self.visibility.live(server, current_scope())

    async def settle(self) -> None:
        """Wait until no upstream is still connecting (bound it with a cancel scope)."""
        await self._upstreams.settle()

    async def settle_startup(self) -> None:
        """Before a catalog question, wait for the servers whose tools would otherwise be missing from
        the answer: those on their first attempt to connect with no stored catalog (`Startup.settle`)."""
        await self._startup.settle()

    def cached_at(self, server: str) -> float | None:
        """When the catalog `server` is answered from was listed live, if it comes from the store
        (while the server is not connected); None when its catalog is live, declared, or absent."""
        return self._snapshots.cached_at(server)

    def connecting(self) -> list[str]:
        """The servers the request's scope sees whose tools are missing from a catalog answer now:
        still connecting, with no stored catalog answering for them."""
        return [u.name for u in self.upstreams if u.status is Status.CONNECTING and self.cached_at(u.name) is None]

    def server_status(self, upstream: Upstream) -> dict[str, Any]:
        """One server as `list_mcp_servers` and `toolscout list` show it (camelCase keys, JSON-ready): its
        status (`disconnected` once a live connection was lost, `error` when an attempt failed) and its
        configuration entry with every secret masked (`config`)."""
        total, enabled = self.visibility.counts(current_scope(), upstream.name)
        entry: dict[str, Any] = {
            "name": upstream.name,
            "description": self.visibility.description(current_scope(), upstream),
        }
        entry |= {"status": upstream.status.value, "toolCount": total, "enabledCount": enabled}
        hidden = self.visibility.hidden_count(current_scope(), upstream.name)
        if hidden:  # enabled, and found by search_tools, yet left out of list_tools
            entry["hiddenCount"] = hidden
        cached_at = self.cached_at(upstream.name)
        if cached_at is not None:
            entry["catalog"] = "cached"
            entry["cachedAt"] = datetime.fromtimestamp(cached_at, UTC).isoformat(timespec="seconds")
        if upstream.error:
            entry["error"] = upstream.error
        if upstream.spec.config is not None:
            entry["config"] = shown_server(upstream.spec.config)
        if upstream.retry_at is not None:
            entry["retryInSeconds"] = max(0.0, round(upstream.retry_at - time.time(), 1))
        identity = upstream.identity
        if identity is not None and upstream.status is Status.CONNECTED:
            entry["serverInfo"] = identity.server_info
            entry["protocolVersion"] = identity.protocol_version
        live_or_cached = upstream.status is Status.CONNECTED or cached_at is not None
        if identity is not None and identity.instructions and live_or_cached:
            entry["instructions"] = identity.instructions  # a cached server's, as it gave them last time
        return entry

    # Tools

    @property
    def min_relevance(self) -> float:
        """The relevance below which `search` leaves hits out unless asked otherwise."""
        return self._index.min_relevance

    async def search(
        self,
        query: str | Sequence[str],
        *,
        server: str | None = None,
        limit: int = 10,
        min_relevance: float | None = None,
        include_disabled: bool = False,
    ) -> list[SearchHit]:
        """Enabled tools (with `include_disabled`, the ones `toolRules` disable too) ranked for `query`,
        none below `min_relevance` (default: the config's).

        A list is the steps of a task: each step is ranked on its own, and every step's best tool is
        in the answer whatever its relevance (`merge_steps`). The catalog is searched as it is when
        the call starts. A query past `max_query_chars`/`max_query_steps` is refused before any work."""
        search = self._index.search(
            query, server=server, limit=limit, min_relevance=min_relevance, include_disabled=include_disabled
        )
        hits = await self._timed("search", search)
        self.stats.searched(len(hits))
        return hits

    @property
    def ranked_by_words(self) -> bool:
        """Whether searches rank by the tools' words alone just now, while their embeddings are built."""
        return self._index.ranked_by_words

    async def embedded(self) -> None:
        """Wait until the search embeddings built in the background are ready (bound it with a cancel scope)."""
        await self._index.embedded()

    @property
    def search_backend(self) -> SearchBackend | None:
        """The search backend, once built (its caches are read for metrics)."""
        return self._index.backend

    async def _timed(self, kind: str, search: Coroutine[Any, Any, T]) -> T:
        """Await `search`, its duration recorded as a search of `kind` (`toolscout_search_duration_seconds`)."""
        if not self.metrics.enabled:
            return await search
        started = time.perf_counter()
        error = "cancelled"
        try:
            result = await search
            error = ""
            return result
        except ToolscoutError as exc:
            error = exc.code.lower()
            raise
        finally:
            self.metrics.searches.observe((kind, error), time.perf_counter() - started)

    async def explain_search(
        self,
        query: str,
        *,
        server: str | None = None,
        limit: int = 10,
        scope: Scope | None = None,
        min_relevance: float | None = None,
    ) -> list[ExplainedHit]:
        """The hits `search` gives for `query` (same order, same scope, rules and floor), each with
        each ranker's part in it and, with smart mode on, each selection method's score.

        `scope`: search as that scope sees (default: the request's, `current_scope()`);
        `min_relevance`: the floor (default: the config's, as `search`)."""
        if scope is not None:
            with scoped(scope):
                return await self.explain_search(query, server=server, limit=limit, min_relevance=min_relevance)
        found = await self._index.explain(query, server=server, limit=limit, min_relevance=min_relevance)
        self.stats.explained += 1
        smart = None
        if self.smart is not None:
            candidates = await self.candidates(query, limit=max(limit, self.smart.max_llm_candidates), method="hybrid")
            picks = next((known for ask in self.llm_picks if (known := ask(query)) is not None), None)
            smart = smart_scores(candidates, self.smart, picks)
        return explained(found, smart)

    @property
    def scoped_indexes(self) -> int:
        """How many scopes have a search index of their own just now."""
        return self._index.scoped_indexes

    async def semantic_state(self, *, sync: bool = False) -> SemanticState:
        """The embeddings against the catalog (model, dimensions, embedded, stale); `sync`: what is
        stale embedded first."""
        return await self._index.semantic_state(sync=sync)

    async def configure_search(self, config: SearchConfig) -> None:
        """Search by `config` from the next search on. Another backend or model is built first (in a
        worker thread): one that cannot be loaded raises its `ConfigurationError` and nothing changes."""
        factory: Callable[[], SearchBackend] | None = None
        now = self.search_config
        built_by = (config.backend, config.model, config.embeddings, config.fuzzy_names)
        if built_by != (now.backend, now.model, now.embeddings, now.fuzzy_names):
            backend = await anyio.to_thread.run_sync(build_backend, *built_by)
            factory = functools.partial(_built, backend)
        self._index.configure(config, factory)
        self.search_config = config

    async def candidates(
        self, query: str, *, limit: int, method: Method, prefer: frozenset[str] = frozenset()
    ) -> list[MethodHit]:
        """Smart mode's candidates: the best `limit` by `method` with each method's scores (`by_method`)."""
        candidates = self._index.by_method(query, limit=limit, method=method, prefer=prefer)
        return await self._timed("smart", candidates)

    async def relist_expired(self, upstreams: Iterable[Upstream] | None = None) -> None:
        """List again, together, the tools of the connected servers (of `upstreams`, default all) whose
        list is older than `cache.ttl` (every one's when `cache.enabled` is false), so that a listing
        answers what they offer now; each gets at most `RELIST_WAIT` seconds, its last list standing after.
        A server that is not connected keeps its last list (or the persistent catalog's) as it is."""
        ttl = self.list_cache.ttl if self.list_cache.enabled else 0.0
        now = anyio.current_time()
        due = [
            up
            for up in (self.upstreams if upstreams is None else upstreams)
            if up.status is Status.CONNECTED and (up.listed_at is None or now - up.listed_at >= ttl)
        ]
        if not due:
            return
        async with anyio.create_task_group() as tg:
            for up in due:
                tg.start_soon(up.relist, min(up.spec.call_timeout, RELIST_WAIT))

    async def tools(
        self, server: str, *, include_disabled: bool = False, include_hidden: bool = False
    ) -> list[CatalogTool]:
        """The tools of one server as a listing shows them, the hidden ones left out unless asked
        (waiting for it if it is still connecting and has no stored catalog; listed again first when
        its list is older than `cache.ttl`)."""
        upstream = self.upstream(server)
        await self._catalog_ready(upstream)
        await self.relist_expired([upstream])
        return self.visibility.tools(
            current_scope(), server, include_disabled=include_disabled, include_hidden=include_hidden
        )

    async def tool(self, server: str, name: str, *, include_disabled: bool = False) -> CatalogTool:
        """One enabled tool (or any, with `include_disabled`), or the error saying why it cannot be used."""
        await self._catalog_ready(self.upstream(server))
        find = self.visibility.any_tool if include_disabled else self.visibility.admit_tool
        return find(current_scope(), server, name)

    async def _catalog_ready(self, upstream: Upstream) -> None:
        if self._snapshots.cached_at(upstream.name) is None:
            await wait_until_connected(upstream)

    async def execute(
        self,
        server: str,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        max_output_chars: int | None = None,
        client: str | None = None,
        shape: ResultShape | None = None,
        confirm: Confirm | None = None,
    ) -> types.CallToolResult:
        """Validate `arguments` and call the tool upstream; its result comes back as it came, text capped.

        `max_output_chars` overrides the default cap for this call (0: no cap). `shape`, when given,
        rewrites the result before the caps, so that they measure what the client receives. Every
        call, failed ones included, is audited with `client` (who asked, if known); one refused
        before it reached the server has outcome `error` and the refusal's code. Only a tool the
        server listed under exactly `name`, enabled by `toolRules`, is ever called (`Catalog.admit`).
        `confirm`, when given, is awaited once the call is admitted and its arguments valid (the user is
        asked only about a call that could run); what it raises refuses the call, audited with its code."""
        if self.audit is None:
            return await self._execute(server, name, arguments, max_output_chars, shape, confirm)
        if client is None and (relay := current_relay()) is not None:
            client = relay.client  # a call through the MCP server names its client session
        call = functools.partial(self._execute, server, name, arguments, max_output_chars, shape, confirm)
        return await self.audit.record_call(call, server=server, tool=name, arguments=arguments, client=client)

    async def record_refused(self, request: Mapping[str, Any], error: ToolscoutError) -> None:
        """Audit an execution refused before it reached a server (`request`: the meta-tool's own
        arguments, which did not make a valid call)."""
        if self.audit is not None:
            relay = current_relay()
            await self.audit.record_refused(request, error.code, client=relay.client if relay is not None else None)

    async def _execute(
        self,
        server: str,
        name: str,
        arguments: Mapping[str, Any] | None,
        max_output_chars: int | None,
        shape: ResultShape | None = None,
        confirm: Confirm | None = None,
    ) -> types.CallToolResult:
        if arguments is not None and not isinstance(arguments, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidArguments(
                f"arguments must be an object, got {type(arguments).__name__}.", server=server, tool=name
            )
        upstream = await self.live_upstream(server)  # never from the stored catalog: a call needs the server
        args = dict(arguments or {})
        entry = self.visibility.admit_tool(current_scope(), server, name)
        # jsonschema's own walk, when needed, runs off the event loop under a budget, and ends with this call.
        await self.validator.check(entry.input_schema, args, server=server, tool=name)
        if confirm is not None:
            await confirm(entry, args)
        started = time.perf_counter()
        outcome = "error"
        try:
            result = await upstream.call_tool(name, args)
            outcome = "isError" if result.is_error else "ok"
        finally:
            # Named as in the traces and metrics, for a JSON log (`serve --log-format json`).
            error = {"ok": "", "isError": "tool_error"}.get(outcome, outcome)
            attributes = {"mcp.method.name": "tools/call", "gen_ai.tool.name": name, "toolscout.server.name": server}
            seconds = time.perf_counter() - started
            extra = {**attributes, "error.type": error} if error else attributes
            logger.info("execute %s.%s: %s in %.0f ms", server, name, outcome, seconds * 1000, extra=extra)
        result = without_hop_metadata(result)
        if shape is not None:
            result = await shape(result)
        cap = self.max_output_chars if max_output_chars is None else max_output_chars
        return await fit_result_off_loop(cap_output(result, cap), self.max_result_bytes)


RELIST_WAIT = 5.0
"""The longest a listing waits for a server to list its tools again once its list expired (`cache.ttl`):
a server that takes longer is answered from its last list, which it replaces when it arrives."""


def _built(backend: SearchBackend) -> SearchBackend:
    return backend


# Caps on what a call returns: the text an agent reads, and the bytes a client reads in one message.

__all__ = ["DEFAULT_MAX_RESULT_BYTES", "cap_output", "fit_result", "fit_result_off_loop"]


def cap_output(result: types.CallToolResult, max_chars: int | None) -> types.CallToolResult:
    """Return `result` with at most `max_chars` characters of text in total (None or 0: no cap)."""
    if not max_chars or max_chars <= 0:
        return result
    total = sum(len(block.text) for block in result.content if isinstance(block, types.TextContent))
    if total <= max_chars:
        return result
    budget = max_chars
    content: list[types.ContentBlock] = []
    for block in result.content:
        if not isinstance(block, types.TextContent):
            content.append(block)
            continue
        if budget <= 0:
            continue  # dropped whole; the notice below accounts for it
        kept = block.text[:budget]
        budget -= len(kept)
        content.append(block.model_copy(update={"text": kept}))
    content.append(
        types.TextContent(
            text=f"[toolscout: output cut to {max_chars} of {total} characters ({total - max_chars} dropped). "
            "Call again with a larger max_output_chars, or narrow the request.]"
        )
    )
    return result.model_copy(update={"content": content})


_MEASURED_ON_LOOP_CHARS = 64 * 1024
"""A result whose text and binary data are longer than this is measured (and cut) in a worker thread."""
_FIT_ATTEMPTS = 8


def _size(result: types.CallToolResult) -> int:
    """The bytes of `result` as JSON, as a client receives it (within a few bytes of the SDK's own)."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


def _cut_text(result: types.CallToolResult, keep: int, notice: str) -> types.CallToolResult:
    """Return `result` with only its first `keep` characters of text (over all text blocks), then `notice`."""
    budget = keep
    content: list[types.ContentBlock] = []
    for block in result.content:
        if not isinstance(block, types.TextContent):
            content.append(block)
        elif budget > 0:
            kept = block.text[:budget]
            budget -= len(kept)
            content.append(block.model_copy(update={"text": kept}))
    return result.model_copy(update={"content": [*content, types.TextContent(text=notice)]})


def fit_result(result: types.CallToolResult, max_bytes: int | None) -> types.CallToolResult:
    """Return `result` if its JSON is at most `max_bytes` bytes (None: no limit); else its text cut
    to fit, with a notice; else, when what is not text (images, audio, resources, structuredContent) is over
    it alone, an error result saying so. The limit is what a client reads in one message: the SDK's
    client refuses a server-sent event over 1 MiB, so that a larger result never reaches its caller."""
    if max_bytes is None:
        return result
    size = _size(result)
    if size <= max_bytes:
        return result
    total = sum(len(block.text) for block in result.content if isinstance(block, types.TextContent))

    def notice(kept: int) -> str:
        return (
            f"[toolscout: result cut to fit {max_bytes} bytes, the most a client reads in one message "
            f"(maxResultBytes): {kept} of {total} characters of text kept ({total - kept} dropped). "
            "Narrow the request, or ask for the rest in parts.]"
        )

    if _size(_cut_text(result, 0, notice(0))) > max_bytes:
        return types.CallToolResult(
            content=[
                types.TextContent(
                    text=f"The tool's result was {size} bytes, over the {max_bytes} bytes a client reads in one "
                    "message (maxResultBytes), and not in its text alone (images, audio, resources or "
                    "structuredContent); nothing of it was passed on. Narrow the request."
                )
            ],
            is_error=True,
        )
    keep, cut = total, result
    for _ in range(_FIT_ATTEMPTS):  # the text's JSON size per character varies (escapes, UTF-8): measured
        keep = int(keep * max_bytes / size * 0.97)
        cut = _cut_text(result, keep, notice(keep))
        size = _size(cut)
        if size <= max_bytes:
            return cut
    return _cut_text(result, 0, notice(0))


def _rough_size(block: types.ContentBlock) -> int:
    if isinstance(block, types.TextContent):
        return len(block.text)
    resource = getattr(block, "resource", None)  # an embedded resource's text or blob
    data = getattr(resource, "text", None) or getattr(resource, "blob", None) or getattr(block, "data", "")
    return len(data) if isinstance(data, str) else 0


_SURELY_SMALL_NODES = 512
"""The most values of a result's `structuredContent` walked to show that it is surely small."""


def _data_bound(data: object) -> int | None:
    """An upper bound on the bytes of `data` as JSON (a string's character takes at most 6: `\\u001f`),
    or None when it has more than `_SURELY_SMALL_NODES` values (then it is measured, not bounded)."""
    bound, nodes = 0, 0
    stack: list[object] = [data]
    while stack:
        nodes += 1
        if nodes > _SURELY_SMALL_NODES:
            return None
        item = stack.pop()
        if isinstance(item, str):
            bound += 6 * len(item) + 2
        elif isinstance(item, dict):
            mapping = cast(dict[object, object], item)
            stack.extend(mapping.values())
            bound += sum(6 * len(str(key)) + 4 for key in mapping)
        elif isinstance(item, list | tuple):
            items = cast(list[object], item)
            stack.extend(items)
            bound += len(items) + 2
        else:
            bound += 32  # a number, a boolean, null
    return bound


def _surely_within(result: types.CallToolResult, max_bytes: int) -> bool:
    """Whether `result` surely fits in `max_bytes` without serialising it: the common case of every
    call, which must not pay for a measurement (nor a worker thread) it does not need."""
    bound = 256 + sum(6 * _rough_size(block) + 256 for block in result.content)
    if result.structured_content is not None:
        data = _data_bound(result.structured_content)
        if data is None:
            return False
        bound += data
    return bound <= max_bytes


async def fit_result_off_loop(result: types.CallToolResult, max_bytes: int | None) -> types.CallToolResult:
    """Run `fit_result`, in a worker thread when the result is large (measuring it serialises it whole)."""
    if max_bytes is None or _surely_within(result, max_bytes):
        return result
    if (
        result.structured_content is None
        and sum(_rough_size(block) for block in result.content) < _MEASURED_ON_LOOP_CHARS
    ):
        return fit_result(result, max_bytes)
    return await anyio.to_thread.run_sync(fit_result, result, max_bytes)
