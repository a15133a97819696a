"""What the gateway's `tools/list` costs an agent in tokens, in each mode, against the upstreams'
own tools exposed directly: the figures of `toolscout tokens`, the demo and the dashboard.

Each mode's list is the one its surface gives a client that has just connected (nothing loaded
yet), the list `tools/list` answers with, counted as a 2025-11-25 client receives it
(`tests/test_cli_list_search_execute.py` checks, for every mode, that a real client through the
SDK receives the same). Nothing here imports the SDK's client or server, so `toolscout tokens` answers from the
stored catalog without loading them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, get_args

import mcp_types as types

from toolscout.config.models import ModeName
from toolscout.gateway.core import Gateway
from toolscout.modes.base import SurfaceOptions, make_surface
from toolscout.render.text import tool_tokens

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


@dataclass
class NewClient:
    """A client that has just connected in the handshake era and loaded no tool: what a surface
    shows before anything else has happened."""

    loaded: dict[tuple[str, str], None] = field(default_factory=dict[tuple[str, str], None])
    modern: bool = False

    def mark_tools_changed(self) -> None:
        """Nothing to tell: this client is never served."""


def server_costs(gateway: Gateway) -> list[ServerCost]:
    """Each upstream's enabled tools, counted as the definitions it gave (no gateway in between)."""
    return [
        ServerCost(up.name, up.status.value, len(entries), tool_tokens([t.tool for t in entries]))
        for up in gateway.upstreams
        for entries in [gateway.catalog.tools(up.name)]
    ]


async def listed_tools(gateway: Gateway, mode: ModeName, options: SurfaceOptions | None = None) -> list[types.Tool]:
    """The tools a new client receives from the gateway's `tools/list` in `mode`."""
    return await make_surface(mode, gateway, options).tools(NewClient())


async def mode_tokens(
    gateway: Gateway, modes: Sequence[ModeName] = MODES, options: SurfaceOptions | None = None
) -> list[ModeCost]:
    """What `tools/list` costs a new client in each of `modes` (all by default).

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
