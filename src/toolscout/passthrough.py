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

from toolscout.gateway import Gateway

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


class PassthroughSurface:
    """The enabled tools themselves: description, schemas and annotations as their server gave them."""

    instructions = "toolscout passes through the tools of several MCP servers; each tool is named server__tool."

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self._routes: dict[str, tuple[str, str]] = {}

    async def tools(self) -> list[types.Tool]:
        await self.gateway.settle_startup()
        entries = self.gateway.catalog.tools()
        names = native_names((e.server, e.name) for e in entries)
        self._routes = {names[(e.server, e.name)]: (e.server, e.name) for e in entries}
        return [e.tool.model_copy(update={"name": names[(e.server, e.name)]}) for e in entries]

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult | None:
        route = self._routes.get(name)
        if route is None:
            await self.tools()  # a client may call before listing, or after the catalog changed
            route = self._routes.get(name)
        if route is None:
            return None
        return await self.gateway.execute(route[0], route[1], arguments)
