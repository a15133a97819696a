"""The `Registry` contract, run against both backends (the embedded SQLite file and a real Redis):
tokens stored by hash only, registrations by namespace, expiry swept, the version bumped, everything
kept across a new instance on the same store (a restart, or another replica). Then what only Redis
has: replicas told of changes at once, and an unreachable Redis failing fast and recovering."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from benchmarks.processes import RedisServer, redis_server

from toolscout.errors import RegistryUnavailable
from toolscout.registry.base import (
    Registry,
    ServerRegistration,
    TokenRecord,
    ToolRegistration,
    new_secret,
    secret_hash,
)
from toolscout.registry.redis import RedisRegistry
from toolscout.registry.sqlite import SqliteRegistry

pytestmark = pytest.mark.anyio

Opener = Callable[[], Registry]
"""A new instance over the same store (a restarted gateway, or another replica)."""


@asynccontextmanager
async def store(kind: str, tmp_path: Path) -> AsyncGenerator[Opener]:
    if kind == "sqlite":
        yield lambda: SqliteRegistry(tmp_path / "registry.sqlite3")
        return
    opened: list[RedisRegistry] = []

    def open_redis() -> Registry:
        registry = RedisRegistry(server.url)
        opened.append(registry)
        return registry

    async with redis_server(tmp_path / "redis") as server:
        try:
            yield open_redis
        finally:
            for registry in opened:
                await registry.aclose()


BACKENDS = ["sqlite", "redis"]


@pytest.mark.parametrize("kind", BACKENDS)
async def test_tokens_are_kept_by_hash_and_survive_a_restart(tmp_path: Path, kind: str) -> None:
    async with store(kind, tmp_path) as new:
        registry = new()
        secret = new_secret(await registry.token_key())
        assert secret.startswith("ts_") and len(secret) > 40
        record = TokenRecord(
            id="t1",
            namespace="run-1",
            servers=("notes",),
            tools=("!*delete*",),
            label="ci",
            expires_at=None,
            created_at=1.0,
            requests_per_minute=60,
            secret_hash=secret_hash(secret),
        )
        await registry.add_token(record)
        again = new()
        found = await again.token_by_hash(secret_hash(secret))
        assert found == record
        assert found is not None
        assert found.scope().sees_tool(None, "notes", "notes", "create_note")
        assert not found.scope().sees_tool(None, "notes", "notes", "delete_note")
        assert "secret_hash" not in found.public() and found.public()["label"] == "ci"
        assert await again.token_by_hash(secret_hash("ts_other")) is None
        assert await again.tokens() == [record]
        assert await again.revoke_token("t1") and not await again.revoke_token("t1")
        assert await registry.token_by_hash(secret_hash(secret)) is None  # revoked for every instance
        assert await again.tokens() == []
    if kind == "sqlite":
        assert secret not in (tmp_path / "registry.sqlite3").read_bytes().decode("latin-1")
    else:
        stored = b"".join(p.read_bytes() for p in (tmp_path / "redis").rglob("*.aof*") if p.is_file())
        assert stored and secret.encode() not in stored  # the append-only file has the hash, never the secret


@pytest.mark.parametrize("kind", BACKENDS)
async def test_registrations_by_namespace_expire_and_bump_the_version(tmp_path: Path, kind: str) -> None:
    async with store(kind, tmp_path) as new:
        registry = new()
        assert await registry.version() == 0
        await registry.put_server(ServerRegistration("run-1", "aws-x", "http://127.0.0.1:1/mcp", expires_at=100.0))
        await registry.put_server(ServerRegistration(None, "shared", "http://127.0.0.1:2/mcp", headers={"X": "y"}))
        await registry.put_tool(
            ToolRegistration("run-2", "abuseipdb", "Look up an IP", {"type": "object"}, "http://h/cb")
        )
        other = new()
        assert [s.name for s in await other.servers("run-1")] == ["aws-x"]
        assert [s.name for s in await other.servers()] == ["shared"]
        assert (await other.servers())[0].headers == {"X": "y"}
        assert [(s.namespace, s.name) for s in await other.servers(every=True)] == [
            (None, "shared"),
            ("run-1", "aws-x"),
        ]
        assert [t.name for t in await other.tools("run-2")] == ["abuseipdb"]
        assert (await other.tools("run-2"))[0].callback_url == "http://h/cb"
        before = await other.version()
        assert before > 0
        assert await registry.sweep(now=50.0) == 0
        assert await registry.sweep(now=150.0) == 1
        assert await other.servers("run-1") == []
        assert await other.version() > before
        assert await registry.remove_tool("run-2", "abuseipdb") and not await registry.remove_tool("run-2", "abuseipdb")
        replaced = ServerRegistration(None, "shared", "http://127.0.0.1:3/mcp")
        await other.put_server(replaced)
        assert [s.url for s in await registry.servers()] == ["http://127.0.0.1:3/mcp"]
        assert await registry.remove_server(None, "shared") and await registry.servers(every=True) == []


@pytest.mark.parametrize("kind", BACKENDS)
async def test_one_name_is_looked_up_and_registrations_counted_per_namespace_and_in_all(
    tmp_path: Path, kind: str
) -> None:
    async with store(kind, tmp_path) as new:
        registry = new()
        assert await registry.lookup("run-1", "x") == (None, None)
        assert await registry.counts("run-1", 0.0) == (0, 0)
        server = ServerRegistration("run-1", "x", "http://127.0.0.1:1/mcp", expires_at=100.0)
        tool = ToolRegistration("run-1", "x", "Look up an IP", {"type": "object"}, "http://h/cb")
        await registry.put_server(server)
        await registry.put_tool(tool)
        await registry.put_tool(ToolRegistration(None, "y", "Shared", {"type": "object"}, "http://h/cb"))
        await registry.put_tool(ToolRegistration("run-10", "z", "Another run", {"type": "object"}, "http://h/cb"))
        assert await new().lookup("run-1", "x") == (server, tool)
        assert await registry.lookup("run-1", "y") == (None, None)
        assert (await registry.lookup(None, "y"))[1] is not None
        assert await registry.counts("run-1", 0.0) == (2, 4)  # ("run-10" is another namespace)
        assert await registry.counts(None, 0.0) == (1, 4)
        assert await registry.counts("run-2", 0.0) == (0, 4)
        # Past the server's expiry, not swept yet: it takes no room.
        assert await registry.counts("run-1", 100.0) == (1, 3)


@pytest.mark.parametrize("kind", BACKENDS)
async def test_expired_tokens_are_swept(tmp_path: Path, kind: str) -> None:
    async with store(kind, tmp_path) as new:
        registry = new()
        await registry.add_token(TokenRecord("old", "ns", ("*",), expires_at=10.0, secret_hash=secret_hash("a")))
        await registry.add_token(TokenRecord("new", "ns", ("*",), expires_at=None, secret_hash=secret_hash("b")))
        found = await registry.token_by_hash(secret_hash("a"))
        assert found is not None and found.expired(20.0)  # kept until swept; the caller decides
        assert await registry.sweep(now=20.0) == 1
        assert [t.id for t in await new().tokens()] == ["new"]
        assert await registry.token_by_hash(secret_hash("a")) is None


async def test_an_unreachable_redis_fails_fast_and_the_registry_recovers(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis")
    await server.start()
    async with RedisRegistry(server.url) as registry:
        await registry.put_server(ServerRegistration(None, "kept", "http://127.0.0.1:1/mcp"))
        await server.stop()
        with anyio.fail_after(30):  # bounded: a connect timeout, never a hang
            with pytest.raises(RegistryUnavailable) as caught:
                await registry.servers()
        assert caught.value.code == "REGISTRY_UNAVAILABLE"
        assert f"127.0.0.1:{server.port}" in caught.value.message and "reconnects by itself" in caught.value.message
        await server.start()  # the same port and data, as an operator's restart
        try:
            with anyio.fail_after(30):
                assert [s.name for s in await registry.servers()] == ["kept"]  # nothing acknowledged was lost
        finally:
            await server.stop()


async def test_redis_tells_every_reader_of_each_change_as_it_happens(tmp_path: Path) -> None:
    seen: list[str] = []
    arrived = anyio.Event()

    def on_change(what: str) -> None:
        seen.append(what)
        if len(seen) >= 3:
            arrived.set()

    async with redis_server(tmp_path / "redis") as server, RedisRegistry(server.url) as writer:
        reader = RedisRegistry(server.url)  # another replica's
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(reader.watch_changes, on_change)
                with anyio.fail_after(30):
                    # Subscribed once a write made now is heard: write until the first is.
                    while not seen:  # the subscription's start has no event of its own
                        await writer.put_server(ServerRegistration(None, "a", "http://127.0.0.1:1/mcp"))
                        await anyio.sleep(0.05)
                    seen.clear()
                    await writer.put_tool(ToolRegistration("ns", "t", "d", {"type": "object"}, "http://h/cb"))
                    await writer.add_token(TokenRecord("tok", "ns", ("*",), secret_hash=secret_hash("s")))
                    assert await writer.revoke_token("tok")
                    await writer.remove_server(None, "a")
                    await arrived.wait()
                tg.cancel_scope.cancel()
        finally:
            await reader.aclose()
    assert seen[:3] == ["tools", "tokens:tok", "servers"]


async def test_redis_counts_a_rate_once_for_every_replica(tmp_path: Path) -> None:
    async with (
        redis_server(tmp_path / "redis") as server,
        RedisRegistry(server.url) as one,
        RedisRegistry(server.url) as other,
    ):
        # 6 a minute, a burst of 6: taken alternately through two replicas, the 7th waits.
        answers = [await (one if n % 2 else other).take("token:t1", 6) for n in range(7)]
        assert answers[:6] == [None] * 6
        assert answers[6] is not None and 1 <= answers[6] <= 10  # one more in 10 s at 6 a minute
        assert await one.take("token:t2", 6) is None  # each subject its own bucket
