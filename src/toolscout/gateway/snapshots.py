"""Each server's last known live lists, kept between runs: what the gateway answers from at start.

Before any upstream starts, the snapshots stored under each server's configuration (`cache_key`)
are read (in a worker thread, given up on after `CACHE_LOAD_BUDGET_SECONDS`); their servers list
those tools (marked cached) until their own live lists replace them. Every live list is kept as
the server's snapshot and saved, the latest per server, by a task of the gateway's. A store never
stops the gateway: whatever goes wrong with it is logged and costs only the cache.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterable, Mapping, Sequence

import anyio
import mcp_types as types
from pydantic import BaseModel

from toolscout.gateway.store import ServerSnapshot, SnapshotStore
from toolscout.gateway.upstreams import UpstreamRegistry
from toolscout.upstream import ServerIdentity, Status, Upstream

logger = logging.getLogger(__name__)

CACHE_LOAD_BUDGET_SECONDS = 2.0
"""How long start-up waits for the persistent catalog before going on without it (a locked or slow disk)."""


class LiveListsOnly:
    """A `SnapshotStore` for a gateway that connects its servers to have their live lists: those are
    saved to `store`, none is answered from it (the gateway would otherwise start from it)."""

    def __init__(self, store: SnapshotStore) -> None:
        self._store = store

    def load(self, keys: Mapping[str, str]) -> dict[str, ServerSnapshot]:
        return {}

    def save(self, snapshots: Sequence[ServerSnapshot]) -> None:
        self._store.save(snapshots)

    def clear(self, server: str | None = None) -> int:
        return self._store.clear(server)


class Snapshots:
    """The snapshots of one gateway's servers: read from `store` at start, replaced by each live list,
    saved as they come (no store: nothing is read or kept)."""

    def __init__(self, store: SnapshotStore | None, upstreams: UpstreamRegistry) -> None:
        self._store = store
        self._upstreams = upstreams
        self._snapshots: dict[str, ServerSnapshot] = {}
        """Each server's last known live list (from the store at start, then from the server itself)."""
        self._unsaved: dict[str, ServerSnapshot] = {}
        self._save_wanted = anyio.Event()
        self._closing = False

    def answers_for(self, server: str) -> bool:
        """Whether `server`'s catalog can be answered from a snapshot (stored, or listed live in this run)."""
        return server in self._snapshots

    def cached_at(self, server: str) -> float | None:
        """When the catalog `server` is answered from was listed live, if it comes from the store.

        That is while the server is not connected (connecting, failed, lost) and its last known
        live list stands in for it; None when its catalog is live, declared, or absent.
        """
        upstream = self._upstreams.get(server)
        snapshot = self._snapshots.get(server)
        if upstream is None or snapshot is None or upstream.status is Status.CONNECTED:
            return None
        return snapshot.saved_at

    async def load(self, upstreams: Iterable[Upstream] | None = None) -> dict[str, ServerSnapshot]:
        """Read the stored snapshots of this configuration's servers (or of `upstreams`, added while the
        gateway runs) and have each server list its stored tools (and say what it said about itself)
        until it is connected; the snapshots read."""
        store = self._store
        chosen = self._upstreams if upstreams is None else upstreams
        keys = {u.name: u.spec.cache_key for u in chosen if u.spec.cache_key and not u.spec.disabled}
        if store is None or not keys:
            return {}
        found: dict[str, ServerSnapshot] = {}
        # In a worker thread: the event loop stays free, and a store stuck on a lock is given up on.
        with anyio.move_on_after(CACHE_LOAD_BUDGET_SECONDS) as scope:
            try:
                found = await anyio.to_thread.run_sync(store.load, keys, abandon_on_cancel=True)
            except Exception as exc:  # a store must never stop the gateway
                logger.warning("catalog cache not read: %s", exc)
        if scope.cancelled_caught:
            logger.warning("catalog cache not read within %gs; starting without it", CACHE_LOAD_BUDGET_SECONDS)
        loaded: dict[str, ServerSnapshot] = {}
        for name, snapshot in found.items():
            upstream = self._upstreams.get(name)
            if upstream is None or snapshot.config_hash != keys.get(name):
                continue  # never another configuration's catalog
            loaded[name] = self._snapshots[name] = snapshot
            upstream.identity = _identity(snapshot)
            upstream.use_offline_tools(snapshot.tools)
        if loaded:
            logger.info("catalog cache: %d of %d servers answer from it until connected", len(loaded), len(keys))
        return loaded

    def tools_listed(self, upstream: Upstream, tools: Sequence[types.Tool]) -> None:
        """A live tool list arrived (connect, list_changed): it is the one to fall back on, and to save."""
        key = upstream.spec.cache_key
        if self._store is None or key is None:
            return
        previous = self._snapshots.get(upstream.name)
        kept = previous if previous is not None and previous.config_hash == key else None
        snapshot = ServerSnapshot(
            server=upstream.name,
            config_hash=key,
            tools=tuple(tools),
            saved_at=time.time(),
            **_identity_fields(upstream.identity),
            # Its resources and prompts as last listed stay until it lists them again.
            resources=kept.resources if kept else None,
            resource_templates=kept.resource_templates if kept else None,
            prompts=kept.prompts if kept else None,
        )
        self._snapshots[upstream.name] = snapshot
        upstream.use_offline_tools(snapshot.tools)  # listed if the connection is lost later
        self._save(snapshot)

    def forget(self, server: str) -> None:
        """Forget `server`, which left the gateway: nothing of it is answered from or saved any more.

        What the store keeps under its config hash stays, for a server of that very configuration to
        start from."""
        self._snapshots.pop(server, None)
        self._unsaved.pop(server, None)

    def content_listed(self, upstream: Upstream, name: str, items: Sequence[BaseModel]) -> None:
        """A live list of resources, templates or prompts (`name`, a `ServerSnapshot` field) arrived:
        kept with the server's tools, and saved."""
        snapshot = self._snapshots.get(upstream.name)
        if snapshot is None or upstream.status is not Status.CONNECTED or getattr(snapshot, name) == tuple(items):
            return  # (nothing is stored for a server without a live tool list of this run)
        self._snapshots[upstream.name] = snapshot = dataclasses.replace(snapshot, **{name: tuple(items)})
        self._save(snapshot)

    def _save(self, snapshot: ServerSnapshot) -> None:
        self._unsaved[snapshot.server] = snapshot
        self._save_wanted.set()

    async def save_until_closed(self) -> None:
        """Write live lists as they come, in a worker thread, the latest per server, a batch per
        transaction; return once `close()` was called and all is written (a task of the gateway's)."""
        store = self._store
        if store is None:
            return
        while True:
            if not self._unsaved:
                if self._closing:
                    return
                await self._save_wanted.wait()
                self._save_wanted = anyio.Event()
                continue
            batch = list(self._unsaved.values())
            self._unsaved.clear()
            try:
                await anyio.to_thread.run_sync(store.save, batch)
            except Exception as exc:  # a store must never stop the gateway
                logger.warning("catalog cache not saved: %s", exc)

    def close(self) -> None:
        """Have `save_until_closed` write what is left and return."""
        self._closing = True
        self._save_wanted.set()


def _identity(snapshot: ServerSnapshot) -> ServerIdentity:
    """What the server said about itself when it was listed live."""
    return ServerIdentity(
        name=snapshot.server_name,
        version=snapshot.server_version,
        title=snapshot.title,
        description=snapshot.description,
        instructions=snapshot.instructions,
        protocol_version=snapshot.protocol_version or "",
    )


def _identity_fields(identity: ServerIdentity | None) -> dict[str, str | None]:
    """Return `identity` as a snapshot keeps it (its fields, each None when the server has not said)."""
    return {
        "server_name": identity.name if identity else None,
        "server_version": identity.version if identity else None,
        "title": identity.title if identity else None,
        "description": identity.description if identity else None,
        "instructions": identity.instructions if identity else None,
        "protocol_version": identity.protocol_version if identity else None,
    }
