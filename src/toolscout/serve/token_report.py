"""What the catalog costs an agent in tokens: each server exposed directly, and each exposure mode.

Here, not in render/, because a mode is measured through the face itself (see below).

`toolscout tokens` and `benchmarks/token_modes.py` both measure through this module, so the
numbers the command prints are the numbers documented in docs/BENCHMARKS.md.

A mode is measured as a client receives it: the gateway's own MCP server for that mode
(`face.server.build_server`), a real `mcp.Client` over the SDK's in-memory transport, and the
`tools/list` result it gets, counted by `tokens.tool_tokens`. Every mode of `ModeName` is
measured, so a mode added there appears here without further change. A mode whose list depends
on the client (dynamic) is counted as a new client sees it, before it has loaded anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, get_args

import mcp_types as types
from mcp import Client

from toolscout.config.models import ModeName
from toolscout.gateway.core import Gateway
from toolscout.modes.base import SurfaceOptions
from toolscout.render.text import tool_tokens
from toolscout.serve.server import build_server
from toolscout.upstream.calls import paginate

COUNTED_ERA = "2025-11-25"
"""The protocol era every figure is counted in (its `tools/list` as such a client receives it)."""
MODES: tuple[ModeName, ...] = get_args(ModeName)
"""Every exposure mode, in the order `ModeName` declares them."""


@dataclass(frozen=True)
class ServerCost:
    """One upstream's enabled tools exposed directly, as its own server lists them."""

    server: str
    status: str
    tools: int
    tokens: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with the keys `toolscout tokens --json` prints."""
        return asdict(self)


@dataclass(frozen=True)
class ModeCost:
    """The gateway in one mode: how many tools `tools/list` gives a client, and their tokens."""

    mode: ModeName
    tools: int
    tokens: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with the keys `toolscout tokens --json` prints."""
        return asdict(self)


def server_costs(gateway: Gateway) -> list[ServerCost]:
    """Each upstream's enabled tools, counted as the definitions it gave (no gateway in between)."""
    return [
        ServerCost(up.name, up.status.value, len(entries), tool_tokens([t.tool for t in entries]))
        for up in gateway.upstreams
        for entries in [gateway.catalog.tools(up.name)]
    ]


async def listed_tools(gateway: Gateway, mode: ModeName, options: SurfaceOptions | None = None) -> list[types.Tool]:
    """The tools a new client receives from the gateway's `tools/list` in `mode`, every page of it."""
    server = build_server(gateway, mode, options)
    # The 2025-11-25 handshake era, what most clients speak today: the 2026 era serialises
    # schemas with `type` first, which shifts counts by a few tokens, so every figure is taken in one era.
    async with Client(server, mode="legacy") as client:

        async def page(cursor: str | None) -> tuple[list[types.Tool], str | None]:
            listed = await client.list_tools(cursor=cursor, cache_mode="bypass")
            return listed.tools, listed.next_cursor

        tools, _ = await paginate(page)
    return tools


async def mode_tokens(
    gateway: Gateway, modes: Sequence[ModeName] = MODES, options: SurfaceOptions | None = None
) -> list[ModeCost]:
    """What `tools/list` costs a new client in each of `modes` (all by default), measured through a real client.

    `options` as configured: dynamic mode's `load_tools` states the configured limit.
    The caller decides how long upstreams may take to connect (`Gateway.settle`); modes whose
    list is the catalog (compact, passthrough) wait for servers on their first attempt to connect
    (`Gateway.settle_startup`).
    """
    costs: list[ModeCost] = []
    for mode in modes:
        tools = await listed_tools(gateway, mode, options)
        costs.append(ModeCost(mode, len(tools), tool_tokens(tools)))
    return costs
