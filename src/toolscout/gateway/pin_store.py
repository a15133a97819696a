"""Where pinned tool definitions are kept: beside the persistent catalog (SQLite), and in Redis too
when the replicas share a registry there, so that every replica judges a tool by the same pin.

A pin is a tool's definition as first seen (or last approved) and its hash; beside it, the
definition seen since when it differs (`Seen`), until a person approves it (`toolscout pins
approve`) or the server goes back to the pinned one. The store counts approvals and resets in a
version, which a running gateway reads every second (`version()`, one small query) to take them
up without a restart. New pins never replace stored ones (`INSERT OR IGNORE`, `HSETNX`): a
gateway that could not read the store in time at start cannot overwrite what was approved.

As the catalog store, a pin store never raises for its backend: failures are logged and cost
only what was to be written or read.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, cast

from toolscout.config.models import GatewayConfig
from toolscout.gateway.store import CatalogStore, store_path

logger = logging.getLogger(__name__)

PinKey = tuple[str, str]
"""(server, tool)."""

_BUMP = "INSERT INTO pin_version_v1 (id, version) VALUES (0, 1) ON CONFLICT(id) DO UPDATE SET version = version + 1"


@dataclass(frozen=True)
class Seen:
    """A definition of the tool that differs from its pin, as last seen."""

    hash: str
    definition: dict[str, Any]
    at: float
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pin:
    """A tool's approved definition (as first seen, or as last approved) and what differs from it now."""

    server: str
    tool: str
    hash: str
    definition: dict[str, Any]
    pinned_at: float
    reasons: tuple[str, ...] = ()
    """Why its description reads as instructions to the model (gateway/poisoning.py); empty when clean."""
    seen: Seen | None = field(default=None)

    @property
    def key(self) -> PinKey:
        return (self.server, self.tool)

    def approved(self) -> Pin:
        """This pin with what was seen since as the approved definition."""
        if self.seen is None:
            return self
        s = self.seen
        return replace(self, hash=s.hash, definition=s.definition, pinned_at=time.time(), reasons=s.reasons, seen=None)

    def to_json(self) -> str:
        seen = self.seen
        record: dict[str, Any] = {
            "hash": self.hash,
            "definition": self.definition,
            "pinnedAt": self.pinned_at,
            "reasons": list(self.reasons),
        }
        if seen is not None:
            record["seen"] = {
                "hash": seen.hash,
                "definition": seen.definition,
                "at": seen.at,
                "reasons": list(seen.reasons),
            }
        return json.dumps(record, separators=(",", ":"), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, server: str, tool: str, text: str) -> Pin | None:
        """The pin a stored record holds; None (and a warning) when it cannot be read."""
        try:
            raw = cast(dict[str, Any], json.loads(text))
            seen = cast(dict[str, Any] | None, raw.get("seen"))
            return cls(
                server,
                tool,
                str(raw["hash"]),
                dict(raw["definition"]),
                float(raw["pinnedAt"]),
                tuple(str(r) for r in raw.get("reasons", ())),
                Seen(str(seen["hash"]), dict(seen["definition"]), float(seen["at"]), tuple(seen.get("reasons", ())))
                if seen is not None
                else None,
            )
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            logger.warning("tool pins: ignoring the unreadable pin of %s on %s: %s", tool, server, exc)
            return None


class PinStore(Protocol):
    """Where pins are kept between runs. Called from worker threads; never raises for its backend."""

    path: Path
    """The local file (what the command line shows)."""

    def version(self) -> int | None:
        """How many approvals and resets the store has seen (None: it cannot be read now)."""
        ...

    def load(self) -> dict[PinKey, Pin] | None:
        """Every pin (None: the store cannot be read now)."""
        ...

    def save(self, pins: Sequence[Pin], *, replace_existing: bool = False) -> None:
        """Keep `pins`: new ones never replace a stored pin, only what was seen since is updated
        (`replace_existing`: the pins replace the stored ones, and the version grows: an approval)."""
        ...

    def reset(self) -> int:
        """Forget every pin (each tool is pinned again when next seen); how many there were."""
        ...


class SqlitePins:
    """Pins in the persistent catalog's SQLite file."""

    def __init__(self, catalog: CatalogStore) -> None:
        self.path = catalog.path
        self._catalog = catalog

    def version(self) -> int | None:
        def read(db: sqlite3.Connection) -> int | None:
            row = db.execute("SELECT version FROM pin_version_v1").fetchone()
            return int(row[0]) if row is not None else 0

        return self._catalog.run("read pins of", read, None)

    def load(self) -> dict[PinKey, Pin] | None:
        def read(db: sqlite3.Connection) -> dict[PinKey, Pin]:
            rows = db.execute("SELECT server, tool, record FROM tool_pins_v1").fetchall()
            pins = (Pin.from_json(str(r[0]), str(r[1]), str(r[2])) for r in rows)
            return {pin.key: pin for pin in pins if pin is not None}

        return self._catalog.run("read pins of", read, None)

    def save(self, pins: Sequence[Pin], *, replace_existing: bool = False) -> None:
        def write(db: sqlite3.Connection) -> None:
            with db:
                for pin in pins:
                    row = (pin.server, pin.tool, pin.to_json())
                    if replace_existing:
                        db.execute("INSERT OR REPLACE INTO tool_pins_v1 (server, tool, record) VALUES (?, ?, ?)", row)
                        continue
                    stored = db.execute(
                        "SELECT record FROM tool_pins_v1 WHERE server = ? AND tool = ?", (pin.server, pin.tool)
                    ).fetchone()
                    if stored is None:
                        db.execute("INSERT INTO tool_pins_v1 (server, tool, record) VALUES (?, ?, ?)", row)
                        continue
                    kept = Pin.from_json(pin.server, pin.tool, str(stored[0]))
                    if kept is not None and kept.hash == pin.hash:  # only what was seen since is ours to write
                        db.execute(
                            "UPDATE tool_pins_v1 SET record = ? WHERE server = ? AND tool = ?",
                            (replace(kept, seen=pin.seen).to_json(), pin.server, pin.tool),
                        )
                if replace_existing:
                    db.execute(_BUMP)

        if pins:
            self._catalog.run("write pins to", write, None)

    def reset(self) -> int:
        def delete(db: sqlite3.Connection) -> int:
            with db:
                gone = db.execute("DELETE FROM tool_pins_v1").rowcount
                db.execute(_BUMP)
                return gone

        return self._catalog.run("reset pins in", delete, 0)


class SharedPins:
    """Pins in Redis for every replica (a hash of `server\\0tool` → the pin's JSON, and a version
    counter), and in `local` for this machine's command line; Redis down: the local file answers."""

    def __init__(self, url: str, *, prefix: str, local: SqlitePins) -> None:
        import redis
        import redis.exceptions

        from toolscout.registry.redis import COMMAND_TIMEOUT, CONNECT_TIMEOUT, redis_address

        self.where = redis_address(url)
        self.path = local.path
        self.local = local
        self._pins_key, self._version_key = f"{prefix}pins", f"{prefix}pins:version"
        self._redis: redis.Redis = redis.Redis.from_url(  # pyright: ignore[reportUnknownMemberType]
            url, decode_responses=True, socket_connect_timeout=CONNECT_TIMEOUT, socket_timeout=COMMAND_TIMEOUT
        )
        self._failures = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)

    def version(self) -> int | None:
        try:
            return int(cast(str | None, self._redis.get(self._version_key)) or 0)
        except self._failures:
            # The local file's counter, another one than Redis's: a switch between them at most reads the
            # pins again for nothing, and without it a gateway started while Redis is away reads none.
            return self.local.version()

    def load(self) -> dict[PinKey, Pin] | None:
        try:
            raw = cast(Mapping[str, str], self._redis.hgetall(self._pins_key))  # pyright: ignore[reportUnknownMemberType]
        except self._failures as exc:
            logger.warning("tool pins: Redis at %s unreachable, the local file answers: %s", self.where, exc)
            return self.local.load()
        found: dict[PinKey, Pin] = {}
        for name, text in raw.items():
            server, _, tool = name.partition("\0")
            pin = Pin.from_json(server, tool, text)
            if pin is not None:
                found[pin.key] = pin
        return found

    def save(self, pins: Sequence[Pin], *, replace_existing: bool = False) -> None:
        self.local.save(pins, replace_existing=replace_existing)
        try:
            for pin in pins:
                name = f"{pin.server}\0{pin.tool}"
                if replace_existing:
                    self._redis.hset(self._pins_key, name, pin.to_json())  # pyright: ignore[reportUnknownMemberType]
                elif not self._redis.hsetnx(self._pins_key, name, pin.to_json()):  # pyright: ignore[reportUnknownMemberType]
                    stored = cast(str | None, self._redis.hget(self._pins_key, name))  # pyright: ignore[reportUnknownMemberType]
                    kept = Pin.from_json(pin.server, pin.tool, stored) if stored is not None else None
                    if kept is not None and kept.hash == pin.hash:
                        self._redis.hset(self._pins_key, name, replace(kept, seen=pin.seen).to_json())  # pyright: ignore[reportUnknownMemberType]
            if replace_existing and pins:
                self._redis.incr(self._version_key)
        except self._failures as exc:
            logger.warning("tool pins: not written to Redis at %s: %s", self.where, exc)

    def reset(self) -> int:
        gone = self.local.reset()
        try:
            gone = max(gone, int(self._redis.hlen(self._pins_key)))  # pyright: ignore[reportUnknownMemberType]
            self._redis.delete(self._pins_key)
            self._redis.incr(self._version_key)
        except self._failures as exc:
            logger.warning("tool pins: not reset in Redis at %s: %s", self.where, exc)
        return gone


def pin_store(config: GatewayConfig) -> SqlitePins | SharedPins:
    """The pin store the config says: beside the persistent catalog, and in Redis with a Redis registry."""
    local = SqlitePins(CatalogStore(store_path(config.catalog_cache)))
    if config.registry.backend == "redis" and config.registry.url:
        return SharedPins(config.registry.url, prefix=config.registry.key_prefix, local=local)
    return local


def approve(store: PinStore, pins: Iterable[Pin]) -> list[Pin]:
    """Approve what was seen of `pins` (those that differ from their pin); the pins approved."""
    approved = [pin.approved() for pin in pins if pin.seen is not None]
    store.save(approved, replace_existing=True)
    return approved
