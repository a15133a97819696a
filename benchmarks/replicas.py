"""Throughput and latency of replicas sharing one registry in Redis, side by side with one
replica on the embedded SQLite registry, in one run.

    python -m benchmarks replicas [--requests 2000] [--sequential 800] [--concurrency 16] [--rounds 8]

Real processes, started as `tests/test_replicas.py` starts them (`benchmarks/processes.py`):
`toolscout serve --transport http --port 0 --stateless` children in front of the demo server `units`
(stdio, a child of each replica), with authentication on (`auth: {adminKeys: ["${VAR}"]}`) and a token issued through
`POST /api/v1/tokens` without a rate limit, so that every request resolves an issued token (a
registry lookup at most once a second per replica, `TOKEN_RECHECK_SECONDS`; the cached record
otherwise). Set-ups:

* `1 replica, SQLite`: the embedded registry (the default);
* `1 replica, Redis`: `registry: {backend: redis}` on Debian's `redis-server`;
* `nginx → 1 replica, Redis`: the same replica behind nginx (`benchmarks/processes.py`'s `balancer` config):
  what the balancer's hop costs by itself;
* `nginx → 2 replicas, Redis`: round robin over that replica and a second one sharing the Redis;
* `nginx (keepalive) → 2 replicas, Redis`: the same with `keepalive 32` in nginx's upstream block
  (the helper's config has none: nginx then opens a connection to a replica for every request).

The load: 2026-07-28 requests, each a single stateless POST of a JSON-RPC `tools/call` with the
headers and `_meta` the SDK's `Client(mode="auto")` sends (`MCP-Protocol-Version`, `Mcp-Method`,
`Mcp-Name`; the SDK's client would add a `tools/list` after each call, which is left out), written
by raw `httpx2` from this process (one event loop, keep-alive connections); every answer is checked
(200, a JSON-RPC result, not `isError`, the right conversion or the right tool found). Per set-up
and call (`search_tools`, `execute_tool` of `convert_units`): `--sequential` requests one at a time
(latency without queueing) and `--requests` requests `--concurrency` at a time (throughput, and the
latency under that load), in `--rounds` rounds, the set-ups in a shuffled order each round, so the
machine's drift falls on all of them alike; each round's SQLite and Redis figures are paired. The
load generator's own ceiling: `GET /healthz` of the SQLite replica at the same concurrency, in
every round. CPU time per request of every process (the generator, the replicas, the upstreams,
Redis, nginx: /proc), and Redis's command counts (`INFO commandstats`), show where the time goes;
`others` is the machine's busy time (/proc/stat, steal included) less theirs: whatever else ran.
Last, in process, interleaved: one `token_by_hash` lookup, `RedisRegistry` against `SqliteRegistry`,
and a rated token's count (`requestsPerMinute`: every request, in Redis or in the replica), then that
count again with Redis's `appendfsync everysec` instead of the tests' `always`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import redis.asyncio as aioredis

from benchmarks import harness
from benchmarks.processes import ServedGateway, balancer, redis_server, served_gateway, write_config
from toolscout.registry.base import secret_hash
from toolscout.registry.redis import RedisRegistry
from toolscout.registry.requests import issue_token
from toolscout.registry.sqlite import SqliteRegistry
from toolscout.serve.auth import RateLimiter

ADMIN_VARIABLE = "TS_BENCH_REPLICAS_ADMIN"
ADMIN = "bench-replicas-admin-0123456789abcdef"
PREFIX = "bench:"
PROTOCOL = "2026-07-28"
EXPECTED = 42.1648128
TOKEN_REQUEST = {"namespace": "bench", "servers": ["units"], "ttlSeconds": 3600, "label": "bench"}
CALLS: dict[str, dict[str, Any]] = {
    "search_tools": {"query": "convert miles to kilometers", "limit": 3},
    "execute_tool": {
        "server": "units",
        "tool": "convert_units",
        "arguments": {"value": 26.2, "from_unit": "mi", "to_unit": "km"},
    },
}
META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
SQLITE, REDIS, NGINX_ONE, NGINX_TWO, KEEPALIVE_TWO = (
    "1 replica, SQLite",
    "1 replica, Redis",
    "nginx → 1 replica, Redis",
    "nginx → 2 replicas, Redis",
    "nginx (keepalive) → 2 replicas, Redis",
)
HEALTHZ = "load generator: GET /healthz"
LOOKUP_SQLITE = "`SqliteRegistry.token_by_hash` (embedded, the default)"
LOOKUP_REDIS = "`RedisRegistry.token_by_hash` (2 `HGET`s)"
ADMIT_REDIS = "a rated token's count, shared (`RedisRegistry.take`, an `EVAL`), `appendfsync always`"
ADMIT_LOCAL = "a rated token's count, embedded (`RateLimiter.take`, in the replica)"
ADMIT_REDIS_EVERYSEC = "the same, `appendfsync everysec` (Redis's default)"
ROLES = ("generator", "replicas", "upstreams", "redis", "nginx")
MACHINE = "machine"


@dataclass
class Target:
    """One set-up: where its requests go, and its processes by role (for their CPU time)."""

    label: str
    url: str
    pids: dict[str, list[int]]


@dataclass
class Batch:
    """One batch of requests: each one's latency (s), the batch's wall time (s), CPU time (s) by role."""

    latencies: list[float]
    seconds: float
    cpu: dict[str, float]


@dataclass
class Measured:
    batches: list[Batch] = field(default_factory=list[Batch])

    @property
    def latencies(self) -> list[float]:
        return [value for batch in self.batches for value in batch.latencies]

    @property
    def throughput(self) -> float:
        return len(self.latencies) / sum(batch.seconds for batch in self.batches)

    def cpu_ms(self, role: str) -> float:
        """CPU time of `role`'s processes per request, ms."""
        return sum(batch.cpu.get(role, 0.0) for batch in self.batches) * 1000 / len(self.latencies)

    def cores(self, roles: Iterable[str] = ROLES) -> float:
        """CPU seconds per wall second of `roles` (all of this run's processes): how many cores they kept busy."""
        wanted = tuple(roles)
        busy = sum(seconds for batch in self.batches for role, seconds in batch.cpu.items() if role in wanted)
        return busy / sum(batch.seconds for batch in self.batches)

    def others(self) -> float:
        """Cores busy with anything else meanwhile (the machine's busy time, steal included, less this run's)."""
        return self.cores([MACHINE]) - self.cores()


def _p(values: Iterable[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of `pid` so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (its children, theirs, ...)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            found += [int(child), *descendants(int(child))]
    return found


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def snapshot(pids: dict[str, list[int]]) -> dict[str, float]:
    taken = {role: sum(cpu_seconds(pid) for pid in members) for role, members in pids.items()}
    taken["generator"] = own_cpu()
    taken[MACHINE] = machine_busy()
    return taken


def machine_busy() -> float:
    """Seconds of CPU time the whole machine has spent busy (/proc/stat: all but idle and iowait; steal included)."""
    ticks = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = ticks
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def request_body(tool: str, arguments: dict[str, Any]) -> Callable[[int], bytes]:
    """The JSON-RPC `tools/call` the SDK writes at 2026-07-28, as bytes for request id `n`."""
    params = json.dumps({"name": tool, "arguments": arguments, "_meta": META}, separators=(",", ":"))
    head, tail = b'{"jsonrpc":"2.0","id":', b',"method":"tools/call","params":' + params.encode() + b"}"
    return lambda n: head + str(n).encode() + tail


def check(call: str, answer: httpx2.Response) -> None:
    """A correct result, or the run stops saying what came back."""
    try:
        result = answer.json()["result"] if answer.status_code == 200 else None
    except (ValueError, KeyError):
        result = None
    if isinstance(result, dict) and not cast(dict[str, Any], result).get("isError"):
        content: dict[str, Any] = cast(dict[str, Any], result).get("structuredContent") or {}
        if call == "execute_tool" and content.get("result") == EXPECTED:
            return
        if call == "search_tools" and any(hit.get("tool") == "convert_units" for hit in content.get("results", [])):
            return
    raise SystemExit(f"{call}: unexpected answer {answer.status_code}: {answer.text[:500]}")


async def load(
    http: httpx2.AsyncClient,
    url: str,
    call: str | None,
    headers: dict[str, str],
    count: int,
    concurrency: int,
    pids: dict[str, list[int]],
) -> Batch:
    """`count` requests (`call`'s POST, or `GET url` when None), `concurrency` at a time."""
    body = request_body(call, CALLS[call]) if call is not None else None
    if call is not None:
        headers = {**headers, "mcp-method": "tools/call", "mcp-name": call}
    latencies: list[float] = []
    numbers: Iterator[int] = iter(range(1, count + 1))

    async def worker() -> None:
        for n in numbers:  # shared by the workers: each takes the next request
            started = time.perf_counter()
            if body is None:
                answer = await http.get(url)
            else:
                answer = await http.post(url, content=body(n), headers=headers)
            latencies.append(time.perf_counter() - started)
            if call is None:
                if answer.status_code != 200:
                    raise SystemExit(f"{url}: {answer.status_code} {answer.text[:200]}")
            else:
                check(call, answer)

    before = snapshot(pids)
    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(worker)
    seconds = time.perf_counter() - started
    after = snapshot(pids)
    return Batch(latencies, seconds, {role: after[role] - before[role] for role in after})


async def lookups(scratch: Path, redis_url: str, count: int) -> dict[str, list[float]]:
    """The registry's part of a request, in process, `count` times each (after 100 unmeasured), interleaved:
    one `token_by_hash` per backend (a token's record read again), and a rated token's count (each
    request of a token with `requestsPerMinute`: in Redis for every replica, else in the replica)."""
    times: dict[str, list[float]] = {}
    limiter, per_minute = RateLimiter(), 1_000_000_000
    async with RedisRegistry(redis_url, prefix="bench-lookup:") as shared:
        embedded = SqliteRegistry(scratch / "lookup.sqlite3")
        hashes: dict[str, str] = {}
        for name, registry in (("sqlite", embedded), ("redis", shared)):
            _, secret = await issue_token(registry, TOKEN_REQUEST)
            hashes[name] = secret_hash(secret)

        async def sqlite_lookup() -> bool:  # found
            return await embedded.token_by_hash(hashes["sqlite"]) is not None

        async def redis_lookup() -> bool:
            return await shared.token_by_hash(hashes["redis"]) is not None

        async def local_admit() -> bool:  # let through
            return limiter.take("token:bench", per_minute) is None

        async def redis_admit() -> bool:
            return await shared.take("token:bench", per_minute) is None

        steps: dict[str, Callable[[], Awaitable[bool]]] = {
            LOOKUP_SQLITE: sqlite_lookup,
            LOOKUP_REDIS: redis_lookup,
            ADMIT_LOCAL: local_admit,
            ADMIT_REDIS: redis_admit,
        }
        for n in range(count + 100):
            for name, step in steps.items():
                started = time.perf_counter()
                done = await step()
                if n >= 100:
                    times.setdefault(name, []).append(time.perf_counter() - started)
                assert done, name
        # The tests' Redis writes its append-only file through to disk on every write (`appendfsync
        # always`); `everysec` (Redis's default, docs/replicas' example) is what a count costs there.
        await redis_config(redis_url, "appendfsync", "everysec")
        for n in range(count + 100):
            started = time.perf_counter()
            assert await redis_admit()
            if n >= 100:
                times.setdefault(ADMIT_REDIS_EVERYSEC, []).append(time.perf_counter() - started)
    return times


async def redis_config(url: str, name: str, value: str) -> None:
    client = aioredis.Redis.from_url(url)  # pyright: ignore[reportUnknownMemberType]
    try:
        await client.config_set(name, value)  # pyright: ignore[reportUnknownMemberType]
    finally:
        await client.aclose()


async def command_stats(url: str) -> dict[str, int]:
    """Redis's calls per command so far (`INFO commandstats`)."""
    client = aioredis.Redis.from_url(url)  # pyright: ignore[reportUnknownMemberType]
    try:
        info: dict[str, Any] = await client.info("commandstats")  # pyright: ignore[reportUnknownMemberType]
    finally:
        await client.aclose()
    return {key.removeprefix("cmdstat_"): int(value["calls"]) for key, value in info.items()}


async def run(args: argparse.Namespace) -> None:
    os.environ[ADMIN_VARIABLE] = ADMIN  # the replicas inherit it; ${...} in their config reads it
    auth = {"adminKeys": [f"${{{ADMIN_VARIABLE}}}"]}
    admin = {"authorization": f"Bearer {ADMIN}"}
    measured: dict[tuple[str, str, int], Measured] = {}
    async with AsyncExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="toolscout-replicas-")))
        redis = await stack.enter_async_context(redis_server(scratch / "redis"))
        shared = {"backend": "redis", "url": redis.url, "keyPrefix": PREFIX}
        replicas: dict[str, ServedGateway] = {}
        for name, extra in (
            ("sqlite", {}),
            ("redis-a", {"registry": shared}),
            ("redis-b", {"registry": shared}),
        ):
            (scratch / name).mkdir()
            config = write_config(scratch / name, auth=auth, **extra)
            replicas[name] = await stack.enter_async_context(served_gateway(config, "--stateless"))
        a, b = replicas["redis-a"], replicas["redis-b"]
        front_one = await stack.enter_async_context(balancer(scratch / "nginx-1", [a.base_url]))
        front_two = await stack.enter_async_context(balancer(scratch / "nginx-2", [a.base_url, b.base_url]))
        kept = await stack.enter_async_context(balancer(scratch / "nginx-k", [a.base_url, b.base_url], keepalive=32))

        tokens: dict[str, str] = {}
        async with httpx2.AsyncClient(timeout=30) as http:
            for name, gateway in (("sqlite", replicas["sqlite"]), ("redis", a)):
                issued = await http.post(gateway.api_url + "/tokens", json=TOKEN_REQUEST, headers=admin)
                if issued.status_code != 201:
                    raise SystemExit(f"token on {name}: {issued.status_code} {issued.text}")
                tokens[name] = issued.json()["token"]

        def nginx_pids(directory: Path) -> list[int]:
            master = int((directory / "nginx.pid").read_text())
            return [master, *descendants(master)]

        def pids(*names: str, nginx: Iterable[Path] = (), with_redis: bool = True) -> dict[str, list[int]]:
            own = [int(replicas[n].process.process.pid) for n in names]
            assert redis.process is not None
            return {
                "replicas": own,
                "upstreams": [child for pid in own for child in descendants(pid)],
                "redis": [int(redis.process.pid)] if with_redis else [],
                "nginx": [pid for directory in nginx for pid in nginx_pids(directory)],
            }

        targets = [
            Target(SQLITE, replicas["sqlite"].mcp_url, pids("sqlite", with_redis=False)),
            Target(REDIS, a.mcp_url, pids("redis-a")),
            Target(NGINX_ONE, front_one + "/mcp", pids("redis-a", nginx=[scratch / "nginx-1"])),
            Target(NGINX_TWO, front_two + "/mcp", pids("redis-a", "redis-b", nginx=[scratch / "nginx-2"])),
            Target(KEEPALIVE_TWO, kept + "/mcp", pids("redis-a", "redis-b", nginx=[scratch / "nginx-k"])),
        ]
        token_of = {SQLITE: tokens["sqlite"]}
        limits = httpx2.Limits(max_connections=args.concurrency, max_keepalive_connections=args.concurrency)
        clients: dict[str, httpx2.AsyncClient] = {}
        for target in targets:
            headers = {
                "accept": "application/json, text/event-stream",
                "content-type": "application/json",
                "mcp-protocol-version": PROTOCOL,
                "authorization": f"Bearer {token_of.get(target.label, tokens['redis'])}",
            }
            clients[target.label] = await stack.enter_async_context(
                httpx2.AsyncClient(timeout=60, limits=limits, headers=headers)
            )

        for target in targets:  # warm-up: connections, each scope's search index, the upstream's first calls
            for call in CALLS:
                await load(clients[target.label], target.url, call, {}, args.warmup, args.concurrency, target.pids)
        healthz = replicas["sqlite"].base_url + "/healthz"
        await load(clients[SQLITE], healthz, None, {}, args.warmup, args.concurrency, targets[0].pids)

        rng = random.Random(24)
        redis_before = await command_stats(redis.url)
        started = time.perf_counter()
        for round_ in range(args.rounds):
            share = args.requests // args.rounds
            order = targets[:]
            rng.shuffle(order)
            for target in order:
                for call in CALLS:
                    for concurrency, count in ((1, args.sequential // args.rounds), (args.concurrency, share)):
                        batch = await load(clients[target.label], target.url, call, {}, count, concurrency, target.pids)
                        measured.setdefault((target.label, call, concurrency), Measured()).batches.append(batch)
            batch = await load(clients[SQLITE], healthz, None, {}, share, args.concurrency, targets[0].pids)
            measured.setdefault((HEALTHZ, "", args.concurrency), Measured()).batches.append(batch)
            print(f"round {round_ + 1}/{args.rounds} done ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
        took = time.perf_counter() - started
        redis_after = await command_stats(redis.url)
        lookup_times = await lookups(scratch, redis.url, args.lookups)

    report(args, measured, lookup_times, redis_before, redis_after, took)


def _row(label: str, call: str, seq: Measured, conc: Measured) -> str:
    lat = seq.latencies
    under = conc.latencies
    cells = [
        label,
        call,
        f"{_p(lat, 0.5) * 1000:.2f}",
        f"{_p(lat, 0.99) * 1000:.2f}",
        f"{conc.throughput:,.0f}",
        f"{_p(under, 0.5) * 1000:.1f}",
        f"{_p(under, 0.99) * 1000:.1f}",
        *(f"{conc.cpu_ms(role):.2f}" for role in ROLES),
        f"{conc.cores():.2f}",
        f"{conc.others():.2f}",
    ]
    return "| " + " | ".join(cells) + " |"


def report(
    args: argparse.Namespace,
    measured: dict[tuple[str, str, int], Measured],
    lookup_times: dict[str, list[float]],
    redis_before: dict[str, int],
    redis_after: dict[str, int],
    took: float,
) -> None:
    c = args.concurrency
    print(f"## Replicas sharing Redis — {harness.today()}\n")
    print(
        f"{harness.machine_line()}; per set-up and call: "
        f"{args.sequential} requests one at a time and {args.requests} at {c} at a time, in {args.rounds} "
        f"rounds (set-ups shuffled each round), after {args.warmup} warm-up requests each ({took:.0f} s).\n"
    )
    print(
        f"| set-up | call | 1 at a time p50 ms | p99 ms | {c} at a time: req/s | p50 ms | p99 ms "
        "| CPU ms/request: generator | replicas | upstreams | redis | nginx | cores busy | others |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ceiling = measured[(HEALTHZ, "", c)]
    under = ceiling.latencies
    cells = [
        HEALTHZ,
        "—",
        "—",
        "—",
        f"{ceiling.throughput:,.0f}",
        f"{_p(under, 0.5) * 1000:.1f}",
        f"{_p(under, 0.99) * 1000:.1f}",
        *(f"{ceiling.cpu_ms(role):.2f}" for role in ROLES),
        f"{ceiling.cores():.2f}",
        f"{ceiling.others():.2f}",
    ]
    print("| " + " | ".join(cells) + " |")
    for call in CALLS:
        for label in (SQLITE, REDIS, NGINX_ONE, NGINX_TWO, KEEPALIVE_TWO):
            print(_row(label, call, measured[(label, call, 1)], measured[(label, call, c)]))

    print("\nRedis against SQLite, round by round (each round's Redis figure minus, or over, its SQLite one):\n")
    print("| call | added p50, 1 at a time: median [quartiles] ms | added p50 at " + f"{c}: ms | req/s ratio |")
    print("|---|---|---|---|")
    for call in CALLS:
        cells = [call]
        for concurrency in (1, c):
            ours, base = measured[(REDIS, call, concurrency)], measured[(SQLITE, call, concurrency)]
            diffs = [
                (_p(x.latencies, 0.5) - _p(y.latencies, 0.5)) * 1000
                for x, y in zip(ours.batches, base.batches, strict=True)
            ]
            q1, q2, q3 = harness.quartiles(diffs)
            whole = (_p(ours.latencies, 0.5) - _p(base.latencies, 0.5)) * 1000
            cells.append(f"{whole:+.3f} (rounds: {q2:+.3f} [{q1:+.3f}, {q3:+.3f}])")
        ours, base = measured[(REDIS, call, c)], measured[(SQLITE, call, c)]
        ratios = [
            (len(x.latencies) / x.seconds) / (len(y.latencies) / y.seconds)
            for x, y in zip(ours.batches, base.batches, strict=True)
        ]
        q1, q2, q3 = harness.quartiles(ratios)
        cells.append(f"{ours.throughput / base.throughput:.3f} (rounds: {q2:.3f} [{q1:.3f}, {q3:.3f}])")
        print("| " + " | ".join(cells) + " |")

    commands = {name: redis_after.get(name, 0) - redis_before.get(name, 0) for name in redis_after}
    busy = {name: n for name, n in sorted(commands.items(), key=lambda item: -item[1]) if n}
    served = sum(len(m.latencies) for (label, _, _), m in measured.items() if label != SQLITE and label != HEALTHZ)
    print(
        f"\nRedis during the measured load ({took:.0f} s, {served:,} requests to the Redis set-ups): "
        + ", ".join(f"{name} {n:,}" for name, n in busy.items())
        + ".\n"
    )
    print(
        f"The registry's part of a request, in process ({args.lookups:,} each: the first four interleaved, "
        "the last after them):\n"
    )
    print("| step | p50 µs | p99 µs |")
    print("|---|---|---|")
    for name, values in lookup_times.items():
        print(f"| {name} | {_p(values, 0.5) * 1e6:.0f} | {_p(values, 0.99) * 1e6:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="measured requests per set-up and call, at once")
    parser.add_argument("--sequential", type=int, default=800, help="measured requests per set-up and call, 1 by 1")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=200, help="unmeasured requests per set-up and call first")
    parser.add_argument("--lookups", type=int, default=2000, help="token_by_hash calls per registry")
    args = parser.parse_args()
    anyio.run(run, args)
