"""The embedded `Registry`: tokens and registrations in one SQLite file beside the persistent catalog,
so a restart loses none of them.

One connection per operation, run in a worker thread; WAL and a busy timeout let a running gateway
and the command line (`toolscout token ...` without `--url`) share the file. A `meta` row counts
changes to servers and tools (`version`), which a gateway polls to pick up another process's edits.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread

from toolscout.config.locations import user_cache_dir
from toolscout.config.models import GatewayConfig
from toolscout.registry.base import (
    ServerRegistration,
    TokenRecord,
    ToolRegistration,
    new_key,
    server_body,
    server_from,
    token_body,
    token_from,
    tool_body,
    tool_from,
)

T = TypeVar("T")

DEFAULT_FILE_NAME = "registry.sqlite3"
BUSY_TIMEOUT_SECONDS = 5.0
_GLOBAL = ""
"""The global namespace in a key column (SQLite's NULL is never equal to itself)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS token_v1 (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL,
    expires_at REAL
);
CREATE TABLE IF NOT EXISTS server_v1 (
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    body TEXT NOT NULL,
    expires_at REAL,
    PRIMARY KEY (namespace, name)
);
CREATE TABLE IF NOT EXISTS tool_v1 (
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    body TEXT NOT NULL,
    expires_at REAL,
    PRIMARY KEY (namespace, name)
);
CREATE TABLE IF NOT EXISTS meta_v1 (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS key_v1 (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def registry_path(config: GatewayConfig) -> Path:
    """The file `registry.path` names, else `registry.sqlite3` beside the persistent catalog's file
    (`catalogCache.path`, or the user cache directory), whether or not that cache is on."""
    if config.registry.path:
        return Path(config.registry.path).expanduser()
    if config.catalog_cache.path:
        return Path(config.catalog_cache.path).expanduser().parent / DEFAULT_FILE_NAME
    return user_cache_dir() / DEFAULT_FILE_NAME


class SqliteRegistry:
    """A `Registry` in one SQLite file (created, with its directory, on first use)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._ready = False
        self._token_key: bytes | None = None

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        if not self._ready:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_SECONDS)
        try:
            if not self._ready:
                db.execute("PRAGMA journal_mode=WAL")
                db.executescript(_SCHEMA)
                self._ready = True
            with db:  # one transaction: committed whole, or rolled back
                return work(db)
        finally:
            db.close()

    async def _do(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return await anyio.to_thread.run_sync(self._run, work)

    @staticmethod
    def _changed(db: sqlite3.Connection) -> None:
        db.execute(
            "INSERT INTO meta_v1 (key, value) VALUES ('version', 1) ON CONFLICT(key) DO UPDATE SET value = value + 1"
        )

    # Tokens

    async def token_key(self) -> bytes:
        if self._token_key is None:

            def made(db: sqlite3.Connection) -> str:
                # Whoever inserts first wins; every process reads that one back.
                db.execute("INSERT OR IGNORE INTO key_v1 (name, value) VALUES ('token-tag', ?)", (new_key(),))
                return str(db.execute("SELECT value FROM key_v1 WHERE name = 'token-tag'").fetchone()[0])

            self._token_key = bytes.fromhex(await self._do(made))
        return self._token_key

    async def add_token(self, record: TokenRecord) -> None:
        def write(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO token_v1 (id, secret_hash, body, expires_at) VALUES (?, ?, ?, ?)",
                (record.id, record.secret_hash, json.dumps(token_body(record)), record.expires_at),
            )

        await self._do(write)

    async def token_by_hash(self, hashed: str) -> TokenRecord | None:
        def read(db: sqlite3.Connection) -> TokenRecord | None:
            row = db.execute(
                "SELECT id, secret_hash, body, expires_at FROM token_v1 WHERE secret_hash = ?", (hashed,)
            ).fetchone()
            return token_from(*row) if row is not None else None

        return await self._do(read)

    async def tokens(self) -> list[TokenRecord]:
        def read(db: sqlite3.Connection) -> list[TokenRecord]:
            rows = db.execute("SELECT id, secret_hash, body, expires_at FROM token_v1").fetchall()
            return sorted((token_from(*row) for row in rows), key=lambda t: (t.created_at, t.id))

        return await self._do(read)

    async def revoke_token(self, token_id: str) -> bool:
        return await self._do(lambda db: db.execute("DELETE FROM token_v1 WHERE id = ?", (token_id,)).rowcount > 0)

    # Servers and tools

    async def put_server(self, registration: ServerRegistration) -> None:
        body = server_body(registration)
        await self._put("server_v1", registration.namespace, registration.name, body, registration.expires_at)

    async def remove_server(self, namespace: str | None, name: str) -> bool:
        return await self._remove("server_v1", namespace, name)

    async def servers(self, namespace: str | None = None, *, every: bool = False) -> list[ServerRegistration]:
        # Decoded in the worker thread too: a gateway reading every registration keeps its loop free.
        return await self._do(lambda db: [server_from(*row) for row in self._rows(db, "server_v1", namespace, every)])

    async def put_tool(self, registration: ToolRegistration) -> None:
        body = tool_body(registration)
        await self._put("tool_v1", registration.namespace, registration.name, body, registration.expires_at)

    async def remove_tool(self, namespace: str | None, name: str) -> bool:
        return await self._remove("tool_v1", namespace, name)

    async def tools(self, namespace: str | None = None, *, every: bool = False) -> list[ToolRegistration]:
        return await self._do(lambda db: [tool_from(*row) for row in self._rows(db, "tool_v1", namespace, every)])

    async def lookup(
        self, namespace: str | None, name: str
    ) -> tuple[ServerRegistration | None, ToolRegistration | None]:
        def read(db: sqlite3.Connection) -> tuple[ServerRegistration | None, ToolRegistration | None]:
            select = "SELECT namespace, name, body, expires_at FROM {} WHERE namespace = ? AND name = ?"
            server = db.execute(select.format("server_v1"), (namespace or _GLOBAL, name)).fetchone()
            tool = db.execute(select.format("tool_v1"), (namespace or _GLOBAL, name)).fetchone()
            return (server_from(*server) if server else None, tool_from(*tool) if tool else None)

        return await self._do(read)

    async def counts(self, namespace: str | None, now: float) -> tuple[int, int]:
        def read(db: sqlite3.Connection) -> tuple[int, int]:
            inside = total = 0
            live = "(expires_at IS NULL OR expires_at > ?)"
            for table in ("server_v1", "tool_v1"):  # (the primary key's index finds the namespace's)
                inside += db.execute(
                    f"SELECT COUNT(*) FROM {table} WHERE namespace = ? AND {live}", (namespace or _GLOBAL, now)
                ).fetchone()[0]
                total += db.execute(f"SELECT COUNT(*) FROM {table} WHERE {live}", (now,)).fetchone()[0]
            return inside, total

        return await self._do(read)

    async def _put(
        self, table: str, namespace: str | None, name: str, body: dict[str, Any], expires: float | None
    ) -> None:
        def write(db: sqlite3.Connection) -> None:
            db.execute(
                f"INSERT OR REPLACE INTO {table} (namespace, name, body, expires_at) VALUES (?, ?, ?, ?)",
                (namespace or _GLOBAL, name, json.dumps(body), expires),
            )
            self._changed(db)

        await self._do(write)

    async def _remove(self, table: str, namespace: str | None, name: str) -> bool:
        def write(db: sqlite3.Connection) -> bool:
            gone = db.execute(
                f"DELETE FROM {table} WHERE namespace = ? AND name = ?", (namespace or _GLOBAL, name)
            ).rowcount
            if gone:
                self._changed(db)
            return gone > 0

        return await self._do(write)

    @staticmethod
    def _rows(
        db: sqlite3.Connection, table: str, namespace: str | None, every: bool
    ) -> list[tuple[str, str, str, float | None]]:
        select = f"SELECT namespace, name, body, expires_at FROM {table}"
        if every:
            return db.execute(select + " ORDER BY namespace, name").fetchall()
        return db.execute(select + " WHERE namespace = ? ORDER BY name", (namespace or _GLOBAL,)).fetchall()

    # Upkeep

    async def sweep(self, now: float | None = None) -> int:
        at = time.time() if now is None else now

        def write(db: sqlite3.Connection) -> int:
            gone = 0
            for table in ("server_v1", "tool_v1"):
                gone += db.execute(
                    f"DELETE FROM {table} WHERE expires_at IS NOT NULL AND expires_at <= ?", (at,)
                ).rowcount
            if gone:
                self._changed(db)
            gone += db.execute("DELETE FROM token_v1 WHERE expires_at IS NOT NULL AND expires_at <= ?", (at,)).rowcount
            return gone

        return await self._do(write)

    async def version(self) -> int:
        def read(db: sqlite3.Connection) -> int:
            row = db.execute("SELECT value FROM meta_v1 WHERE key = 'version'").fetchone()
            return int(row[0]) if row is not None else 0

        return await self._do(read)
