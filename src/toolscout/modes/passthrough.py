"""Passthrough mode: every enabled upstream tool exposed natively, under a name every client accepts.

A tool's name is `server__tool`, or its own name where the configuration's `toolNames` allows it
(`ToolNaming`). `auto`, the default, leaves names bare in front of a single server and prefixes them
in front of several; `bare-when-unique` leaves bare every name that no other server's tool shares;
`prefixed` always prefixes; `registered` names the tools of a run as the multi-tenant pipeline does: a
registered callback tool (a component) by its own name, a registered server's tools as
`{toolName}__{tool}`, each unique within the namespace that sees it. Names depend on the catalog (and,
under `registered`, the request's namespace) alone, never on the client or its session, so every
client of one namespace sees the same list, as the 2026-07-28 protocol requires. When a server that
arrives later brings a tool whose name another server has, both become `server__tool` and clients are
told the list changed. Names are valid for every major client, unique and deterministic (naming.py).

The same names serve a principal's pinned tools, which the other modes show after their own. At
2026-07-28 tools/list may vary by the authorization on the request, never per connection, so a
token's `pinnedTools` (`server/tool`, config/scopes.py) are how an agent gets chosen tools as its
own in either protocol era (dynamic mode's `load_tools` works only in the handshake era). A pin names
the server as it is shown or, for a server of the principal's own namespace, by its registered
name; it is shown under its native name and called like passthrough's tools. A pin of a server or
tool the scope does not see, or of a tool that is not (or no longer) listed or is disabled, shows
nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import mcp_types as types

from toolscout.catalog import Catalog, CatalogTool, Visible
from toolscout.config.models import ToolNaming
from toolscout.config.rules import Load
from toolscout.config.scopes import UNSCOPED, Scope, current_scope, scoped
from toolscout.errors import Phrasing
from toolscout.gateway.core import Gateway
from toolscout.gateway.visibility import ScopedCache
from toolscout.modes.client import SurfaceClient
from toolscout.modes.hints import hinted, native_order, server_loads
from toolscout.naming import native_names, only_owner
from toolscout.upstream import Upstream, UpstreamSpec


def registered_names(pairs: Iterable[tuple[str, str]], specs: Mapping[str, UpstreamSpec]) -> dict[tuple[str, str], str]:
    """The name `toolNames: registered` prefers for each registered tool among `pairs` (`specs`: the
    upstreams by name): a callback tool's own name, a registered server's `{toolName}__{tool}`. A
    configured server's tools are left out: they keep `server__tool`."""
    preferred: dict[tuple[str, str], str] = {}
    for server, tool in pairs:
        spec = specs.get(server)
        if spec is None or spec.namespace is None:
            continue
        preferred[(server, tool)] = tool if spec.bare_tools else f"{spec.tool_prefix or spec.registered_name}__{tool}"
    return preferred


class NativeNames:
    """The client-valid name of every catalog tool, recomputed only when the catalog changes.

    Disabled and quarantined tools get names too, so that disabling one never renames another (and a
    call to a quarantined one is told why). `bare`: as in `native_names`, or asked again at each
    change of the catalog (`toolNames: auto`, whose answer changes as servers are registered).
    `registered`: the specs of every upstream by name, for `toolNames: registered`: a callback
    tool (a run's component) under its own name, a registered server's tools as
    `{toolName}__{tool}`, a configured server's as `server__tool`; unique among what one namespace
    sees, so the names are made per namespace of the request (every namespace's at once for a
    principal of none).
    """

    def __init__(
        self,
        catalog: Catalog,
        *,
        bare: bool | Callable[[], bool] = False,
        registered: Callable[[], Mapping[str, UpstreamSpec]] | None = None,
    ) -> None:
        self._catalog = catalog
        self._bare_now: Callable[[], bool] = bare if callable(bare) else (lambda: bare)
        self._bare = False
        self._registered = registered
        self._version: tuple[int, bool] | None = None
        self._pairs: list[tuple[str, str]] = []
        self._names: dict[tuple[str, str], str] = {}
        self._routes: dict[str, tuple[str, str]] = {}
        self._prefixed: dict[str, tuple[str, str]] = {}
        """With bare names, what `server__tool` stands for: such a name keeps working (a client written
        against prefixed names, a tool renamed when a namesake arrived, or back)."""
        self._tables: dict[str | None, tuple[dict[tuple[str, str], str], dict[str, tuple[str, str]]]] = {}
        """`toolNames: registered`: the names and routes of each namespace asked for so far."""

    @property
    def per_namespace(self) -> bool:
        """Whether names depend on the request's namespace (`toolNames: registered`)."""
        return self._registered is not None

    def _fresh(self) -> None:
        bare = self._bare_now()
        if self._version != (self._catalog.version, bare):
            self._bare = bare
            every = self._catalog.tools(include_disabled=True, include_quarantined=True)
            self._pairs = [(e.server, e.name) for e in every]
            self._names = native_names(self._pairs, bare=bare)
            self._routes = {name: pair for pair, name in self._names.items()}
            self._prefixed = {name: pair for pair, name in native_names(self._pairs).items()} if bare else {}
            self._tables = {}
            self._version = (self._catalog.version, bare)

    def _table(self) -> tuple[dict[tuple[str, str], str], dict[str, tuple[str, str]]]:
        """The names and routes the request's namespace sees (`_names`, `_routes` but per namespace)."""
        self._fresh()
        if self._registered is None:
            return self._names, self._routes
        namespace = current_scope().namespace
        table = self._tables.get(namespace)
        if table is None:
            specs = self._registered()
            pairs = [
                pair
                for pair in self._pairs
                if namespace is None or (spec := specs.get(pair[0])) is None or spec.namespace in (None, namespace)
            ]
            names = native_names(pairs, preferred=registered_names(pairs, specs))
            table = self._tables[namespace] = (names, {name: pair for pair, name in names.items()})
        return table

    def name(self, server: str, tool: str) -> str:
        """The native name of `server`'s `tool` (also for a tool the catalog does not hold)."""
        names, _ = self._table()
        found = names.get((server, tool))
        if found is not None:
            return found
        pair = (server, tool)
        preferred = registered_names([pair], self._registered()) if self._registered is not None else None
        return native_names([pair], bare=self._bare, preferred=preferred)[pair]

    def names_of(self, entries: Iterable[CatalogTool]) -> list[str]:
        """The native names of `entries`, in their order (one look at the table for all of them: a large
        catalog's list asks for every name at once)."""
        names, _ = self._table()
        return [names.get((e.server, e.name)) or self.name(e.server, e.name) for e in entries]

    def route(self, name: str, visible: Visible | None = None) -> tuple[str, str] | None:
        """The `(server, tool)` a native name stands for, its `server__tool` name when names are bare, or
        an upstream's own tool name (naming.py), in that order.

        A bare name that several servers' enabled tools share raises `AmbiguousName`. `visible`: whether
        the request's scope sees a tool; a name for a tool it does not see stands for nothing.
        """
        _, routes = self._table()
        route = routes.get(name) or self._prefixed.get(name)
        if route is not None:
            entry = self._catalog.get(*route)
            return route if visible is None or entry is None or visible(entry) else None
        # An enabled tool wins over disabled namesakes; only a disabled one gets TOOL_DISABLED.
        for enabled in (True, False):
            owners = [
                e.server
                for e in self._catalog.tools(include_disabled=not enabled)
                if e.name == name and (visible is None or visible(e))
            ]
            server = only_owner("tool", name, owners, (self.name(s, name) for s in sorted(set(owners))))
            if server is not None:
                return server, name
        return None

    def expose(self, entry: CatalogTool) -> types.Tool:
        """The tool as a client sees it natively: everything its server said, under its native name."""
        return entry.tool.model_copy(update={"name": self.name(entry.server, entry.name)})


PASSTHROUGH_STEPS: Phrasing = {
    "find_tool": "tools/list names every tool this gateway offers.",
    "list_servers": "tools/list names every tool this gateway offers, after its server.",
    "tool_details": "Its inputSchema in tools/list says what it takes.",
}


def _enabled_servers(gateway: Gateway) -> int:
    with scoped(UNSCOPED):  # names never depend on who asks: every server counts
        return len([u for u in gateway.upstreams if not u.spec.disabled])


def _every_spec(gateway: Gateway) -> dict[str, UpstreamSpec]:
    with scoped(UNSCOPED):
        return {u.name: u.spec for u in gateway.upstreams}


def bare_names(naming: ToolNaming, gateway: Gateway) -> bool:
    """Whether passthrough leaves names bare where no two servers share them, for `naming` in front of
    `gateway` as it is now (`auto`: while it has one server; servers registered at run time count)."""
    if naming == "auto":
        return _enabled_servers(gateway) <= 1
    return naming == "bare-when-unique"


def native_names_for(naming: ToolNaming, gateway: Gateway) -> NativeNames:
    """The native names `naming` gives `gateway`'s tools: `auto` asks again at each catalog change how
    many servers there are, `registered` names each run's tools as its registrations say."""
    if naming == "registered":
        return NativeNames(gateway.catalog, registered=lambda: _every_spec(gateway))
    if naming == "auto":
        return NativeNames(gateway.catalog, bare=lambda: bare_names("auto", gateway))
    return NativeNames(gateway.catalog, bare=naming == "bare-when-unique")


class PassthroughSurface:
    """The enabled tools themselves: description, schemas, annotations and `_meta` as their server gave
    them, toolscout's hints added to `_meta`, in the order of `hints.native_order`."""

    per_client = False
    next_steps: Phrasing = PASSTHROUGH_STEPS

    def __init__(self, gateway: Gateway, *, naming: ToolNaming = "auto") -> None:
        self.gateway = gateway
        bare = bare_names(naming, gateway)
        self.names = native_names_for(naming, gateway)
        self._exposed: list[types.Tool] = []
        self._entries: list[CatalogTool] = []
        self._loads: dict[str, Load | None] = {}
        self._exposed_version: object = None
        self._scoped = ScopedCache[list[types.Tool]]()
        """What each scope that narrows sees of `_exposed`."""
        self.instructions = "toolscout passes through the tools of its MCP servers; " + (
            "a registered component keeps its own name, a registered server's tools are named toolName__tool, "
            "a configured server's server__tool."
            if naming == "registered"
            else "each keeps its own name, unless two servers have a tool of that name: then it is named server__tool."
            if bare
            else "each tool is named server__tool (a tool's own name works too when one server has it)."
        )

    async def tools(self, client: SurfaceClient) -> list[types.Tool]:
        await self.gateway.settle_startup()
        # Made again only when the catalog (or a server's `load`) changed: copying every tool of a
        # large catalog on each tools/list held the event loop, and so would their search hints.
        catalog = self.gateway.catalog
        loads = server_loads(self.gateway)
        version = (catalog.version, tuple(loads.items()))
        if self._exposed_version != version:
            # A hidden tool is called by name, never listed; the order is the one a prompt cache keeps (hints.py).
            self._entries = native_order(catalog.tools(include_hidden=False), loads)
            self._loads = loads
            # Under per-namespace names each scope's list is made below, from the entries.
            self._exposed = [] if self.names.per_namespace else self._expose(self._entries)
            self._exposed_version = version
        scope = current_scope()
        visible = self.gateway.visibility.tool_filter(scope)
        if self.names.per_namespace:  # each namespace has names of its own
            return self._scoped.get(
                scope,
                (version, tuple(u.name for u in self.gateway.upstreams)),
                lambda: self._expose([e for e in self._entries if visible is None or visible(e)]),
            )
        if visible is None:
            return self._exposed
        return self._scoped.get(
            scope,
            (version, tuple(u.name for u in self.gateway.upstreams)),
            lambda: [tool for entry, tool in zip(self._entries, self._exposed, strict=True) if visible(entry)],
        )

    def _expose(self, entries: list[CatalogTool]) -> list[types.Tool]:
        """`entries` as this surface lists them: under their native names, with the hints of hints.py."""
        names = self.names.names_of(entries)
        return [hinted(entry, name, self._loads) for entry, name in zip(entries, names, strict=True)]

    async def call(self, client: SurfaceClient, name: str, arguments: dict[str, Any]) -> types.CallToolResult | None:
        visible = self.gateway.visibility.tool_filter(current_scope())
        route = self.names.route(name, visible)
        if route is None:
            await self.gateway.settle_startup()  # a client may call before the catalog has arrived
            route = self.names.route(name, visible)
        if route is None:
            # Never forwarded, not even in front of one server: a server whose own lookup is loose
            # (case-insensitive, say) would run a tool the rules disabled under another spelling.
            # The client gets the protocol's unknown-tool error, as from the server itself (serve/server.py).
            return None
        return await self.gateway.execute(route[0], route[1], arguments)

    def native(self, name: str) -> bool:
        return True  # every tool here is an upstream's own


def split_pin(pin: str) -> tuple[str, str] | None:
    """Split a pin `server/tool` into `(server, tool)` (a server's name has no `/`); None if it names no tool."""
    server, sep, tool = pin.partition("/")
    return (server, tool) if sep and server and tool else None


class PinnedTools:
    """The pinned tools of the request's scope, as native tools, and the routing of their calls."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.names = NativeNames(gateway.catalog)
        self._cache = ScopedCache[list[CatalogTool]]()

    def entries(self, scope: Scope) -> list[CatalogTool]:
        """The enabled catalog tools `scope` pins and sees, in the order pinned, each once."""
        if not scope.pinned_tools:
            return []
        upstreams = self.gateway.upstreams  # those the request's scope sees
        version = (self.gateway.catalog.version, tuple(u.name for u in upstreams))
        return self._cache.get(scope, version, lambda: self._resolve(scope, upstreams), key=scope.pinned_tools)

    def _resolve(self, scope: Scope, upstreams: list[Upstream]) -> list[CatalogTool]:
        shown = {u.name: u for u in upstreams}
        own = {u.spec.registered_name: u for u in upstreams if u.spec.namespace is not None}
        found: dict[tuple[str, str], CatalogTool] = {}
        for pin in scope.pinned_tools:
            split = split_pin(pin)
            if split is None:
                continue
            server, tool = split
            upstream = shown.get(server) or (own.get(server) if scope.namespace is not None else None)
            if upstream is None or (upstream.spec.namespace not in (None, scope.namespace)):
                continue
            entry = self.gateway.visibility.get(scope, upstream.name, tool)
            if entry is not None and entry.enabled:
                found.setdefault((entry.server, entry.name), entry)
        return list(found.values())

    def tools(self) -> list[types.Tool]:
        """The request's scope's pinned tools under their native names, with the hints of hints.py."""
        entries = self.entries(current_scope())
        if not entries:
            return []
        loads = server_loads(self.gateway)
        return [hinted(entry, self.names.name(entry.server, entry.name), loads) for entry in entries]

    def route(self, name: str) -> tuple[str, str] | None:
        """The `(server, tool)` of the request's scope's pinned tool called `name` natively, if any."""
        scope = current_scope()
        if not scope.pinned_tools:
            return None
        return next(
            ((e.server, e.name) for e in self.entries(scope) if self.names.name(e.server, e.name) == name), None
        )

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult | None:
        """The result of the pinned tool `name`, or None when the request's scope pins no such tool."""
        route = self.route(name)
        if route is None:
            return None
        return await self.gateway.execute(route[0], route[1], arguments)
