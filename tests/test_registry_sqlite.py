"""The embedded registry: tokens stored by hash only, registrations by namespace, expiry swept,
everything kept across a new instance on the same file (a restart)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolscout.registry.base import (
    Registry,
    ServerRegistration,
    TokenRecord,
    ToolRegistration,
    new_secret,
    secret_hash,
)
from toolscout.registry.sqlite import SqliteRegistry

pytestmark = pytest.mark.anyio


async def test_tokens_are_kept_by_hash_and_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "registry.sqlite3"
    registry: Registry = SqliteRegistry(path)
    secret = new_secret()
    assert secret.startswith("ts_") and len(secret) > 40
    record = TokenRecord(
        id="t1",
        namespace="run-1",
        servers=("notes",),
        tools=("!*delete*",),
        label="ci",
        expires_at=None,
        created_at=1.0,
        secret_hash=secret_hash(secret),
    )
    await registry.add_token(record)
    assert secret not in path.read_bytes().decode("latin-1")
    again = SqliteRegistry(path)
    found = await again.token_by_hash(secret_hash(secret))
    assert found == record
    assert found is not None
    assert found.scope().sees_tool(None, "notes", "notes", "create_note")
    assert not found.scope().sees_tool(None, "notes", "notes", "delete_note")
    assert "secret_hash" not in found.public() and found.public()["label"] == "ci"
    assert await again.token_by_hash(secret_hash("ts_other")) is None
    assert await again.revoke_token("t1") and not await again.revoke_token("t1")
    assert await again.tokens() == []


async def test_registrations_by_namespace_expire_and_bump_the_version(tmp_path: Path) -> None:
    registry = SqliteRegistry(tmp_path / "r.sqlite3")
    assert await registry.version() == 0
    await registry.put_server(ServerRegistration("run-1", "aws-x", "http://127.0.0.1:1/mcp", expires_at=100.0))
    await registry.put_server(ServerRegistration(None, "shared", "http://127.0.0.1:2/mcp", headers={"X": "y"}))
    await registry.put_tool(ToolRegistration("run-2", "abuseipdb", "Look up an IP", {"type": "object"}, "http://h/cb"))
    assert [s.name for s in await registry.servers("run-1")] == ["aws-x"]
    assert [s.name for s in await registry.servers()] == ["shared"]
    assert (await registry.servers())[0].headers == {"X": "y"}
    assert [(s.namespace, s.name) for s in await registry.servers(every=True)] == [(None, "shared"), ("run-1", "aws-x")]
    assert [t.name for t in await registry.tools("run-2")] == ["abuseipdb"]
    before = await registry.version()
    assert await registry.sweep(now=50.0) == 0
    assert await registry.sweep(now=150.0) == 1
    assert await registry.servers("run-1") == []
    assert await registry.version() > before
    assert await registry.remove_tool("run-2", "abuseipdb") and not await registry.remove_tool("run-2", "abuseipdb")
