"""What the mirror needs of the upstreams it mirrors: the seam between it and the gateway.

The gateway (`gateway/core.py`) is today's one implementation; the mirror never imports it, so
it can be built, and tested, over anything that keeps upstream connections.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol, TypeVarTuple

from toolscout.upstream import Upstream

Ts = TypeVarTuple("Ts")


class Upstreams(Protocol):
    """The configured upstreams: each by name, live on demand, and a task group to fetch in."""

    @property
    def upstreams(self) -> Sequence[Upstream]:
        """Every configured upstream, in configuration order."""
        ...

    def upstream(self, name: str) -> Upstream:
        """The upstream called `name`, or `ServerNotFound`."""
        ...

    async def live_upstream(self, server: str) -> Upstream:
        """The upstream `server`, connected (woken when idle, waited for while connecting), or why not."""
        ...

    async def settle_startup(self) -> None:
        """Wait for the servers still on their first attempt to connect (bounded by their own timeouts)."""
        ...

    def start_soon(self, func: Callable[[*Ts], Coroutine[Any, Any, Any]], *args: *Ts, name: str) -> None:
        """Run `func(*args)` in the background, for as long as the upstreams are kept (it must not raise)."""
        ...
