"""The persistent catalog: each server's last known tools (and resources, templates and prompts,
once listed), kept in SQLite across restarts, and shared through Redis by a gateway's replicas.

Entries are keyed by the server's name and a hash of its configuration entry
(`toolscout.config.models.config_hash`), so an entry is only ever served to the very configuration that listed it:
change a server's command, arguments, URL, environment or headers and its old catalog is
never shown again. The gateway reads the matching entries before it starts connecting, lists
them (marked stale) until each server's live list replaces them, and saves every live list.
The command line also remembers a server's failed connection under the same key (`Failure`),
so that a server that hangs is not waited for by every command; a live list of it clears that.

The store never stops the gateway: an unreadable or corrupt database is logged, moved aside
(`<file>.corrupt`) and started afresh; any other failure only costs the cache. Several gateways
may share one file: SQLite's WAL journal and a busy timeout keep their writes whole.

When the registry is Redis (`registry.backend: redis`), the replicas share the catalogs there
(`SharedCatalogStore`, at the end): a replica that starts later answers at once from what another
one listed, while it connects. It works over a synchronous Redis client (the gateway calls stores
from a worker thread). Each server's snapshots live in the hash `catalog:<server>`, one field per
configuration hash, as the SQLite store's row in JSON (`snapshot_row`), so a replica with another
configuration of the server never answers from it. Every snapshot is also kept in the local store
(`toolscout cache show` and the command line read that one), and a server Redis knows nothing of is
looked up there. Redis down: a warning (once until it is back), the local store answers; a store
never raises for its backend.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import mcp_types as types
from pydantic import BaseModel, ValidationError

from toolscout.catalog import LIST_ITEMS, LIST_NAMES
from toolscout.config.locations import user_cache_dir
from toolscout.config.models import CatalogCacheConfig, GatewayConfig

logger = logging.getLogger(__name__)

T = TypeVar("T")
ModelT = TypeVar("ModelT", bound=BaseModel)

DEFAULT_FILE_NAME = "catalog.sqlite3"
BUSY_TIMEOUT_SECONDS = 5.0
"""How long a write waits for another gateway's write to the same file to finish."""
VERSIONS_PER_SERVER = 3
"""Entries kept per server name (its most recent configurations), so two config files that
share a server name do not evict each other's catalog on every start."""
MAX_AGE_SECONDS = 90 * 24 * 3600
"""Entries not confirmed by a live list for this long are deleted (removed servers)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS catalog_v1 (
    server TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    saved_at REAL NOT NULL,
    tools TEXT NOT NULL,
    server_name TEXT,
    server_version TEXT,
    title TEXT,
    description TEXT,
    instructions TEXT,
    protocol_version TEXT,
    content TEXT,
    PRIMARY KEY (server, config_hash)
)
"""
_FAILURE_SCHEMA = """
CREATE TABLE IF NOT EXISTS failure_v1 (
    server TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    failed_at REAL NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (server, config_hash)
)
"""
_COLUMNS = (
    "server, config_hash, saved_at, tools, server_name, server_version, title, description, instructions, "
    "protocol_version, content"
)
_PIN_SCHEMA = (
    # The tool pins (gateway/pins.py): kept in the same file, its schema made with the rest.
    """CREATE TABLE IF NOT EXISTS tool_pins_v1 (
        server TEXT NOT NULL, tool TEXT NOT NULL, record TEXT NOT NULL, PRIMARY KEY (server, tool))""",
    "CREATE TABLE IF NOT EXISTS pin_version_v1 (id INTEGER PRIMARY KEY CHECK (id = 0), version INTEGER NOT NULL)",
)


@dataclass(frozen=True)
class ServerSnapshot:
    """One server's tools and what it said about itself, as last listed live."""

    server: str
    config_hash: str
    tools: tuple[types.Tool, ...]
    saved_at: float
    """Seconds since the epoch."""
    server_name: str | None = None
    server_version: str | None = None
    title: str | None = None
    description: str | None = None
    instructions: str | None = None
    protocol_version: str | None = None
    resources: tuple[types.Resource, ...] | None = None
    """As last listed live; None when never listed (the server answers for itself once connected)."""
    resource_templates: tuple[types.ResourceTemplate, ...] | None = None
    prompts: tuple[types.Prompt, ...] | None = None

    def content(self) -> dict[str, tuple[BaseModel, ...]]:
        """The lists besides tools that were listed, by name (`LIST_NAMES`; the `content` column holds them)."""
        lists = {name: getattr(self, name) for name in LIST_NAMES}
        return {name: items for name, items in lists.items() if items is not None}


@dataclass(frozen=True)
class StoredEntry:
    """A row of the store as `toolscout cache show` lists it (the tools are only counted)."""

    server: str
    config_hash: str
    saved_at: float
    tool_count: int


@dataclass(frozen=True)
class Failure:
    """A server's last connection attempt, which failed (no live list of it came since)."""

    server: str
    config_hash: str
    failed_at: float
    """Seconds since the epoch."""
    reason: str


class SnapshotStore(Protocol):
    """Where the gateway keeps catalogs between runs (`CatalogStore`: an SQLite file, `SharedCatalogStore`: Redis too).

    The gateway calls these from a worker thread (never two at once), so they may block on I/O;
    they must not raise for a broken store, only log and carry on.
    """

    def load(self, keys: Mapping[str, str]) -> dict[str, ServerSnapshot]:
        """The snapshots of the servers in `keys` (name → config hash) whose stored hash matches."""
        ...

    def save(self, snapshots: Sequence[ServerSnapshot]) -> None: ...

    def clear(self, server: str | None = None) -> int:
        """Delete every entry (or those of `server`); how many were deleted."""
        ...


class CatalogStore:
    """A `SnapshotStore` in one SQLite file (WAL journal, a connection per operation)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._ready = False

    # The protocol

    def load(self, keys: Mapping[str, str]) -> dict[str, ServerSnapshot]:
        def read(db: sqlite3.Connection) -> dict[str, ServerSnapshot]:
            found: dict[str, ServerSnapshot] = {}
            for server, key in keys.items():
                row = db.execute(
                    f"SELECT {_COLUMNS} FROM catalog_v1 WHERE server = ? AND config_hash = ?", (server, key)
                ).fetchone()
                snapshot = _snapshot(row) if row is not None else None
                if snapshot is not None:
                    found[server] = snapshot
            return found

        return self._run("read", read, {}) if keys else {}

    def load_failures(self, keys: Mapping[str, str]) -> dict[str, Failure]:
        """The remembered failures of the servers in `keys` (name → config hash) under that hash."""

        def read(db: sqlite3.Connection) -> dict[str, Failure]:
            found: dict[str, Failure] = {}
            for server, key in keys.items():
                row = db.execute(
                    "SELECT failed_at, reason FROM failure_v1 WHERE server = ? AND config_hash = ?", (server, key)
                ).fetchone()
                if row is not None:
                    found[server] = Failure(server, key, float(row[0]), str(row[1]))
            return found

        return self._run("read", read, {}) if keys else {}

    def save_failures(self, failures: Sequence[Failure]) -> None:
        """Remember failed connections (each replaces the server's earlier one under the same hash)."""

        def write(db: sqlite3.Connection) -> None:
            with db:
                db.executemany(
                    "INSERT OR REPLACE INTO failure_v1 (server, config_hash, failed_at, reason) VALUES (?, ?, ?, ?)",
                    [(f.server, f.config_hash, f.failed_at, f.reason) for f in failures],
                )
                db.execute("DELETE FROM failure_v1 WHERE failed_at < ?", (time.time() - MAX_AGE_SECONDS,))

        if failures:
            self._run("write", write, None)

    def save(self, snapshots: Sequence[ServerSnapshot]) -> None:
        def write(db: sqlite3.Connection) -> None:
            with db:  # one transaction for the batch
                for s in snapshots:
                    db.execute(
                        f"INSERT OR REPLACE INTO catalog_v1 ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        snapshot_row(s),
                    )
                    # It listed its tools: whatever failed before under this configuration is over.
                    db.execute("DELETE FROM failure_v1 WHERE server = ? AND config_hash = ?", (s.server, s.config_hash))
                    # Older configurations of this server beyond the few most recent: never served again.
                    db.execute(
                        "DELETE FROM catalog_v1 WHERE server = ? AND config_hash NOT IN "
                        "(SELECT config_hash FROM catalog_v1 WHERE server = ? ORDER BY saved_at DESC LIMIT ?)",
                        (s.server, s.server, VERSIONS_PER_SERVER),
                    )
                db.execute("DELETE FROM catalog_v1 WHERE saved_at < ?", (time.time() - MAX_AGE_SECONDS,))

        if snapshots:
            self._run("write", write, None)

    def clear(self, server: str | None = None) -> int:
        def delete(db: sqlite3.Connection) -> int:
            with db:  # (remembered failures go too; only catalog entries are counted)
                if server is None:
                    db.execute("DELETE FROM failure_v1")
                    return db.execute("DELETE FROM catalog_v1").rowcount
                db.execute("DELETE FROM failure_v1 WHERE server = ?", (server,))
                return db.execute("DELETE FROM catalog_v1 WHERE server = ?", (server,)).rowcount

        return self._run("clear", delete, 0)

    # For `toolscout cache show`

    def entries(self) -> list[StoredEntry]:
        def read(db: sqlite3.Connection) -> list[StoredEntry]:
            rows = db.execute(
                "SELECT server, config_hash, saved_at, json_array_length(tools) FROM catalog_v1 "
                "ORDER BY server, saved_at DESC"
            ).fetchall()
            return [StoredEntry(str(r[0]), str(r[1]), float(r[2]), int(r[3] or 0)) for r in rows]

        return self._run("read", read, [])

    # The file

    def run(self, what: str, operation: Callable[[sqlite3.Connection], T], fallback: T) -> T:
        """Run `operation` on the open file (the tool pins' too, gateway/pins.py), as `_run` does."""
        return self._run(what, operation, fallback)

    def _run(self, what: str, operation: Callable[[sqlite3.Connection], T], fallback: T) -> T:
        """Run `operation` on an open database with the schema in place; `fallback` when the store cannot be used.

        A corrupt file is moved aside and the operation retried once on a fresh one.
        """
        for attempt in (1, 2):
            try:
                db = self._open()
                try:
                    return operation(db)
                finally:
                    db.close()
            except sqlite3.DatabaseError as exc:
                if attempt == 1 and _is_corrupt(exc) and self._move_aside(exc):
                    continue
                logger.warning("catalog cache %s: cannot %s it: %s", self.path, what, exc)
            except OSError as exc:
                logger.warning("catalog cache %s: cannot %s it: %s", self.path, what, exc)
            break
        return fallback

    def _open(self) -> sqlite3.Connection:
        if not self._ready:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_SECONDS)
        try:
            db.execute("PRAGMA synchronous=NORMAL")  # with WAL: whole after a crash, no fsync per commit
            if not self._ready:
                # WAL: readers never wait for a writer (another gateway's), a killed writer leaves the file whole.
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(_SCHEMA)
                db.execute(_FAILURE_SCHEMA)
                for statement in _PIN_SCHEMA:
                    db.execute(statement)
                columns = {str(row[1]) for row in db.execute("PRAGMA table_info(catalog_v1)")}
                if "content" not in columns:  # a file written before resources and prompts were kept
                    with contextlib.suppress(sqlite3.OperationalError):  # another gateway added it just now
                        db.execute("ALTER TABLE catalog_v1 ADD COLUMN content TEXT")
                self._ready = True
        except BaseException:
            db.close()
            raise
        return db

    def _move_aside(self, exc: sqlite3.DatabaseError) -> bool:
        aside = self.path.with_name(self.path.name + ".corrupt")
        self._ready = False
        try:
            os.replace(self.path, aside)
        except FileNotFoundError:
            pass  # another gateway moved it already
        except OSError as err:
            logger.warning("catalog cache %s is unreadable (%s) and cannot be moved aside: %s", self.path, exc, err)
            return False
        logger.warning("catalog cache %s is unreadable (%s); moved to %s, starting a fresh one", self.path, exc, aside)
        for suffix in ("-wal", "-shm"):  # they belong to the corrupt file; a fresh one must not replay them
            with contextlib.suppress(OSError):
                self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
        return True


def _is_corrupt(exc: sqlite3.DatabaseError) -> bool:
    # "file is not a database" (SQLITE_NOTADB) and "database disk image is malformed" (SQLITE_CORRUPT);
    # a locked or unopenable file (OperationalError) is not the file's fault and is left alone.
    name = getattr(exc, "sqlite_errorname", "")
    return name in ("SQLITE_NOTADB", "SQLITE_CORRUPT") or type(exc) is sqlite3.DatabaseError


def _dumped(item: BaseModel) -> Any:
    return item.model_dump(by_alias=True, mode="json", exclude_none=True)


def _items(raw: Any, model: type[ModelT]) -> tuple[ModelT, ...]:
    if not isinstance(raw, list):
        raise ValueError("not a list")
    return tuple(model.model_validate(item) for item in cast(list[Any], raw))


def snapshot_row(s: ServerSnapshot) -> tuple[Any, ...]:
    """A snapshot as the store's row (`_COLUMNS`, lists as JSON): the SQLite file's, and Redis's too."""
    tools = [_dumped(t) for t in s.tools]
    content = {name: [_dumped(i) for i in items] for name, items in s.content().items()}
    return (
        s.server,
        s.config_hash,
        s.saved_at,
        json.dumps(tools, separators=(",", ":"), ensure_ascii=False),
        s.server_name,
        s.server_version,
        s.title,
        s.description,
        s.instructions,
        s.protocol_version,
        json.dumps(content, separators=(",", ":"), ensure_ascii=False) if content else None,
    )


def snapshot_from_row(row: Sequence[Any]) -> ServerSnapshot | None:
    """The snapshot a row holds; None (and a warning) for one that cannot be read."""
    return _snapshot(row)


def _snapshot(row: Sequence[Any]) -> ServerSnapshot | None:
    server, key, saved_at, tools_json, *identity, content_json = row
    try:
        tools = _items(json.loads(tools_json), types.Tool)
        content: dict[str, Any] = {}
        if content_json is not None:
            raw = json.loads(content_json)
            if not isinstance(raw, dict):
                raise ValueError("content is not an object")
            lists = cast(dict[str, Any], raw)
            content = {name: _items(lists[name], model) for name, model in LIST_ITEMS.items() if name in lists}
    except (ValueError, ValidationError) as exc:
        logger.warning("catalog cache: ignoring the unreadable entry of %s: %s", server, exc)
        return None
    name, version, title, description, instructions, protocol = (str(v) if v is not None else None for v in identity)
    return ServerSnapshot(
        server=str(server),
        config_hash=str(key),
        tools=tools,
        saved_at=float(saved_at),
        server_name=name,
        server_version=version,
        title=title,
        description=description,
        instructions=instructions,
        protocol_version=protocol,
        **content,
    )


def store_path(settings: CatalogCacheConfig) -> Path:
    """The file `catalogCache` names, or `catalog.sqlite3` in the user cache directory."""
    if settings.path:
        return Path(settings.path).expanduser()
    return user_cache_dir() / DEFAULT_FILE_NAME


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
