"""The gateway's upstream servers by name: finding one (or saying which names come closest), having
one connected before a call that needs the server itself, and the set changing while the gateway runs.

Each upstream has an owner: "config" for the config file's servers (the gateway starts with them),
"registry" for those registered at run time. The order is always the same for the same set: the
config's servers in file order, then the others by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import anyio

from toolscout.errors import ServerUnavailable, server_unavailable
from toolscout.suggestions import server_not_found
from toolscout.upstream import Status, Upstream

CONFIG_OWNER = "config"
"""The owner of the config file's servers (`mcpServers`)."""
REGISTRY_OWNER = "registry"
"""The owner of the servers registered at run time (the `Registry`, registry/)."""


class UpstreamRegistry:
    """The upstreams of one gateway by name, each with its owner, in a deterministic order.

    The set may change while the gateway runs (`add`, `remove`, `replace`); iterating gives the set
    as it was when iteration began, so a change meanwhile never breaks a loop over it, and a name
    removed is `SERVER_NOT_FOUND` from then on.
    """

    def __init__(self, upstreams: Iterable[Upstream], owner: str = CONFIG_OWNER) -> None:
        self._by_name: dict[str, Upstream] = {}
        self._owners: dict[str, str] = {}
        self._ordered: tuple[Upstream, ...] = ()
        for upstream in upstreams:
            self._by_name[upstream.name] = upstream
            self._owners[upstream.name] = owner
        self.reorder()

    def __iter__(self) -> Iterator[Upstream]:
        return iter(self._ordered)

    def __len__(self) -> int:
        return len(self._ordered)

    @property
    def names(self) -> list[str]:
        """Every name, in order."""
        return [upstream.name for upstream in self._ordered]

    def get(self, name: str) -> Upstream | None:
        """The upstream called `name`, or None."""
        return self._by_name.get(name)

    def owner(self, name: str) -> str | None:
        """Who owns the upstream called `name` ("config", "registry", ...), or None if there is none."""
        return self._owners.get(name)

    def owned_by(self, owner: str) -> list[Upstream]:
        """The upstreams `owner` owns, in order."""
        return [upstream for upstream in self._ordered if self._owners[upstream.name] == owner]

    def named(self, name: str) -> Upstream:
        """The upstream called `name`, or `ServerNotFound` with the closest names."""
        found = self._by_name.get(name)
        if found is not None:
            return found
        raise server_not_found(name, self.names)

    async def live(self, name: str) -> Upstream:
        """The upstream `name`, connected (woken when idle, waited for while connecting), or why not."""
        upstream = self.named(name)
        await wait_until_connected(upstream)
        return upstream

    async def settle(self) -> None:
        """Wait until no upstream is still connecting (bound it with a cancel scope)."""
        for upstream in self._ordered:
            if not upstream.stopped:
                await upstream.wait_settled()

    # Changes (the gateway's runtime.py makes them; nothing here starts or stops a connection)

    def add(self, upstream: Upstream, owner: str) -> None:
        """Add `upstream` (its name must be free), owned by `owner`: placed by name among the others
        (a config server after the config's, until `reorder` says where)."""
        if upstream.name in self._by_name:
            raise ValueError(f"an upstream called {upstream.name!r} is already there")
        self._by_name[upstream.name] = upstream
        self._owners[upstream.name] = owner
        self.reorder()

    def replace(self, upstream: Upstream) -> None:
        """Put `upstream` in the place of the one of the same name (restarted with a new spec)."""
        if upstream.name not in self._by_name:
            raise ValueError(f"no upstream called {upstream.name!r} to replace")
        self._by_name[upstream.name] = upstream
        self._ordered = tuple(self._by_name[u.name] for u in self._ordered)

    def remove(self, name: str) -> Upstream | None:
        """Take the upstream called `name` out (None if there was none)."""
        upstream = self._by_name.pop(name, None)
        if upstream is not None:
            del self._owners[name]
            self._ordered = tuple(u for u in self._ordered if u.name != name)
        return upstream

    def reorder(self, config_order: Sequence[str] = ()) -> None:
        """The config's servers first (in `config_order`, else as they were), then the others by name."""
        rank = {name: i for i, name in enumerate(config_order)}
        before = {u.name: i for i, u in enumerate(self._ordered)}
        config = [n for n in self._by_name if self._owners[n] == CONFIG_OWNER]
        added = {name: i for i, name in enumerate(self._by_name)}  # the order they were given in
        config.sort(key=lambda n: (rank.get(n, len(rank)), before.get(n, len(before)), added[n]))
        others = sorted(n for n in self._by_name if self._owners[n] != CONFIG_OWNER)
        self._ordered = tuple(self._by_name[n] for n in [*config, *others])


async def wait_until_connected(upstream: Upstream) -> None:
    """Wake `upstream` if it is idle and wait while it connects (at most its connect timeout);
    `ServerUnavailable` (with its status and error) if it is not connected then."""
    if upstream.status is Status.IDLE and not upstream.stopped:
        upstream.connect_if_idle()
    if upstream.status is Status.CONNECTING and not upstream.stopped:
        with anyio.move_on_after(upstream.spec.connect_timeout):
            await upstream.wait_settled()
    reason = upstream.stop_reason
    if reason is not None:  # removed (or restarted) while it was waited for
        raise ServerUnavailable(f"Server {upstream.name!r} was {reason}.", server=upstream.name, status="removed")
    if upstream.status is not Status.CONNECTED:
        raise server_unavailable(upstream.name, upstream.status.value, upstream.error)
