"""Replicas sharing one registry in Redis: two `toolscout serve --transport http`
processes with `registry: {backend: redis}` on a real Debian `redis-server`. What one is told (a
registration, a removal, an issued or revoked token) the other serves; Redis going away fails what
needs it with a clear error, and both carry on by themselves once it is back."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import mcp_types as types
import pytest
from benchmarks.processes import (
    UVICORN_READY,
    RedisServer,
    ServedGateway,
    balancer,
    free_port,
    redis_server,
    running,
    served_gateway,
    servers,
    status_of,
    structured,
    until,
    write_config,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.paths import PYTHON

pytestmark = pytest.mark.anyio

ADMIN = "admin-replicas-0123456789abcdef"
WAIT = 30.0
"""Bound on another replica seeing a change (it polls the registry's version every second)."""


def shared_config(directory: Path, redis_url: str, **extra: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return write_config(directory, registry={"backend": "redis", "url": redis_url, "keyPrefix": "ts-test:"}, **extra)


async def km_to_m(client: Client, value: float) -> float:
    """The units demo's `convert_units` of `value` km to metres, through `execute_tool`."""
    arguments = {"value": value, "from_unit": "km", "to_unit": "m"}
    result = await client.call_tool(
        "execute_tool", {"server": "units", "tool": "convert_units", "arguments": arguments}
    )
    return structured(result)["result"]


def text_demo(port: int) -> list[str]:
    return [PYTHON, "-m", "toolscout.demo.text", "--transport", "http", "--port", str(port)]


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_a_registration_through_one_replica_is_served_by_the_other(tmp_path: Path, era: str) -> None:
    port = free_port()
    async with (
        redis_server(tmp_path / "redis") as redis,
        running(text_demo(port), ready=UVICORN_READY),
        served_gateway(shared_config(tmp_path / "a", redis.url)) as a,
        served_gateway(shared_config(tmp_path / "b", redis.url)) as b,
        Client(b.mcp_url, mode=era) as on_b,
    ):
        body = {"namespace": "run-1", "name": "text", "url": f"http://127.0.0.1:{port}/mcp"}
        created = await a.api("POST", "/registry/servers", body)
        assert created.status_code == 201, created.text
        # Replica B connects to the endpoint itself and serves its tools.
        await until(on_b, lambda found: status_of("run-1.text")(found) == "connected", seconds=WAIT)
        arguments = {"server": "run-1.text", "tool": "slugify", "arguments": {"text": "Two Replicas"}}
        assert structured(await on_b.call_tool("execute_tool", arguments)) == {"result": "two-replicas"}
        listed = (await b.api("GET", "/registry/servers?namespace=run-1")).json()["servers"]
        assert [entry["name"] for entry in listed] == ["text"]

        # Removed through B: A lets it go too.
        assert (await b.api("DELETE", "/registry/servers/run-1/text")).status_code == 204
        async with Client(a.mcp_url, mode=era) as on_a:
            await until(on_a, lambda found: "run-1.text" not in found, seconds=WAIT)
        await until(on_b, lambda found: "run-1.text" not in found, seconds=WAIT)


async def test_a_token_issued_on_one_replica_works_on_the_other_until_revoked(tmp_path: Path) -> None:
    os.environ["TS_REPLICA_ADMIN"] = ADMIN  # the children inherit it; ${...} in the config reads it
    auth = {"adminKeys": ["${TS_REPLICA_ADMIN}"]}
    admin = {"authorization": f"Bearer {ADMIN}"}
    async with (
        redis_server(tmp_path / "redis") as redis,
        served_gateway(shared_config(tmp_path / "a", redis.url, auth=auth)) as a,
        served_gateway(shared_config(tmp_path / "b", redis.url, auth=auth)) as b,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        # Health checks carry no credential: answered all the same (and nothing else is).
        assert (await http.get(b.base_url + "/healthz")).status_code == 200
        assert (await http.get(b.base_url + "/readyz")).status_code == 200
        assert (await http.get(b.api_url + "/tokens")).status_code == 401
        issued = await http.post(
            a.api_url + "/tokens",
            json={"namespace": "run-1", "servers": ["units"], "label": "ci", "ttlSeconds": 600},
            headers=admin,
        )
        assert issued.status_code == 201, issued.text
        token = issued.json()
        holder = {"authorization": f"Bearer {token['token']}"}
        async with (  # issued on A, accepted by B at once
            httpx2.AsyncClient(headers=holder, timeout=30) as as_holder,
            Client(streamable_http_client(b.mcp_url, http_client=as_holder)) as on_b,
        ):
            assert set(await servers(on_b)) == {"units"}
        assert (await http.delete(f"{b.api_url}/tokens/{token['id']}", headers=admin)).status_code == 204
        with anyio.fail_after(WAIT):  # A still had it cached: refused once its record is read again
            while True:
                refused = await http.post(a.mcp_url, headers={**holder, "accept": "application/json"}, json={})
                if refused.status_code == 401:
                    break
                await anyio.sleep(0.1)
        listed = (await http.get(a.api_url + "/tokens", headers=admin)).json()["tokens"]
        assert listed == []
        assert token["token"] not in json.dumps(listed)

        # A rate is counted once for both replicas: 3 a minute, requests alternating between them.
        limited = await http.post(
            a.api_url + "/tokens",
            json={
                "namespace": "run-1",
                "servers": ["units"],
                "ttlSeconds": 600,
                "requestsPerMinute": 3,
                "label": "rated",
            },
            headers=admin,
        )
        assert limited.status_code == 201, limited.text
        holder = {"authorization": f"Bearer {limited.json()['token']}", "accept": "application/json"}
        statuses = [
            (await http.post((a if n % 2 else b).mcp_url, headers=holder, json={})).status_code for n in range(4)
        ]
        assert 429 not in statuses[:3] and statuses[3] == 429, statuses


async def test_redis_going_away_fails_what_needs_it_and_both_replicas_recover(tmp_path: Path) -> None:
    async with (
        redis_server(tmp_path / "redis") as redis,
        served_gateway(shared_config(tmp_path / "a", redis.url)) as a,
        Client(a.mcp_url) as client,
    ):
        async with httpx2.AsyncClient(timeout=30) as http:
            assert (await http.get(a.base_url + "/readyz")).json() == {"status": "ready", "registry": "ok"}
        await redis.stop()
        async with httpx2.AsyncClient(timeout=30) as http:  # a balancer sends it nothing until Redis is back
            alive, ready = await http.get(a.base_url + "/healthz"), await http.get(a.base_url + "/readyz")
        assert alive.status_code == 200 and alive.json() == {"status": "ok"}
        assert ready.status_code == 503 and ready.json()["status"] == "not ready"
        assert f"127.0.0.1:{redis.port}" in ready.json()["registry"]
        # What needs the registry fails at once, saying where it is and that it recovers by itself.
        with anyio.fail_after(WAIT):
            refused = await a.api("GET", "/registry/servers")
        assert refused.status_code == 503
        error = refused.json()["error"]
        assert error["code"] == "REGISTRY_UNAVAILABLE"
        assert f"127.0.0.1:{redis.port}" in error["message"] and "password" not in error["message"]
        assert refused.headers["retry-after"] == "1"
        # What does not need it goes on: the configured server's tools.
        assert await km_to_m(client, 1) == 1000
        await redis.start()
        with anyio.fail_after(WAIT):  # its pool connects again by itself: asked as a client would
            while (await a.api("GET", "/registry/servers")).status_code != 200:  # noqa: ASYNC110
                await anyio.sleep(0.1)
        later = {"global": True, "name": "later", "url": "http://127.0.0.1:1/mcp"}
        async with httpx2.AsyncClient(timeout=30) as http:
            assert (await http.get(a.base_url + "/readyz")).status_code == 200
        created = await a.api("POST", "/registry/servers", later)
        assert created.status_code == 201, created.text
        await until(client, lambda found: "later" in found, seconds=WAIT)


async def search_details_execute(url: str, era: str) -> None:
    """An agent's whole flow through `url`, each request free to land on any replica."""
    async with Client(url, mode=era) as client:
        found = structured(await client.call_tool("search_tools", {"query": "slugify a title", "limit": 3}))
        hit = next(h for h in found["results"] if h["tool"] == "slugify")
        details = structured(await client.call_tool("get_tool_details", {"server": hit["server"], "tool": "slugify"}))
        assert "text" in details["parameters"][0]["name"]
        arguments = {"server": hit["server"], "tool": "slugify", "arguments": {"text": "Behind The Balancer"}}
        assert structured(await client.call_tool("execute_tool", arguments)) == {"result": "behind-the-balancer"}


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_stateless_replicas_behind_a_round_robin_balancer(tmp_path: Path, era: str, count: int) -> None:
    port = free_port()
    async with AsyncExitStack() as stack:
        redis = await stack.enter_async_context(redis_server(tmp_path / "redis"))
        await stack.enter_async_context(running(text_demo(port), ready=UVICORN_READY))
        replicas = [
            await stack.enter_async_context(
                served_gateway(shared_config(tmp_path / f"replica-{n}", redis.url), "--stateless")
            )
            for n in range(count)
        ]
        front = await stack.enter_async_context(balancer(tmp_path / "nginx", [r.base_url for r in replicas]))
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=30))
        # Registered through the balancer (on whichever replica), then used through it (on any).
        body = {"namespace": "run-1", "name": "text", "url": f"http://127.0.0.1:{port}/mcp"}
        created = await http.post(front + "/api/v1/registry/servers", json=body)
        assert created.status_code == 201, created.text
        for replica in replicas:
            async with Client(replica.mcp_url, mode=era) as direct:
                await until(direct, lambda found: status_of("run-1.text")(found) == "connected", seconds=WAIT)
        for _ in range(count + 1):  # requests go round the replicas
            await search_details_execute(front + "/mcp", era)
    served = [line.split()[0] for line in (tmp_path / "nginx" / "access.log").read_text().splitlines()]
    assert {urlsplit(r.base_url).netloc for r in replicas} <= set(served)  # every replica answered


CALLS = 1000


@asynccontextmanager
async def fronted_pair(tmp_path: Path, **extra: Any) -> AsyncGenerator[tuple[ServedGateway, ServedGateway, str]]:
    """Two stateless replicas sharing a Redis (`extra`: more of their config), nginx round robin in front."""
    async with (
        redis_server(tmp_path / "redis") as redis,
        served_gateway(shared_config(tmp_path / "a", redis.url, **extra), "--stateless") as a,
        served_gateway(shared_config(tmp_path / "b", redis.url, **extra), "--stateless") as b,
        balancer(tmp_path / "nginx", [a.base_url, b.base_url]) as front,
    ):
        yield a, b, front


async def test_a_thousand_concurrent_calls_across_replicas_each_answered_once_and_right(tmp_path: Path) -> None:
    answers: dict[int, float] = {}
    limit = anyio.CapacityLimiter(32)

    async def call(client: Client, n: int) -> None:
        async with limit:
            result = await km_to_m(client, n)
            assert n not in answers  # never answered twice
            answers[n] = result

    async with fronted_pair(tmp_path) as (a, b, front), Client(front + "/mcp", mode="auto") as client:
        with anyio.fail_after(600):
            async with anyio.create_task_group() as tg:
                for n in range(CALLS):
                    tg.start_soon(call, client, n)
    assert answers == {n: n * 1000 for n in range(CALLS)}  # none lost, none misrouted
    served = [line.split()[0] for line in (tmp_path / "nginx" / "access.log").read_text().splitlines()]
    shares = {address: served.count(address) for address in (urlsplit(a.base_url).netloc, urlsplit(b.base_url).netloc)}
    assert all(share >= CALLS // 4 for share in shares.values()), shares  # spread over both


async def test_a_replica_killed_mid_run_leaves_the_other_serving(tmp_path: Path) -> None:
    servers_config = {
        "units": {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]},
        "chatty": {"command": PYTHON, "args": ["-m", "tests.servers.chatty"]},  # `hang` never answers
    }
    arrived = anyio.Event()
    failed: list[BaseException] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        arrived.set()  # the call is in flight on B, its upstream hanging

    async def in_flight_on_b(b: ServedGateway) -> None:
        try:
            async with Client(b.mcp_url, mode="auto") as client:
                call: dict[str, Any] = {"server": "chatty", "tool": "hang", "arguments": {}}
                await client.call_tool("execute_tool", call, progress_callback=on_progress)
        except Exception as exc:  # the replica died under it: an error, not an answer, not a hang
            failed.append(exc)

    async with fronted_pair(tmp_path, mcpServers=servers_config) as (a, b, front):
        await search_units(front + "/mcp")
        # Acknowledged by B before it dies: kept (in Redis), served by A after.
        kept = {"global": True, "name": "kept", "url": "http://127.0.0.1:1/mcp"}
        assert (await b.api("POST", "/registry/servers", kept)).status_code == 201
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(in_flight_on_b, b)
                await arrived.wait()
                b.process.process.kill()  # SIGKILL: no goodbye
                await b.process.process.wait()
        assert len(failed) == 1, failed  # the call in flight on B failed, cleanly and at once
        for _ in range(6):  # what comes after goes to the replica left, none lost
            await search_units(front + "/mcp")
        async with Client(a.mcp_url) as on_a:
            await until(on_a, lambda found: "kept" in found, seconds=WAIT)


async def search_units(url: str) -> None:
    async with Client(url, mode="auto") as client:
        found = structured(await client.call_tool("search_tools", {"query": "convert kilometres to metres"}))
        assert found["results"][0]["tool"] == "convert_units"
        assert await km_to_m(client, 2) == 2000


async def test_a_replica_started_later_answers_from_the_shared_catalog_while_the_endpoint_is_down(
    tmp_path: Path,
) -> None:
    port = free_port()
    async with redis_server(tmp_path / "redis") as redis:
        async with (
            running(text_demo(port), ready=UVICORN_READY),
            served_gateway(shared_config(tmp_path / "a", redis.url)) as a,
            Client(a.mcp_url) as on_a,
        ):
            body = {"namespace": "run-1", "name": "text", "url": f"http://127.0.0.1:{port}/mcp"}
            assert (await a.api("POST", "/registry/servers", body)).status_code == 201
            await until(on_a, lambda found: status_of("run-1.text")(found) == "connected", seconds=WAIT)
        # The endpoint is gone, and so is replica A; B starts now, its own catalog file empty.
        async with (
            served_gateway(shared_config(tmp_path / "b", redis.url)) as b,
            Client(b.mcp_url) as on_b,
        ):
            found = structured(await on_b.call_tool("search_tools", {"query": "slugify a title", "limit": 3}))
            hit = next(h for h in found["results"] if h["server"] == "run-1.text")
            assert hit["tool"] == "slugify" and hit["stale"] is True  # A's list, marked as not live


async def test_dynamic_modes_loaded_tools_follow_a_client_across_replicas(tmp_path: Path) -> None:
    async with (
        redis_server(tmp_path / "redis") as redis,
        served_gateway(shared_config(tmp_path / "a", redis.url, mode="dynamic"), "--stateless") as a,
        served_gateway(shared_config(tmp_path / "b", redis.url, mode="dynamic"), "--stateless") as b,
        balancer(tmp_path / "nginx", [a.base_url, b.base_url]) as front,
        Client(front + "/mcp", mode="legacy") as client,
    ):
        loaded = await client.call_tool("load_tools", {"tools": [{"server": "units", "tool": "convert_units"}]})
        assert not loaded.is_error, loaded
        for _ in range(4):  # each list on either replica: the loaded tool is in every one
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert "convert_units" in names or "units__convert_units" in names, names
        assert (await client.call_tool("unload_tools", {})).is_error is False
        for _ in range(4):
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert "units__convert_units" not in names and "convert_units" not in names, names
    served = {line.split()[0] for line in (tmp_path / "nginx" / "access.log").read_text().splitlines()}
    assert len(served) == 2  # the requests did go to both replicas


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_progress_comes_on_the_calls_own_stream_through_the_balancer(tmp_path: Path, era: str) -> None:
    port = free_port()
    conformance = [PYTHON, "-m", "tests.servers.conformance", "--port", str(port)]
    servers_config = {"conformance": {"url": f"http://127.0.0.1:{port}/mcp"}}
    reported: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append((progress, total))

    async with running(conformance, ready=UVICORN_READY), redis_server(tmp_path / "redis") as redis:
        configs = [shared_config(tmp_path / name, redis.url, mcpServers=servers_config) for name in ("a", "b")]
        async with (
            served_gateway(configs[0], "--stateless") as a,
            served_gateway(configs[1], "--stateless") as b,
            balancer(tmp_path / "nginx", [a.base_url, b.base_url]) as front,
            Client(front + "/mcp", mode=era) as client,
        ):
            call: dict[str, Any] = {"server": "conformance", "tool": "test_tool_with_progress", "arguments": {}}
            for _ in range(2):  # on one replica, then on the other
                done = await client.call_tool("execute_tool", call, progress_callback=on_progress)
                assert not done.is_error, done
    assert reported == [(0.0, 100.0), (50.0, 100.0), (100.0, 100.0)] * 2


async def test_a_replica_started_before_its_redis_serves_and_is_ready_once_redis_answers(tmp_path: Path) -> None:
    redis = RedisServer(tmp_path / "redis")  # not started yet
    async with served_gateway(shared_config(tmp_path / "a", redis.url)) as a, httpx2.AsyncClient(timeout=30) as http:
        assert any("cannot be reached" in line for line in a.process.stderr)  # said, not fatal
        assert (await http.get(a.base_url + "/healthz")).status_code == 200
        assert (await http.get(a.base_url + "/readyz")).status_code == 503
        async with Client(a.mcp_url) as client:  # what needs no registry is served meanwhile
            assert await km_to_m(client, 3) == 3000
            await redis.start()
            try:
                with anyio.fail_after(WAIT):  # its pool connects by itself: asked as a balancer would
                    while (await http.get(a.base_url + "/readyz")).status_code != 200:  # noqa: ASYNC110
                        await anyio.sleep(0.1)
                later = {"global": True, "name": "later", "url": "http://127.0.0.1:1/mcp"}
                assert (await a.api("POST", "/registry/servers", later)).status_code == 201
                await until(client, lambda found: "later" in found, seconds=WAIT)
            finally:
                await redis.stop()


async def test_an_input_required_retry_landing_on_another_replica_is_passed_to_the_one_holding_the_call(
    tmp_path: Path,
) -> None:
    port = free_port()
    conformance = [PYTHON, "-m", "tests.servers.conformance", "--port", str(port)]
    servers_config = {"conformance": {"url": f"http://127.0.0.1:{port}/mcp"}}
    asked: list[str] = []

    async def model(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        content = params.messages[-1].content
        asked.append(content.text if isinstance(content, types.TextContent) else "")
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="from the client"), model="m")

    async with running(conformance, ready=UVICORN_READY), redis_server(tmp_path / "redis") as redis:
        configs = [shared_config(tmp_path / name, redis.url, mcpServers=servers_config) for name in ("a", "b")]
        async with (
            served_gateway(configs[0], "--stateless") as a,
            served_gateway(configs[1], "--stateless") as b,
            balancer(tmp_path / "nginx", [a.base_url, b.base_url]) as front,
            Client(front + "/mcp", mode="auto", sampling_callback=model) as client,
        ):
            assert client.protocol_version == "2026-07-28"
            for n in range(4):  # each call takes two requests: its retries land on either replica
                call: dict[str, Any] = {
                    "server": "conformance",
                    "tool": "test_sampling",
                    "arguments": {"prompt": f"q{n}"},
                }
                done = await client.call_tool("execute_tool", call)
                assert not done.is_error, done
                assert "LLM response: from the client" in str(done.content)
    assert asked == [f"q{n}" for n in range(4)]
    forwarded = sum("forwarded to replica" in line for r in (a, b) for line in r.process.stderr)
    assert forwarded >= 1  # some retry did land on the other replica, and was passed back
