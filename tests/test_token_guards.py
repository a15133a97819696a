"""Issued tokens under attack and through an outage, on a real `toolscout
serve` with its registry in a real redis-server: a client holding a token keeps calling tools while
Redis is killed and restarted, a revocation applies once Redis answers, unknown tokens are refused
meanwhile; a flood of forged tokens is refused 401 with no registry query (every command Redis
receives is watched with MONITOR) while a real client keeps working, and a token issued before
tags still works. Then the same guards in process, with clocks the test moves."""

from __future__ import annotations

import logging
import secrets
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import redis.asyncio as aioredis
from benchmarks.processes import ServedGateway, redis_server, served_gateway, structured, write_config
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.requests import Request

from toolscout.config.http import AuthConfig
from toolscout.registry.base import LEGACY_CHARS, TAGGED_CHARS, TOKEN_PREFIX, TokenRecord, secret_hash
from toolscout.registry.redis import RedisRegistry
from toolscout.registry.requests import issue_token
from toolscout.serve.auth import TOKEN_RECHECK_SECONDS, BearerPrincipals, PrincipalRefused

pytestmark = pytest.mark.anyio

ADMIN = "admin-token-guards-0123456789abcdef"
PREFIX = "ts-guard:"
WAIT = 60.0
"""Bound on any one wait on the gateway (a state it reaches, asked for as a client would)."""
OUTAGE_CALLS = 40
"""Tool calls every client makes while the gateway cannot read Redis."""
FORGED = 400
TOKEN_REQUEST: dict[str, Any] = {"namespace": "run-1", "servers": ["units"], "ttlSeconds": 600, "label": "agent"}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def redis_config(directory: Path, redis_url: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    registry = {"backend": "redis", "url": redis_url, "keyPrefix": PREFIX}
    return write_config(directory, registry=registry, auth={"adminKeys": ["${TS_GUARD_ADMIN}"]})


async def issue(http: httpx2.AsyncClient, gateway: ServedGateway) -> dict[str, Any]:
    admin = {"authorization": f"Bearer {ADMIN}"}
    issued = await http.post(gateway.api_url + "/tokens", json=TOKEN_REQUEST, headers=admin)
    assert issued.status_code == 201, issued.text
    return issued.json()


async def km_to_m(client: Client, value: float) -> float:
    arguments = {"value": value, "from_unit": "km", "to_unit": "m"}
    call = {"server": "units", "tool": "convert_units", "arguments": arguments}
    return structured(await client.call_tool("execute_tool", call))["result"]


async def status_of(http: httpx2.AsyncClient, gateway: ServedGateway, credential: str) -> int:
    """The status a bare request to /mcp with `credential` gets (a session-less ping)."""
    answer = await http.post(gateway.mcp_url, json=PING, headers={**ACCEPT, "authorization": f"Bearer {credential}"})
    return answer.status_code


def forged(length: int) -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(64)[:length]


def said(gateway: ServedGateway, text: str) -> int:
    return sum(text in line for line in gateway.process.stderr)


async def test_a_token_client_keeps_calling_tools_through_a_redis_outage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TS_GUARD_ADMIN", ADMIN)  # the gateway inherits it; ${...} in the config reads it
    failures: list[BaseException] = []
    answered = 0
    progress = [anyio.Event()]

    async def keep_calling(client: Client, stop: anyio.Event) -> None:
        nonlocal answered
        while not stop.is_set():
            try:
                assert await km_to_m(client, 2) == 2000
            except Exception as exc:  # a refusal (503) surfaces here: the test fails on it
                failures.append(exc)
                return
            answered += 1
            progress[0].set()

    async def calls_after(count: int) -> None:
        """Until every client made `count` more calls (or one failed)."""
        target = answered + count
        while answered < target and not failures:
            progress[0] = anyio.Event()
            await progress[0].wait()

    async with (
        redis_server(tmp_path / "redis") as redis,
        served_gateway(redis_config(tmp_path / "gw", redis.url)) as gateway,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        token, never_used = await issue(http, gateway), await issue(http, gateway)
        holder = {"authorization": f"Bearer {token['token']}"}
        stop = anyio.Event()
        async with (
            httpx2.AsyncClient(headers=holder, timeout=30) as as_holder,
            Client(streamable_http_client(gateway.mcp_url, http_client=as_holder)) as client,
            anyio.create_task_group() as load,
        ):
            for _ in range(4):
                load.start_soon(keep_calling, client, stop)
            with anyio.fail_after(WAIT):
                await calls_after(8)
                await redis.stop()
                # Its record is due to be read again and cannot be: the gateway says so, once, and goes on.
                while not said(gateway, "cannot read the token registry") and not failures:
                    await calls_after(1)
                await calls_after(OUTAGE_CALLS)
            assert not failures, failures  # no call refused through the outage
            # Meanwhile: a token it never read is 503 (it cannot tell), a forged one 401 (it can).
            assert await status_of(http, gateway, never_used["token"]) == 503
            assert await status_of(http, gateway, forged(TAGGED_CHARS)) == 401
            await redis.start()
            with anyio.fail_after(WAIT):
                while not said(gateway, "the token registry answers again") and not failures:
                    await calls_after(1)
            stop.set()
        assert failures == [], failures  # no call refused, before, during or after the outage
        assert said(gateway, "cannot read the token registry") == 1  # once, not once a request
        # Revoked as soon as Redis is back (directly in Redis, as another replica would): refused.
        async with RedisRegistry(redis.url, prefix=PREFIX) as shared:
            assert await shared.revoke_token(token["id"])
        with anyio.fail_after(WAIT):
            while await status_of(http, gateway, token["token"]) != 401:  # noqa: ASYNC110
                await anyio.sleep(0.05)
        assert await status_of(http, gateway, token["token"]) == 401
        # Known once Redis answers: past authentication, only the session-less ping itself is refused.
        assert await status_of(http, gateway, never_used["token"]) == 400


async def test_forged_tokens_are_refused_without_a_registry_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TS_GUARD_ADMIN", ADMIN)
    seen: list[str] = []
    statuses: list[int] = []
    issued = ""
    fakes = [forged(TAGGED_CHARS if n % 2 else LEGACY_CHARS) for n in range(FORGED)]
    legacy = TOKEN_PREFIX + secrets.token_urlsafe(32)  # a token issued before tags (no tag)
    assert len(legacy) == len(TOKEN_PREFIX) + LEGACY_CHARS
    async with redis_server(tmp_path / "redis") as redis:
        async with RedisRegistry(redis.url, prefix=PREFIX) as shared:
            record = TokenRecord("tok_legacy", "run-1", ("units",), label="old", secret_hash=secret_hash(legacy))
            await shared.add_token(record)
        watcher = aioredis.Redis.from_url(redis.url, decode_responses=True)  # pyright: ignore[reportUnknownMemberType]
        async with (
            served_gateway(redis_config(tmp_path / "gw", redis.url)) as gateway,
            httpx2.AsyncClient(timeout=30) as http,
            watcher.monitor() as monitor,  # every command Redis runs, whoever sends it
            anyio.create_task_group() as watching,
        ):

            async def watch() -> None:
                async for command in monitor.listen():
                    seen.append(str(command.get("command", "")))

            watching.start_soon(watch)
            token = await issue(http, gateway)
            issued = str(token["token"])
            limit = anyio.CapacityLimiter(16)

            async def attack(fake: str) -> None:
                async with limit:
                    statuses.append(await status_of(http, gateway, fake))

            holder = {"authorization": f"Bearer {token['token']}"}
            with anyio.fail_after(WAIT * 2):
                async with (
                    httpx2.AsyncClient(headers=holder, timeout=30) as as_holder,
                    Client(streamable_http_client(gateway.mcp_url, http_client=as_holder)) as client,
                    anyio.create_task_group() as flood,
                ):
                    for fake in fakes:
                        flood.start_soon(attack, fake)
                    for n in range(20):  # a real client keeps working through the flood
                        assert await km_to_m(client, n) == n * 1000
                # The token issued before tags still works.
                for era in ("legacy", "auto"):
                    async with (
                        httpx2.AsyncClient(headers={"authorization": f"Bearer {legacy}"}, timeout=30) as as_old,
                        Client(streamable_http_client(gateway.mcp_url, http_client=as_old), mode=era) as old,
                    ):
                        assert await km_to_m(old, 3) == 3000
                marker = "end-of-flood-" + secrets.token_hex(4)
                await watcher.echo(marker)  # pyright: ignore[reportUnknownMemberType]
                while not any(marker in command for command in seen):  # noqa: ASYNC110
                    await anyio.sleep(0.05)  # once the marker is seen, every earlier command was
            watching.cancel_scope.cancel()
        await watcher.aclose()
    assert statuses == [401] * FORGED
    looked_up = " ".join(seen)
    assert secret_hash(issued) in looked_up  # the watch does see token lookups...
    assert not [fake for fake in fakes if secret_hash(fake) in looked_up]  # ...and none for a forged token


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def request(credential: str) -> Request:
    headers = [(b"authorization", f"Bearer {credential}".encode())]
    return Request({"type": "http", "method": "POST", "path": "/mcp", "headers": headers, "client": ("10.0.0.9", 5)})


async def status(principals: BearerPrincipals, credential: str) -> int:
    try:
        await principals.resolve(request(credential))
    except PrincipalRefused as refused:
        answer: Any = refused.response
        return int(answer.status_code)
    return 200


async def test_the_outage_grace_is_bounded_by_its_period_and_the_tokens_expiry(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    wall, mono = Clock(), Clock()
    async with redis_server(tmp_path / "redis") as redis, RedisRegistry(redis.url) as registry:
        auth = AuthConfig(admin_keys=[ADMIN], registry_outage_grace=30)
        principals = BearerPrincipals(auth, registry, clock=wall, monotonic=mono)
        await principals.check_tokens()
        _, long_lived = await issue_token(registry, TOKEN_REQUEST, now=wall.now)
        _, short_lived = await issue_token(registry, {**TOKEN_REQUEST, "ttlSeconds": 10}, now=wall.now)
        assert await status(principals, long_lived) == 200 and await status(principals, short_lived) == 200
        await redis.stop()
        mono.now += TOKEN_RECHECK_SECONDS
        for _ in range(5):
            assert await status(principals, long_lived) == 200
        wall.now += 10  # the short-lived token's own expiry ends it, outage or not
        assert await status(principals, short_lived) == 401
        mono.now += 30  # past the grace: its record is too old to go without the registry
        assert await status(principals, long_lived) == 503
        outage = [r for r in caplog.records if "cannot read the token registry" in r.getMessage()]
        assert len(outage) == 1 and "auth.registryOutageGrace" in outage[0].getMessage()
        await redis.start()
        assert await status(principals, long_lived) == 200
        assert ADMIN not in caplog.text and long_lived not in caplog.text


def test_the_outage_grace_is_a_config_key_with_a_clear_error() -> None:
    assert AuthConfig().registry_outage_grace == 300
    assert AuthConfig.model_validate({"registryOutageGrace": 0}).registry_outage_grace == 0
    with pytest.raises(ValueError, match="registryOutageGrace"):
        AuthConfig.model_validate({"registryOutageGrace": -1})
