"""Passthrough mode: every enabled upstream tool exposed natively as `server__tool`.

Names must be valid for every major client: at most 64 characters of `[a-zA-Z0-9_-]` (the
strictest common rule; Claude, OpenAI and Gemini all accept it). Anything else is replaced by
`_`, and a name that is too long, or that two tools would share after that, gets a short hash of
the original `server` and `tool` instead of its tail, so names are deterministic and unique.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import mcp_types as types

from toolscout.catalog import Catalog, CatalogTool
from toolscout.errors import Phrasing
from toolscout.gateway import Gateway
from toolscout.routing import only_owner
from toolscout.sessions import ClientState

MAX_NAME = 64
SEPARATOR = "__"
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")


def _hash(server: str, tool: str, length: int) -> str:
    return hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:length]


def _plain(server: str, tool: str) -> str:
    return _INVALID.sub("_", server) + SEPARATOR + _INVALID.sub("_", tool)


def _hashed(server: str, tool: str, length: int) -> str:
    suffix = "_" + _hash(server, tool, length)
    return _plain(server, tool)[: MAX_NAME - len(suffix)] + suffix


def native_names(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """A unique, client-valid name for each `(server, tool)`; the same set always gets the same names."""
    unique = sorted(set(pairs))
    names: dict[tuple[str, str], str] = {}
    groups: defaultdict[str, list[tuple[str, str]]] = defaultdict(list)
    for pair in unique:
        plain = _plain(*pair)
        groups[plain if len(plain) <= MAX_NAME else _hashed(*pair, 8)].append(pair)
    taken = {name for name, members in groups.items() if len(members) == 1}
    for name, members in groups.items():
        if len(members) == 1:
            names[members[0]] = name
            continue
        # Several tools would share a name: each gets its own hash, longer until none collide.
        for pair in members:
            length = 8
            candidate = _hashed(*pair, length)
            while candidate in taken:
                length += 4
                candidate = _hashed(*pair, length)
            taken.add(candidate)
            names[pair] = candidate
    return names


class NativeNames:
    """The client-valid name of every catalog tool, recomputed only when the catalog changes.

    Disabled tools get names too, so that disabling one never renames another.
    """

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._version = -1
        self._names: dict[tuple[str, str], str] = {}
        self._routes: dict[str, tuple[str, str]] = {}

    def _fresh(self) -> None:
        if self._version != self._catalog.version:
            self._names = native_names((e.server, e.name) for e in self._catalog.tools(include_disabled=True))
            self._routes = {name: pair for pair, name in self._names.items()}
            self._version = self._catalog.version

    def name(self, server: str, tool: str) -> str:
        """The native name of `server`'s `tool` (also for a tool the catalog does not hold)."""
        self._fresh()
        return self._names.get((server, tool)) or native_names([(server, tool)])[(server, tool)]

    def route(self, name: str) -> tuple[str, str] | None:
        """The `(server, tool)` a native name stands for, or an upstream's own tool name (routing.py).

        A bare name that several servers' enabled tools share raises `AmbiguousName`.
        """
        self._fresh()
        route = self._routes.get(name)
        if route is not None:
            return route
        # An enabled tool wins over disabled namesakes; only a disabled one gets TOOL_DISABLED.
        for enabled in (True, False):
            owners = [e.server for e in self._catalog.tools(include_disabled=not enabled) if e.name == name]
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


class PassthroughSurface:
    """The enabled tools themselves: description, schemas and annotations as their server gave them."""

    per_client = False
    next_steps: Phrasing = PASSTHROUGH_STEPS

    instructions = (
        "toolscout passes through the tools of several MCP servers; each tool is named server__tool "
        "(a tool's own name works too when one server has it)."
    )

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.names = NativeNames(gateway.catalog)

    async def tools(self, client: ClientState) -> list[types.Tool]:
        await self.gateway.settle_startup()
        return [self.names.expose(e) for e in self.gateway.catalog.tools()]

    async def call(self, client: ClientState, name: str, arguments: dict[str, Any]) -> types.CallToolResult | None:
        route = self.names.route(name)
        if route is None:
            await self.gateway.settle_startup()  # a client may call before the catalog has arrived
            route = self.names.route(name)
        if route is None:
            # In front of one server the gateway stays out of the way: the server answers for a
            # name it did not list (as it would have directly), not the gateway.
            servers = [u.name for u in self.gateway.upstreams if not u.spec.disabled]
            if len(servers) != 1:
                return None
            return await self.gateway.execute(servers[0], name, arguments, unlisted=True)
        return await self.gateway.execute(route[0], route[1], arguments)
