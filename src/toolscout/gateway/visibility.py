"""What the scope of the request being served sees of a gateway's upstreams and catalog.

Everything below the MCP server that lists, finds or calls a server or a tool asks here, with
`current_scope()` (config/scopes.py): the servers a scope sees (`Scope.sees_server`, by the
server's namespace and registered name), the tools it sees (`Scope.sees_tool`), and the errors for
names it does not see, which are the errors for names that do not exist: `SERVER_NOT_FOUND` and
`TOOL_NOT_FOUND` (never `TOOL_DISABLED`), their did-you-mean drawn only from what it sees.

An unrestricted scope (`UNSCOPED`: stdio, the CLI, a gateway without authentication) costs
nothing here: every question is answered from the registry and the catalog as they are.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Coroutine, Hashable
from typing import Any, Generic, TypeVar, TypeVarTuple

from toolscout.catalog import Catalog, CatalogTool, describe_server
from toolscout.config.rules import RuleKind
from toolscout.config.scopes import UNSCOPED, Scope, scoped
from toolscout.errors import ToolNotFound, tool_quarantined
from toolscout.gateway.upstreams import UpstreamRegistry, wait_until_connected
from toolscout.suggestions import server_not_found
from toolscout.upstream import Upstream

Ts = TypeVarTuple("Ts")
T = TypeVar("T")
MAX_SCOPES = 32
"""Scopes whose derived state (a search index, a list, a description) is kept, least recently used dropped."""


def narrows(scope: Scope) -> bool:
    """Whether `scope` hides anything at all (else no filtering work is done for it)."""
    return not scope.unrestricted


def scope_key(scope: Scope) -> Hashable:
    """What two scopes that see the same servers and tools share (their label and pins aside):
    the key of whatever is kept per scope (a search index, a generated description)."""
    return (scope.namespace, scope.servers, scope.tools)


def sees_upstream(scope: Scope, upstream: Upstream) -> bool:
    """Whether `scope` sees the server `upstream`."""
    spec = upstream.spec
    return scope.sees_server(spec.namespace, spec.registered_name)


def sees_item(scope: Scope, upstream: Upstream, name: str, kind: RuleKind = "tool") -> bool:
    """Whether `scope` sees `upstream`'s tool `name` (or its prompt, or resource URI, by `kind`)."""
    spec = upstream.spec
    return scope.sees_tool(spec.namespace, spec.registered_name, upstream.name, name, kind)


async def unscoped(func: Callable[[*Ts], Coroutine[Any, Any, Any]], *args: *Ts) -> None:
    """Run `func(*args)` outside any scope: a task inherits the context it is started from, and work a
    request starts for everyone (a list fetched, subscriptions dropped) must not see only what it sees."""
    with scoped(UNSCOPED):
        await func(*args)


class Visibility:
    """The upstreams of `registry` and the tools of `catalog` as one scope sees them."""

    def __init__(self, registry: UpstreamRegistry, catalog: Catalog) -> None:
        self._registry = registry
        self._catalog = catalog

    def upstreams(self, scope: Scope) -> list[Upstream]:
        """The servers `scope` sees, in configuration order."""
        if not narrows(scope):
            return list(self._registry)
        return [upstream for upstream in self._registry if sees_upstream(scope, upstream)]

    def named(self, name: str, scope: Scope) -> Upstream:
        """The server `name` if `scope` sees it, else `SERVER_NOT_FOUND` with the closest names it sees."""
        found = self._registry.get(name)
        if found is not None and (not narrows(scope) or sees_upstream(scope, found)):
            return found
        raise server_not_found(name, [u.name for u in self.upstreams(scope)])

    def sees(self, scope: Scope, server: str, tool: str) -> bool:
        """Whether `scope` sees the server `server` and a tool of it called `tool` (listed or not)."""
        if not narrows(scope):
            return True
        upstream = self._registry.get(server)
        return upstream is not None and sees_item(scope, upstream, tool)

    async def live(self, name: str, scope: Scope) -> Upstream:
        """The server `name` if `scope` sees it, connected (woken when idle, waited for while connecting)."""
        upstream = self.named(name, scope)
        await wait_until_connected(upstream)
        return upstream

    def tool_filter(self, scope: Scope) -> Callable[[CatalogTool], bool] | None:
        """Whether `scope` sees a catalog tool (None: it sees every one)."""
        if not narrows(scope):
            return None
        return lambda entry: self.sees(scope, entry.server, entry.name)

    def tools(
        self, scope: Scope, server: str | None = None, *, include_disabled: bool = False, include_hidden: bool = True
    ) -> list[CatalogTool]:
        """The catalog's tools `scope` sees (of one server, or of all), in the catalog's order (a listing
        leaves out the hidden ones with `include_hidden=False`)."""
        tools = self._catalog.tools(server, include_disabled=include_disabled, include_hidden=include_hidden)
        visible = self.tool_filter(scope)
        return tools if visible is None else [t for t in tools if visible(t)]

    def get(self, scope: Scope, server: str, name: str) -> CatalogTool | None:
        """Return `server`'s tool `name` (enabled or not), if the catalog has it and `scope` sees it."""
        entry = self._catalog.get(server, name)
        visible = self.tool_filter(scope)
        return entry if entry is None or visible is None or visible(entry) else None

    def admit_tool(self, scope: Scope, server: str, name: str) -> CatalogTool:
        """Return the tool that may be called, as `Catalog.admit_tool` does, within `scope`: a tool it does not
        see is `TOOL_NOT_FOUND` (never `TOOL_DISABLED`), its suggestions only tools it sees."""
        return self._catalog.admit_tool(server, name, visible=self.tool_filter(scope))

    def any_tool(self, scope: Scope, server: str, name: str) -> CatalogTool:
        """Return `server`'s tool `name`, enabled or not, if `scope` sees it; else raise `TOOL_NOT_FOUND`
        (or `TOOL_QUARANTINED`)."""
        entry = self.get(scope, server, name)
        if entry is None:
            raise self.not_found(scope, server, name)
        if entry.quarantined:  # its changed description must not reach the model before it is approved
            raise tool_quarantined(server, name)
        return entry

    def not_found(self, scope: Scope, server: str, name: str) -> ToolNotFound:
        """The `TOOL_NOT_FOUND` for a tool `scope` does not see (suggesting only tools it sees)."""
        return self._catalog.not_found(server, name, visible=self.tool_filter(scope))

    def counts(self, scope: Scope, server: str) -> tuple[int, int]:
        """Count the tools, and the enabled tools, of `server` that `scope` sees."""
        if not narrows(scope):
            return self._catalog.counts(server)
        tools = self.tools(scope, server, include_disabled=True)
        return len(tools), sum(1 for t in tools if t.enabled)

    def description(self, scope: Scope, upstream: Upstream) -> str:
        """`upstream`'s description as `scope` reads it: its configured one, else what it said about
        itself, else one made from the tools `scope` sees of it (never naming one it does not see)."""
        if not narrows(scope) or upstream.own_description:
            return upstream.description
        return describe_server(self.tools(scope, upstream.name, include_hidden=False))

    def hidden_count(self, scope: Scope, server: str) -> int:
        """Count the enabled tools of `server` that `scope` sees and no listing shows (`hidden: true`)."""
        if not narrows(scope):
            return self._catalog.hidden_count(server)
        return sum(1 for t in self.tools(scope, server) if t.hidden)


class ScopedCache(Generic[T]):
    """Something derived per scope (a tool list, a description), kept while `version` stays the same,
    for the last `max_scopes` scopes used."""

    def __init__(self, max_scopes: int = MAX_SCOPES) -> None:
        self._max_scopes = max_scopes
        self._entries: OrderedDict[Hashable, tuple[object, T]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, scope: Scope, version: object, make: Callable[[], T], *, key: Hashable = None) -> T:
        """Return `scope`'s value (`key` tells apart values beyond the scope's view), made again by
        `make()` when it is older than `version`."""
        full_key = (scope_key(scope), key)
        entry = self._entries.get(full_key)
        if entry is None or entry[0] != version:
            entry = (version, make())
        self._entries[full_key] = entry
        self._entries.move_to_end(full_key)
        while len(self._entries) > self._max_scopes:
            self._entries.popitem(last=False)
        return entry[1]
