"""The gateway: upstream connections, the catalog and search behind one facade.

The MCP face (`server.py`) and the CLI call only this; it raises `ToolscoutError`s
and leaves turning them into MCP results or exit codes to them.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVarTuple

import anyio
import anyio.abc
import mcp_types as types
from pydantic import BaseModel

from toolscout.config.models import (
    DEFAULT_MAX_QUERY_CHARS,
    DEFAULT_MAX_QUERY_STEPS,
    DEFAULT_MIN_RELEVANCE,
    GatewayConfig,
)
from toolscout.config.rules import RuleSet
from toolscout.config.secrets import config_secrets
from toolscout.errors import (
    InvalidArguments,
    ToolNotFound,
    ToolscoutError,
    server_unavailable,
)
from toolscout.gateway.audit import AuditLog
from toolscout.gateway.catalog import Catalog, CatalogTool
from toolscout.gateway.output_cap import cap_output
from toolscout.gateway.store import CatalogStore, ServerSnapshot, SnapshotStore, store_path
from toolscout.gateway.validation import ArgumentValidator
from toolscout.masking import install_log_masking, remember_secrets
from toolscout.mirror.hub import ContentHub, ListName, without_hop_metadata
from toolscout.suggestions import server_not_found
from toolscout.upstream import ServerIdentity, Status, Upstream, UpstreamSpec
from toolscout.upstream.relay import current_relay

if TYPE_CHECKING:  # the search package (numpy, the model) is imported in a worker thread at start
    from toolscout.search import SearchBackend, SearchHit

logger = logging.getLogger(__name__)

WARM_INDEX_FIRST_SECONDS = 1.0
"""With a stored catalog, how long its servers wait at start for its search index to be built first."""
STOP_MARGIN_SECONDS = 5.0
"""Beyond a server's connect timeout, how long a catalog question at start waits for its first attempt
to end: the attempt itself gives up at the timeout, and tearing a hung stdio child down takes ~1 s."""


CACHE_LOAD_BUDGET_SECONDS = 2.0
"""How long start-up waits for the persistent catalog before going on without it (a locked or slow disk)."""

Ts = TypeVarTuple("Ts")


class Gateway:
    """Connects to every enabled upstream and answers questions about their tools.

    Use as an async context manager: entering starts one task per upstream and
    returns at once, so a slow or broken server never delays readiness.
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
        audit: AuditLog | None = None,
        catalog_store: SnapshotStore | None = None,
    ) -> None:
        install_log_masking()  # whoever runs a gateway, its log masks secrets (toolscout.masking)
        names = [s.name for s in specs]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate upstream names in {names}")
        self.rules = rules or RuleSet()
        """`toolRules`: tools through the catalog, prompts and resources through `content`."""
        self.catalog = Catalog(self.rules)
        self.content = ContentHub(self)
        """The upstreams' resources and prompts under gateway names (content.py)."""
        self._upstreams = {
            spec.name: Upstream(
                spec,
                self.catalog,
                on_tools_listed=self._on_tools_listed,
                on_list_changed=self.content.upstream_changed,
                on_resource_updated=self.content.resource_updated,
            )
            for spec in specs
        }
        self._store = catalog_store
        self._snapshots: dict[str, ServerSnapshot] = {}
        """Each server's last known live list (from the store at start, then from the server itself)."""
        self._unsaved: dict[str, ServerSnapshot] = {}
        self._save_wanted = anyio.Event()
        self._closing = False
        self._search = search
        """None until built by `_search_factory` (the default backend without one): see `_search_backend`."""
        self._search_factory = search_factory
        self._search_lock = threading.Lock()
        # Both made in __aenter__, in the event loop they belong to.
        self._index_lock: anyio.Lock
        """Held while the index is rebuilt (in a worker thread) or read: one at a time, off the event loop."""
        self._loading_index: anyio.CancelScope
        """Around the index built at start; cancelled when the gateway stops, not to wait for it."""
        self._indexed_at_start: anyio.Event
        """Set once the index built at start (of the stored catalog, if any) is ready, or failed."""
        self._min_relevance = min_relevance
        self._max_query_chars, self._max_query_steps = max_query_chars, max_query_steps
        self._indexed_version = -1
        self._validator = ArgumentValidator()
        self.max_output_chars = max_output_chars
        """Default cap on the text of a tool's result (None: no cap); a call may ask for another."""
        self._started_at = 0.0
        self._task_group: anyio.abc.TaskGroup | None = None
        self.audit = audit
        """Where every execution is recorded (None: nowhere); opened and closed with the gateway."""

    @classmethod
    def from_config(
        cls, config: GatewayConfig, *, only: Collection[str] | None = None, reconnect: bool | None = None, **kwargs: Any
    ) -> Gateway:
        """A gateway for the configured servers (or just those named in `only`).

        `reconnect=False`: one connection attempt per server, whatever the config says (for a
        command that ends once it has its answer, a server trying again would only be waited for).
        """
        remember_secrets(config_secrets(config))  # a config built in code, not read by load_config
        specs = [
            UpstreamSpec.from_config(name, server)
            for name, server in config.mcp_servers.items()
            if only is None or name in only
        ]
        if reconnect is not None:
            specs = [dataclasses.replace(spec, reconnect=reconnect) for spec in specs]
        build = functools.partial(_make_backend, config.search.backend, config.search.model)
        if config.search.model == "minilm":
            # Built here, as ever: a missing extra must stop `serve` at once with its config error.
            kwargs.setdefault("search", build())
        elif "search" not in kwargs:
            # Built in a worker thread when the gateway starts, off the path to the client's handshake.
            kwargs.setdefault("search_factory", build)
        kwargs.setdefault("min_relevance", config.search.min_relevance)
        kwargs.setdefault("max_query_chars", config.search.max_query_chars)
        kwargs.setdefault("max_query_steps", config.search.max_query_steps)
        kwargs.setdefault("max_output_chars", config.max_output_chars)
        if config.audit.enabled:
            kwargs.setdefault("audit", AuditLog.from_config(config.audit))
        if config.catalog_cache.enabled:
            kwargs.setdefault("catalog_store", CatalogStore(store_path(config.catalog_cache)))
        return cls(specs, rules=RuleSet(config.tool_rules), **kwargs)

    async def __aenter__(self) -> Gateway:
        # Before any upstream starts: from here on, catalog questions about a server with a stored
        # catalog are answered at once, whatever its connection does.
        await self._load_snapshots()
        self._task_group = await anyio.create_task_group().__aenter__()
        self._started_at = anyio.current_time()
        self._index_lock, self._loading_index = anyio.Lock(), anyio.CancelScope()
        self._indexed_at_start = anyio.Event()
        self._task_group.start_soon(self._load_search, name="search index")
        if self._store is not None:
            self._task_group.start_soon(self._save_snapshots, name="catalog store")
        self._task_group.start_soon(self._start_upstreams, self._task_group, name="upstreams")
        if self.audit is not None:
            self.audit.open()  # never raises: an unwritable log is a warning, not a reason not to serve
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        self._closing = True  # upstreams not started yet never start; the store's task saves what is left
        self._loading_index.cancel()
        for upstream in self._upstreams.values():
            upstream.stop()
        self._save_wanted.set()
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
        """Run `func(*args)` in the gateway's own task group: it outlives the request that started it,
        never the gateway (it must not raise)."""
        if self._task_group is None:
            raise RuntimeError("the gateway is not running")
        self._task_group.start_soon(func, *args, name=name)

    # Servers

    @property
    def upstreams(self) -> list[Upstream]:
        return list(self._upstreams.values())

    @property
    def min_relevance(self) -> float:
        """The relevance below which `search` leaves hits out unless asked otherwise."""
        return self._min_relevance

    async def live_upstream(self, server: str) -> Upstream:
        """The upstream `server`, connected (woken when idle, waited for while connecting), or why not."""
        upstream = self.upstream(server)
        await self._connected(upstream)
        return upstream

    def upstream(self, name: str) -> Upstream:
        """The upstream called `name`, or `ServerNotFound` with the closest names."""
        found = self._upstreams.get(name)
        if found is not None:
            return found
        raise server_not_found(name, list(self._upstreams))

    def server_status(self, upstream: Upstream) -> dict[str, Any]:
        """One server as `list_mcp_servers` and `toolscout list` show it (camelCase keys, JSON-ready)."""
        total, enabled = self.catalog.counts(upstream.name)
        entry: dict[str, Any] = {
            "name": upstream.name,
            "description": upstream.description,
            "status": upstream.status.value,
            "toolCount": total,
            "enabledCount": enabled,
        }
        cached_at = self.cached_at(upstream.name)
        if cached_at is not None:
            entry["catalog"] = "cached"
            entry["cachedAt"] = datetime.fromtimestamp(cached_at, UTC).isoformat(timespec="seconds")
        if upstream.error:
            entry["error"] = upstream.error
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

    async def settle(self) -> None:
        """Wait until no upstream is still connecting (bound it with a cancel scope)."""
        for upstream in self._upstreams.values():
            await upstream.wait_settled()

    async def settle_startup(self) -> None:
        """Before a catalog question (a search, the server list, a surface's tools), wait for the
        servers whose tools would otherwise be missing from the answer.

        Decided by each server's own state, never by a clock: a configured server that is on its
        first attempt to connect is waited for until that attempt ends (connected, failed, or gone
        idle on purpose), which its connect timeout bounds, unless the persistent catalog already
        answers for it. So on a loaded machine a server that takes a few seconds to import is still
        in the first answer, a hanging one costs at most its connect timeout, once, and a server
        that failed is not waited for again while it retries. Servers still connecting when an
        answer is given are named in it (`connecting` in search_tools, their status in list_mcp_servers).
        """
        for upstream in self._upstreams.values():
            if upstream.name in self._snapshots or upstream.first_attempt_over:
                continue
            # The attempt bounds itself (these servers start at once); this bound only guards against
            # a task that never got to run.
            deadline = self._started_at + upstream.spec.connect_timeout + STOP_MARGIN_SECONDS
            with anyio.move_on_after(deadline - anyio.current_time()):
                await upstream.wait_first_attempt()

    async def _load_search(self) -> None:
        # At start, the index of the stored catalog is built while the client is still connecting,
        # so the first search is answered from it at once.
        try:
            with self._loading_index:
                async with self._index_lock:
                    # Abandoned only when the gateway stops: no search can come after.
                    await self._index(abandon_on_cancel=True)
        except Exception as exc:  # raised again where the backend is used, for the caller to report
            logger.warning("the search backend could not be built: %s", exc)
        finally:
            self._indexed_at_start.set()

    async def _start_upstreams(self, task_group: anyio.abc.TaskGroup) -> None:
        # Servers with nothing stored start at once: the first catalog question waits for them
        # (`settle_startup`). Those the stored catalog answers for start once its index is built,
        # since it is what the first search needs (on few cores, a hundred connections starting
        # with it slowed it threefold), then one per event-loop turn, so that the first search,
        # woken by the same index, is not queued behind a hundred connections' first steps.
        stored = [u for u in self._upstreams.values() if u.name in self._snapshots]
        for upstream in self._upstreams.values():
            if upstream.name not in self._snapshots:
                task_group.start_soon(upstream.run, name=f"upstream {upstream.name}")
        if not stored:
            return
        with anyio.move_on_after(WARM_INDEX_FIRST_SECONDS):
            await self._indexed_at_start.wait()
        for upstream in stored:
            if self._closing:
                return
            task_group.start_soon(upstream.run, name=f"upstream {upstream.name}")
            await anyio.lowlevel.checkpoint()

    async def _index(self, *, abandon_on_cancel: bool = False) -> SearchBackend:
        """The search backend with the catalog as it is now indexed, both built in a worker thread
        (a rebuild of 10,000 tools takes a second: the event loop goes on serving calls meanwhile).
        The caller holds `_index_lock`."""
        backend = self._search or await anyio.to_thread.run_sync(
            self._search_backend, abandon_on_cancel=abandon_on_cancel
        )
        if self._indexed_version != self.catalog.version:
            version, tools, context = self.catalog.version, self.catalog.tools(), self._server_context()
            await anyio.to_thread.run_sync(backend.rebuild, tools, context, abandon_on_cancel=abandon_on_cancel)
            self._indexed_version = version
        return backend

    def _search_backend(self) -> SearchBackend:
        """The search backend, built on first use (from any thread: at start, a worker's)."""
        with self._search_lock:
            if self._search is None:
                self._search = (self._search_factory or _make_backend)()
            return self._search

    # The persistent catalog

    def cached_at(self, server: str) -> float | None:
        """When the catalog `server` is answered from was listed live, if it comes from the store.

        That is while the server is not connected (connecting, failed, lost) and its last known
        live list stands in for it; None when its catalog is live, declared, or absent.
        """
        upstream = self._upstreams.get(server)
        snapshot = self._snapshots.get(server)
        if upstream is None or snapshot is None or upstream.status is Status.CONNECTED:
            return None
        return snapshot.saved_at

    async def _load_snapshots(self) -> None:
        store = self._store
        keys = {u.name: u.spec.cache_key for u in self._upstreams.values() if u.spec.cache_key and not u.spec.disabled}
        if store is None or not keys:
            return
        found: dict[str, ServerSnapshot] = {}
        # In a worker thread: the event loop stays free, and a store stuck on a lock is given up on.
        with anyio.move_on_after(CACHE_LOAD_BUDGET_SECONDS) as scope:
            try:
                found = await anyio.to_thread.run_sync(store.load, keys, abandon_on_cancel=True)
            except Exception as exc:  # a store must never stop the gateway
                logger.warning("catalog cache not read: %s", exc)
        if scope.cancelled_caught:
            logger.warning("catalog cache not read within %gs; starting without it", CACHE_LOAD_BUDGET_SECONDS)
        for name, snapshot in found.items():
            upstream = self._upstreams.get(name)
            if upstream is None or snapshot.config_hash != keys.get(name):
                continue  # never another configuration's catalog
            self._snapshots[name] = snapshot
            upstream.identity = ServerIdentity(
                name=snapshot.server_name,
                version=snapshot.server_version,
                title=snapshot.title,
                description=snapshot.description,
                instructions=snapshot.instructions,
                protocol_version=snapshot.protocol_version or "",
            )
            upstream.use_offline_tools(snapshot.tools)
            self.content.use_stored(upstream, snapshot.content())
        if self._snapshots:
            logger.info(
                "catalog cache: %d of %d servers answer from it until connected", len(self._snapshots), len(keys)
            )

    def _on_tools_listed(self, upstream: Upstream, tools: Sequence[types.Tool]) -> None:
        """A live list arrived (connect, list_changed): it is the one to fall back on, and to save."""
        self.content.upstream_connected(upstream)  # (or its tools changed): its other lists may have too
        key = upstream.spec.cache_key
        if self._store is None or key is None:
            return
        identity = upstream.identity
        previous = self._snapshots.get(upstream.name)
        kept = previous if previous is not None and previous.config_hash == key else None
        snapshot = ServerSnapshot(
            server=upstream.name,
            config_hash=key,
            tools=tuple(tools),
            saved_at=time.time(),
            server_name=identity.name if identity else None,
            server_version=identity.version if identity else None,
            title=identity.title if identity else None,
            description=identity.description if identity else None,
            instructions=identity.instructions if identity else None,
            protocol_version=identity.protocol_version if identity else None,
            # Its resources and prompts as last listed stay until it lists them again.
            resources=kept.resources if kept else None,
            resource_templates=kept.resource_templates if kept else None,
            prompts=kept.prompts if kept else None,
        )
        self._snapshots[upstream.name] = snapshot
        upstream.use_offline_tools(snapshot.tools)  # listed if the connection is lost later
        self._save(snapshot)

    def on_content_listed(self, upstream: Upstream, name: ListName, items: Sequence[BaseModel]) -> None:
        """A live list of resources, templates or prompts arrived: kept with the server's tools, and saved."""
        snapshot = self._snapshots.get(upstream.name)
        if snapshot is None or upstream.status is not Status.CONNECTED or getattr(snapshot, name) == tuple(items):
            return  # (nothing is stored for a server without a live tool list of this run)
        self._snapshots[upstream.name] = snapshot = dataclasses.replace(snapshot, **{name: tuple(items)})
        self._save(snapshot)

    def _save(self, snapshot: ServerSnapshot) -> None:
        self._unsaved[snapshot.server] = snapshot
        self._save_wanted.set()

    async def _save_snapshots(self) -> None:
        """Write live lists as they come, in a worker thread, the latest per server, a batch per transaction."""
        store = self._store
        assert store is not None
        while True:
            if not self._unsaved:
                if self._closing:
                    return
                await self._save_wanted.wait()
                self._save_wanted = anyio.Event()
                continue
            batch = list(self._unsaved.values())
            self._unsaved.clear()
            try:
                await anyio.to_thread.run_sync(store.save, batch)
            except Exception as exc:  # a store must never stop the gateway
                logger.warning("catalog cache not saved: %s", exc)

    # Tools

    async def search(
        self,
        query: str | Sequence[str],
        *,
        server: str | None = None,
        limit: int = 10,
        min_relevance: float | None = None,
    ) -> list[SearchHit]:
        """Enabled tools ranked for `query`, none below `min_relevance` (default: the config's).

        A list is the steps of a task: each step is ranked on its own, and every step's best tool
        is in the answer whatever its relevance and even with more steps than `limit`
        (`merge_steps`); the hits say which steps they answer. The catalog is searched as it is
        when the call starts (the index is rebuilt first if it changed). A query longer than
        `max_query_chars` (or with more steps than `max_query_steps`) is refused before any work.
        """
        from toolscout.search.base import check_queries, search_steps

        floor = self._min_relevance if min_relevance is None else min_relevance
        check_queries(query, limit, floor, max_chars=self._max_query_chars, max_steps=self._max_query_steps)
        if server is not None:
            self.upstream(server)
        rank = functools.partial(search_steps, query=query, server=server, limit=limit, min_relevance=floor)
        async with self._index_lock:
            backend = await self._index()
            # Scoring takes milliseconds per step on a large catalog, more on a long query: in a worker
            # thread, the event loop goes on answering other clients. Under the lock, no rebuild can
            # swap the index underneath it (one search at a time reads it).
            return await anyio.to_thread.run_sync(rank, backend)

    def _server_context(self) -> dict[str, str]:
        from toolscout.search.base import server_context

        return {
            up.name: server_context(up.description, up.identity.instructions if up.identity else None)
            for up in self._upstreams.values()
        }

    async def tools(self, server: str, *, include_disabled: bool = False) -> list[CatalogTool]:
        """The tools of one server (waiting for it if it is still connecting and has no stored catalog)."""
        await self._catalog_ready(self.upstream(server))
        return self.catalog.tools(server, include_disabled=include_disabled)

    async def tool(self, server: str, name: str, *, include_disabled: bool = False) -> CatalogTool:
        """One enabled tool (or any, with `include_disabled`), or the error saying why it cannot be used."""
        await self._catalog_ready(self.upstream(server))
        return self._lookup(server, name, include_disabled=include_disabled)

    def _lookup(self, server: str, name: str, *, include_disabled: bool = False) -> CatalogTool:
        if not include_disabled:
            return self.catalog.admit(server, name)
        entry = self.catalog.get(server, name)
        if entry is None:
            raise self._tool_not_found(server, name)
        return entry

    async def execute(
        self,
        server: str,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        max_output_chars: int | None = None,
        client: str | None = None,
    ) -> types.CallToolResult:
        """Validate `arguments` and call the tool upstream; its result comes back as it came, text capped.

        `max_output_chars` overrides the gateway's default cap for this call (0: no cap). Every call,
        failed ones included, goes to the audit log with `client` (who asked, if the caller knows);
        one refused before it reached the server (not listed, disabled, invalid) has outcome `error`
        and the refusal's code. Only a tool the server listed under exactly `name`, enabled by
        `toolRules`, is ever called (`Catalog.admit`).
        """
        if self.audit is None:
            return await self._execute(server, name, arguments, max_output_chars)
        if client is None and (relay := current_relay()) is not None:
            client = relay.client  # a call from the MCP face names its client session
        started, clock = datetime.now(UTC), time.perf_counter()
        outcome, code = "error", "INTERNAL_ERROR"
        try:
            result = await self._execute(server, name, arguments, max_output_chars)
            outcome, code = ("isError" if result.is_error else "ok"), None
            return result
        except ToolscoutError as exc:
            code = exc.code
            raise
        except anyio.get_cancelled_exc_class():
            code = "CANCELLED"
            raise
        finally:
            await self.audit.record(
                server=server,
                tool=name,
                arguments=arguments,
                duration_ms=(time.perf_counter() - clock) * 1000,
                outcome=outcome,
                code=code,
                client=client,
                started=started,
            )

    async def record_refused(self, request: Mapping[str, Any], error: ToolscoutError) -> None:
        """Audit an execution refused before it reached a server (`request`: the meta-tool's own
        arguments, which did not make a valid call)."""
        if self.audit is None:
            return

        def named(*keys: str) -> str:
            return next((value for key in keys if isinstance(value := request.get(key), str)), "?")

        relay = current_relay()
        await self.audit.record(
            server=named("server", "server_name"),
            tool=named("tool", "tool_name"),
            arguments=request.get("arguments"),
            duration_ms=0.0,
            outcome="error",
            code=error.code,
            client=relay.client if relay is not None else None,
        )

    async def _execute(
        self,
        server: str,
        name: str,
        arguments: Mapping[str, Any] | None,
        max_output_chars: int | None,
    ) -> types.CallToolResult:
        if arguments is not None and not isinstance(arguments, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidArguments(
                f"arguments must be an object, got {type(arguments).__name__}.", server=server, tool=name
            )
        await self._connected(self.upstream(server))  # never from the stored catalog: a call needs the server
        args = dict(arguments or {})
        entry = self.catalog.admit(server, name)
        if not self._validator.accepts(entry.input_schema, args, server=server, tool=name):
            # jsonschema's own walk (an invalid call, or a schema the quick check does not judge):
            # costly on big arguments, so off the event loop.
            await anyio.to_thread.run_sync(
                functools.partial(self._validator.validate, entry.input_schema, args, server=server, tool=name)
            )
        started = time.perf_counter()
        outcome = "error"
        try:
            result = await self.upstream(server).call_tool(name, args)
            outcome = "isError" if result.is_error else "ok"
        finally:
            logger.info("execute %s.%s: %s in %.0f ms", server, name, outcome, (time.perf_counter() - started) * 1000)
        cap = self.max_output_chars if max_output_chars is None else max_output_chars
        return cap_output(without_hop_metadata(result), cap)

    async def _catalog_ready(self, upstream: Upstream) -> None:
        if self.cached_at(upstream.name) is None:
            await self._connected(upstream)

    async def _connected(self, upstream: Upstream) -> None:
        if upstream.status is Status.IDLE:
            upstream.want()
        if upstream.status is Status.CONNECTING:
            with anyio.move_on_after(upstream.spec.connect_timeout):
                await upstream.wait_settled()
        if upstream.status is not Status.CONNECTED:
            raise server_unavailable(upstream.name, upstream.status.value, upstream.error)

    def _tool_not_found(self, server: str, name: str) -> ToolNotFound:
        return self.catalog.not_found(server, name)


def _make_backend(name: str = "hybrid", model: str = "static") -> SearchBackend:
    from toolscout.search import make_backend

    return make_backend(name, model=model)
