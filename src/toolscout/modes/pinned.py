"""A principal's pinned tools: upstream tools shown natively in its tools/list beside the meta-tools.

At 2026-07-28 tools/list may vary by the authorization on the request, never per connection, so a
token's `pinnedTools` (`server/tool`, config/scopes.py) are how an agent gets chosen tools as its
own in either era (dynamic mode's `load_tools` is handshake-era only). A pin names the server as it
is shown, or, for a server of the principal's own namespace, by its registered name; it is shown
under passthrough's native name (`server__tool`, naming.py) and called like passthrough's tools.
A pin of a server or tool the scope does not see, or of a tool not (or no longer) listed or
disabled, shows nothing.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from toolscout.catalog import CatalogTool
from toolscout.config.scopes import Scope, current_scope
from toolscout.gateway.core import Gateway
from toolscout.gateway.visibility import ScopedCache
from toolscout.modes.passthrough import NativeNames
from toolscout.upstream import Upstream


def split_pin(pin: str) -> tuple[str, str] | None:
    """`(server, tool)` of a pin `server/tool` (the server's name has no `/`), None if it has no tool."""
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
        """The request's scope's pinned tools under their native names."""
        return [self.names.expose(entry) for entry in self.entries(current_scope())]

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
