"""The shared `Registry`: tokens and registrations in Redis, so that the replicas of a gateway behind one
load balancer see the same ones (`registry: {backend: redis, url: "redis://..."}`).

Keys (under `keyPrefix`, default `toolscout:`):

* `tokens` (hash): token id → its record as JSON (never the secret; its hash and expiry inside);
  `token-hashes` (hash): secret hash → token id, the lookup a request makes; `token-key`: the key
  tokens are tagged with (base.py), set once (`SET NX`) by whoever issues or checks a token first.
* `servers`, `tools` (hashes): `namespace \\x1f name` → the registration as JSON (the global
  namespace is the empty string).
* `confirm-key`: the key smart mode's confirmation ids are signed with; `confirm-spent:<nonce>`: an id
  used already, until it expires (smart/confirmation.py).
* `version` (counter): bumped by every change to servers or tools (and, for revocations, to
  tokens), and published on the `changes` channel with what changed, so that every replica
  refreshes at once (`changes`, `wait_for_change`) instead of at its next poll.

Each write is one `MULTI`/`EXEC` transaction, so a reader never sees half of one. Redis being down
or slow is a `RegistryUnavailable` at once (connect within `CONNECT_TIMEOUT`, answer within
`COMMAND_TIMEOUT`), never a hang; the client's pool connects again by itself on the next command
once Redis is back.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import Any, Self, TypeVar, cast
from urllib.parse import urlsplit

import anyio
import redis.asyncio as aioredis
import redis.exceptions

from toolscout.errors import RegistryUnavailable
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

DEFAULT_PREFIX = "toolscout:"
CONNECT_TIMEOUT = 2.0
"""Seconds to open a connection to Redis: a request that needs it waits no longer when it is down."""
COMMAND_TIMEOUT = 5.0
"""Seconds one command may take."""
CLIENT_STATE_SECONDS = 86_400
"""How long a client's loaded tools are kept after their last change."""
FEED_RETRY_SECONDS = 1.0
"""How long the change feed waits before subscribing again after Redis went away."""
_SEPARATOR = "\x1f"

# A token bucket of `ARGV[1]` requests a minute, refilled continuously, a burst of as many; returns
# 0 when a request may go, else whole seconds (at least 1) until one would. Idle buckets expire.
TAKE_SCRIPT = """
local capacity = tonumber(ARGV[1])
local rate = capacity / 60000.0
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local stored = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(stored[1])
local at = tonumber(stored[2])
if tokens == nil or at == nil then
  tokens = capacity
  at = now
end
tokens = math.min(capacity, tokens + math.max(0, now - at) * rate)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.max(1, math.ceil((1 - tokens) / rate / 1000))
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], 120000)
return wait
"""


def redis_address(url: str) -> str:
    """Return the `host:port` of a Redis URL, for messages (never its password)."""
    parts = urlsplit(url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 6379}"


class RedisRegistry:
    """A `Registry` in Redis. An async context manager owning its connection pool."""

    def __init__(self, url: str, *, prefix: str = DEFAULT_PREFIX) -> None:
        self.url = url
        self.prefix = prefix
        self.address = redis_address(url)
        self._token_key: bytes | None = None
        self._redis: aioredis.Redis = aioredis.Redis.from_url(  # pyright: ignore[reportUnknownMemberType]
            url,
            decode_responses=True,
            socket_connect_timeout=CONNECT_TIMEOUT,
            socket_timeout=COMMAND_TIMEOUT,
            health_check_interval=30,
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._redis.aclose()

    def key(self, name: str) -> str:
        return self.prefix + name

    async def _do(self, work: Callable[[aioredis.Redis], Awaitable[T]]) -> T:
        try:
            return await work(self._redis)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise RegistryUnavailable(
                f"The registry (Redis at {self.address}) cannot be reached: {exc}. Requests that need it fail "
                "until it is back; the gateway reconnects by itself.",
                where=self.address,
            ) from None

    def _changed(self, pipe: Any, what: str) -> None:
        """Queue, in a write's transaction, the version's bump and the change's announcement."""
        pipe.incr(self.key("version"))
        pipe.publish(self.key("changes"), what)

    async def watch_changes(self, on_change: Callable[[str], None]) -> None:
        """`ChangeFeed`: every message on the `changes` channel, from a connection of its own (no
        command timeout: it waits for messages), subscribed again after Redis comes back. A change
        missed while it was away is not lost: the registry's readers also poll `version()`."""
        while True:
            listener: aioredis.Redis = aioredis.Redis.from_url(  # pyright: ignore[reportUnknownMemberType]
                self.url, decode_responses=True, socket_connect_timeout=CONNECT_TIMEOUT, health_check_interval=10
            )
            try:
                async with listener.pubsub() as pubsub:  # pyright: ignore[reportUnknownMemberType]
                    await pubsub.subscribe(self.key("changes"))  # pyright: ignore[reportUnknownMemberType]
                    messages = cast(AsyncIterator[Any], pubsub.listen())  # pyright: ignore[reportUnknownMemberType]
                    async for message in messages:
                        if cast(dict[str, Any], message).get("type") == "message":
                            on_change(str(cast(dict[str, Any], message)["data"]))
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError):
                await anyio.sleep(FEED_RETRY_SECONDS)  # Redis away: the version poll covers the gap
            finally:
                await listener.aclose()

    # Tokens

    async def _shared_key(self, name: str) -> bytes:
        """A random key kept under `name`, made by whichever replica asks first (`SET NX` and `GET` in
        one transaction: two replicas asking at once get the same one)."""
        fresh = new_key()

        async def read(r: aioredis.Redis) -> str:
            async with r.pipeline(transaction=True) as pipe:
                pipe.set(self.key(name), fresh, nx=True)
                pipe.get(self.key(name))
                _, key = await pipe.execute()
            return str(key)

        return bytes.fromhex(await self._do(read))

    async def token_key(self) -> bytes:
        if self._token_key is None:
            self._token_key = await self._shared_key("token-key")
        return self._token_key

    async def add_token(self, record: TokenRecord) -> None:
        body = json.dumps({**token_body(record), "secretHash": record.secret_hash, "expiresAt": record.expires_at})

        async def write(r: aioredis.Redis) -> None:
            async with r.pipeline(transaction=True) as pipe:
                pipe.hset(self.key("tokens"), record.id, body)
                pipe.hset(self.key("token-hashes"), record.secret_hash, record.id)
                await pipe.execute()

        await self._do(write)

    def _token(self, token_id: str, raw: str) -> TokenRecord:
        data = cast(dict[str, Any], json.loads(raw))
        return token_from(token_id, str(data["secretHash"]), raw, data.get("expiresAt"))

    async def token_by_hash(self, hashed: str) -> TokenRecord | None:
        async def read(r: aioredis.Redis) -> TokenRecord | None:
            token_id = await cast(Awaitable[str | None], r.hget(self.key("token-hashes"), hashed))
            if token_id is None:
                return None
            raw = await cast(Awaitable[str | None], r.hget(self.key("tokens"), token_id))
            return self._token(token_id, raw) if raw is not None else None

        return await self._do(read)

    async def tokens(self) -> list[TokenRecord]:
        async def read(r: aioredis.Redis) -> list[TokenRecord]:
            raw = await cast(Awaitable[dict[str, str]], r.hgetall(self.key("tokens")))
            return sorted((self._token(k, v) for k, v in raw.items()), key=lambda t: (t.created_at, t.id))

        return await self._do(read)

    async def revoke_token(self, token_id: str) -> bool:
        async def write(r: aioredis.Redis) -> bool:
            raw = await cast(Awaitable[str | None], r.hget(self.key("tokens"), token_id))
            if raw is None:
                return False
            hashed = str(json.loads(raw)["secretHash"])
            async with r.pipeline(transaction=True) as pipe:
                pipe.hdel(self.key("tokens"), token_id)
                pipe.hdel(self.key("token-hashes"), hashed)
                self._changed(pipe, f"tokens:{token_id}")
                gone, *_ = await pipe.execute()
            return bool(gone)

        return await self._do(write)

    # Servers and tools

    async def put_server(self, registration: ServerRegistration) -> None:
        await self._put(
            "servers", registration.namespace, registration.name, server_body(registration), registration.expires_at
        )

    async def remove_server(self, namespace: str | None, name: str) -> bool:
        return await self._remove("servers", namespace, name)

    async def servers(self, namespace: str | None = None, *, every: bool = False) -> list[ServerRegistration]:
        return [server_from(*row) for row in await self._rows("servers", namespace, every)]

    async def put_tool(self, registration: ToolRegistration) -> None:
        await self._put(
            "tools", registration.namespace, registration.name, tool_body(registration), registration.expires_at
        )

    async def remove_tool(self, namespace: str | None, name: str) -> bool:
        return await self._remove("tools", namespace, name)

    async def tools(self, namespace: str | None = None, *, every: bool = False) -> list[ToolRegistration]:
        return [tool_from(*row) for row in await self._rows("tools", namespace, every)]

    async def lookup(
        self, namespace: str | None, name: str
    ) -> tuple[ServerRegistration | None, ToolRegistration | None]:
        field = f"{namespace or ''}{_SEPARATOR}{name}"

        async def read(r: aioredis.Redis) -> list[str | None]:
            async with r.pipeline(transaction=False) as pipe:
                pipe.hget(self.key("servers"), field)
                pipe.hget(self.key("tools"), field)
                return cast(list[str | None], await pipe.execute())

        server, tool = await self._do(read)
        space = namespace or ""
        return (
            server_from(space, name, server, _expiry(server)) if server is not None else None,
            tool_from(space, name, tool, _expiry(tool)) if tool is not None else None,
        )

    async def counts(self, namespace: str | None, now: float) -> tuple[int, int]:
        async def read(r: aioredis.Redis) -> tuple[int, int]:
            total = 0
            for table in ("servers", "tools"):  # (at most `registry.maxRegistrations` bodies)
                bodies = await cast(Awaitable[list[str]], r.hvals(self.key(table)))
                total += sum(1 for raw in bodies if not _expired(raw, now))
            inside = sum(1 for raw in (await self._fields(r, namespace)).values() if not _expired(raw, now))
            return inside, total

        return await self._do(read)

    async def _fields(self, r: aioredis.Redis, namespace: str | None) -> dict[tuple[str, str], str]:
        """`namespace`'s servers and tools, `(table, field) → JSON`, matched by Redis itself (HSCAN MATCH,
        the namespace being letters, digits, `_` and `-`: nothing a glob reads), so that only they travel."""
        found: dict[tuple[str, str], str] = {}
        for table in ("servers", "tools"):
            match = f"{namespace or ''}{_SEPARATOR}*"
            async for field, raw in r.hscan_iter(self.key(table), match=match, count=1000):  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
                found[(table, str(field))] = str(raw)  # pyright: ignore[reportUnknownArgumentType]
        return found

    async def _put(
        self, table: str, namespace: str | None, name: str, body: dict[str, Any], expires: float | None
    ) -> None:
        field = f"{namespace or ''}{_SEPARATOR}{name}"
        value = json.dumps({**body, "expiresAt": expires})

        async def write(r: aioredis.Redis) -> None:
            async with r.pipeline(transaction=True) as pipe:
                pipe.hset(self.key(table), field, value)
                self._changed(pipe, table)
                await pipe.execute()

        await self._do(write)

    async def _remove(self, table: str, namespace: str | None, name: str) -> bool:
        field = f"{namespace or ''}{_SEPARATOR}{name}"

        async def write(r: aioredis.Redis) -> bool:
            gone = await r.hdel(self.key(table), field)
            if gone:
                async with r.pipeline(transaction=True) as pipe:
                    self._changed(pipe, table)
                    await pipe.execute()
            return gone > 0

        return await self._do(write)

    async def _rows(self, table: str, namespace: str | None, every: bool) -> list[tuple[str, str, str, float | None]]:
        async def read(r: aioredis.Redis) -> dict[str, str]:
            if every:
                return await cast(Awaitable[dict[str, str]], r.hgetall(self.key(table)))
            return {field: raw for (kind, field), raw in (await self._fields(r, namespace)).items() if kind == table}

        rows: list[tuple[str, str, str, float | None]] = []
        for field, raw in (await self._do(read)).items():
            space, _, name = field.partition(_SEPARATOR)
            if every or space == (namespace or ""):
                rows.append((space, name, raw, cast(float | None, json.loads(raw).get("expiresAt"))))
        return sorted(rows, key=lambda row: (row[0], row[1]) if every else row[1])

    # Rates

    async def take(self, subject: str, per_minute: int) -> int | None:
        """`SharedRates`: a token bucket per subject in Redis, taken from atomically (a script), on
        Redis's own clock, so that every replica counts against the same bucket."""
        key = self.key(f"rate:{subject}")
        wait = await self._do(lambda r: r.eval(TAKE_SCRIPT, 1, key, str(per_minute)))  # pyright: ignore[reportUnknownMemberType]
        return None if int(wait) == 0 else int(wait)

    # Replicas

    async def announce_replica(self, replica: str, url: str, ttl: float) -> None:
        """`replica` answers at `url` for the next `ttl` seconds (announced again while it runs)."""
        await self._do(lambda r: r.set(self.key(f"replica:{replica}"), url, px=int(ttl * 1000)))

    async def replica_url(self, replica: str) -> str | None:
        """`ReplicaDirectory`: where `replica` answers, None when it is unknown or stopped announcing."""
        try:
            return await self._do(lambda r: cast(Awaitable[str | None], r.get(self.key(f"replica:{replica}"))))
        except RegistryUnavailable:
            return None

    # Client state

    def _client_key(self, client: str) -> str:
        return self.key("loaded:" + hashlib.sha256(client.encode()).hexdigest()[:40])

    async def loaded_tools(self, client: str) -> list[tuple[str, str]] | None:
        """`SharedClientState`: what `client` loaded in dynamic mode, whichever replica it loaded on."""
        raw = await self._do(lambda r: cast(Awaitable[str | None], r.get(self._client_key(client))))
        if raw is None:
            return None
        return [(str(server), str(tool)) for server, tool in cast(list[list[Any]], json.loads(raw))]

    async def set_loaded_tools(self, client: str, tools: list[tuple[str, str]]) -> None:
        value = json.dumps([list(pair) for pair in tools])
        await self._do(lambda r: r.set(self._client_key(client), value, ex=CLIENT_STATE_SECONDS))

    # Confirmations

    async def confirmation_key(self) -> bytes:
        """`SharedConfirmations`: the key under `confirm-key` (`_shared_key`). Read on every use (they are
        rare), so a Redis that lost its data gives every replica the new key at once."""
        return await self._shared_key("confirm-key")

    async def spend_confirmation(self, nonce: str, ttl: float) -> bool:
        """`SharedConfirmations`: `SET NX` of the spent id, kept until it could not be honoured anyway."""
        key = self.key(f"confirm-spent:{nonce}")
        spent = await self._do(lambda r: r.set(key, "1", nx=True, px=max(1000, int(ttl * 1000))))
        return bool(spent)

    # Upkeep

    async def sweep(self, now: float | None = None) -> int:
        at = time.time() if now is None else now

        async def write(r: aioredis.Redis) -> int:
            gone = 0
            for table in ("servers", "tools"):
                raw = await cast(Awaitable[dict[str, str]], r.hgetall(self.key(table)))
                due = [f for f, v in raw.items() if _expired(v, at)]
                if due:
                    gone += await r.hdel(self.key(table), *due)
            if gone:
                async with r.pipeline(transaction=True) as pipe:
                    self._changed(pipe, "sweep")
                    await pipe.execute()
            tokens = await cast(Awaitable[dict[str, str]], r.hgetall(self.key("tokens")))
            for token_id, raw in tokens.items():
                if _expired(raw, at):
                    async with r.pipeline(transaction=True) as pipe:
                        pipe.hdel(self.key("tokens"), token_id)
                        pipe.hdel(self.key("token-hashes"), str(json.loads(raw)["secretHash"]))
                        removed, *_ = await pipe.execute()
                    gone += int(removed)
            return gone

        return await self._do(write)

    async def version(self) -> int:
        return int(await self._do(lambda r: cast(Awaitable[str | None], r.get(self.key("version")))) or 0)


def _expiry(raw: str) -> float | None:
    return cast(float | None, json.loads(raw).get("expiresAt"))


def _expired(raw: str, at: float) -> bool:
    expires = json.loads(raw).get("expiresAt")
    return expires is not None and float(expires) <= at
