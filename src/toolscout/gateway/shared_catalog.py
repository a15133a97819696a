"""The last known catalog of each server, shared by the replicas through Redis (`registry.backend:
redis`): a replica that starts later answers at once from what another one listed, while it connects.

A `SnapshotStore` (snapshots.py) over a synchronous Redis client (the gateway calls stores from a
worker thread). Each server's snapshots live in the hash `catalog:<server>`, one field per
configuration hash, as the SQLite store's row in JSON (`store.snapshot_row`), so a replica with
another configuration of the server never answers from it. Every snapshot is also kept in the
local store (`toolscout cache show` and the command line read that one), and a server Redis knows
nothing of is looked up there. Redis down: a warning (once until it is back), the local store
answers; a store never raises for its backend.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from toolscout.config.models import GatewayConfig
from toolscout.gateway.snapshots import SnapshotStore
from toolscout.gateway.store import CatalogStore, ServerSnapshot, snapshot_from_row, snapshot_row, store_path

logger = logging.getLogger(__name__)

DEFAULT_PREFIX = "toolscout:"


def catalog_store(config: GatewayConfig) -> SnapshotStore:
    """The store `catalogCache` and `registry` say: the SQLite file, shared through Redis when the
    registry is Redis (the replicas of one gateway)."""
    local = CatalogStore(store_path(config.catalog_cache))
    if config.registry.backend == "redis" and config.registry.url:
        return SharedCatalogStore(config.registry.url, prefix=config.registry.key_prefix, local=local)
    return local


class SharedCatalogStore:
    """Catalogs in Redis for every replica, and in `local` for this machine's command line."""

    def __init__(self, url: str, *, prefix: str = DEFAULT_PREFIX, local: SnapshotStore | None = None) -> None:
        # redis-py is imported only by a gateway that uses Redis (not by every `serve` on a laptop).
        import redis
        import redis.exceptions

        from toolscout.registry.redis import COMMAND_TIMEOUT, CONNECT_TIMEOUT, redis_address

        self.where = redis_address(url)
        self.prefix = prefix
        self.local = local
        self._redis: redis.Redis = redis.Redis.from_url(  # pyright: ignore[reportUnknownMemberType]
            url, decode_responses=True, socket_connect_timeout=CONNECT_TIMEOUT, socket_timeout=COMMAND_TIMEOUT
        )
        self._failures = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)
        self._down = False

    def _key(self, server: str) -> str:
        return f"{self.prefix}catalog:{server}"

    def load(self, keys: Mapping[str, str]) -> dict[str, ServerSnapshot]:
        found: dict[str, ServerSnapshot] = {}
        try:
            for server, config_hash in keys.items():
                raw = cast(str | None, self._redis.hget(self._key(server), config_hash))
                snapshot = snapshot_from_row(json.loads(raw)) if raw is not None else None
                if snapshot is not None:
                    found[server] = snapshot
            self._up()
        except self._failures as exc:
            self._warn(exc)
        missing = {server: key for server, key in keys.items() if server not in found}
        if self.local is not None and missing:
            found.update(self.local.load(missing))
        return found

    def save(self, snapshots: Sequence[ServerSnapshot]) -> None:
        if self.local is not None:
            self.local.save(snapshots)
        try:
            pipe: Any = self._redis.pipeline(transaction=False)  # pyright: ignore[reportUnknownMemberType]
            for snapshot in snapshots:
                pipe.hset(self._key(snapshot.server), snapshot.config_hash, json.dumps(snapshot_row(snapshot)))
            pipe.execute()
            self._up()
        except self._failures as exc:
            self._warn(exc)

    def clear(self, server: str | None = None) -> int:
        gone = self.local.clear(server) if self.local is not None else 0
        try:
            every = cast(Iterable[str], self._redis.scan_iter(self._key("*")))  # pyright: ignore[reportUnknownMemberType]
            names = [self._key(server)] if server is not None else list(every)
            if names:
                self._redis.delete(*names)
            self._up()
        except self._failures as exc:
            self._warn(exc)
        return gone

    def _warn(self, exc: BaseException) -> None:
        if not self._down:
            self._down = True
            logger.warning(
                "shared catalog (Redis at %s) unreachable, the local one answers meanwhile: %s", self.where, exc
            )

    def _up(self) -> None:
        if self._down:
            self._down = False
            logger.info("shared catalog (Redis at %s) reachable again", self.where)
