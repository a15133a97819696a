"""The gateway's upstream servers by name: finding one (or saying which names come closest), and
having one connected before a call that needs the server itself."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import anyio

from toolscout.errors import server_unavailable
from toolscout.suggestions import server_not_found
from toolscout.upstream import Status, Upstream


class UpstreamRegistry:
    """The upstreams of one gateway, in configuration order, by name (fixed for the gateway's life)."""

    def __init__(self, upstreams: Iterable[Upstream]) -> None:
        self._by_name = {upstream.name: upstream for upstream in upstreams}

    def __iter__(self) -> Iterator[Upstream]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def get(self, name: str) -> Upstream | None:
        """The upstream called `name`, or None."""
        return self._by_name.get(name)

    def named(self, name: str) -> Upstream:
        """The upstream called `name`, or `ServerNotFound` with the closest names."""
        found = self._by_name.get(name)
        if found is not None:
            return found
        raise server_not_found(name, list(self._by_name))

    async def live(self, name: str) -> Upstream:
        """The upstream `name`, connected (woken when idle, waited for while connecting), or why not."""
        upstream = self.named(name)
        await wait_until_connected(upstream)
        return upstream

    async def settle(self) -> None:
        """Wait until no upstream is still connecting (bound it with a cancel scope)."""
        for upstream in self._by_name.values():
            await upstream.wait_settled()


async def wait_until_connected(upstream: Upstream) -> None:
    """Wake `upstream` if it is idle and wait while it connects (at most its connect timeout);
    `ServerUnavailable` (with its status and error) if it is not connected then."""
    if upstream.status is Status.IDLE:
        upstream.want()
    if upstream.status is Status.CONNECTING:
        with anyio.move_on_after(upstream.spec.connect_timeout):
            await upstream.wait_settled()
    if upstream.status is not Status.CONNECTED:
        raise server_unavailable(upstream.name, upstream.status.value, upstream.error)
