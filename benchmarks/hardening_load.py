"""Other clients' latency while one client attacks `serve --transport http`: floods, big queries, bombs, forgeries.

    python -m benchmarks hardening_load [--flood 5000] [--query-mb 4] [--fill-clients 40]
        [--bomb-calls 20] [--forged 3300] [--registrations 1000] [--slow-sockets 900]

A real `toolscout serve --transport http` in front of the four demo servers and a hostile one whose
tool's input schema is a bomb (tests/servers/schema_bomb.py), all over stdio (state, registry, cache
and audit log in a temporary directory, authentication on: an admin key), serves `--victims`
ordinary clients (the SDK's `mcp.Client`, 2025-11-25 era, each from its own loopback address, each
with a token issued through the API), which call `list_mcp_servers` and `search_tools` in turn,
20 ms apart, for the whole run. Meanwhile, from 127.0.0.1:

* baseline: nothing;
* session flood: `--flood` raw `initialize` requests, `--concurrency` at a time;
* oversized query: `search_tools` with a `--query-mb` MB query (words), `--queries` times in a row;
* schema bomb, forged tokens, registration flood, slow headers: benchmarks/hardening_attacks.py;
* fill, then shutdown: `--fill-clients` addresses open 40 sessions each (more than the gateway keeps),
  then SIGTERM, timed to the process's exit.

Each attack runs in a process of its own, apart from the victims. For each phase: the victims'
call latency (p50 / p99 / max, ms; the target is p99 < 100 ms), what the attacker got back (HTTP
statuses, sessions still open, the answer to the big query), the gateway's CPU use during the
flood, and its resident memory (VmRSS, MiB: at the phase's start, its highest, sampled every
0.1 s, and at its end; the target is within 50 MiB). Counting the flood's open sessions pings each
of them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchmarks import hardening_attacks, harness
from benchmarks.hardening_attacks import ACCEPT, initialize
from benchmarks.processes import SERVE_READY, cpu_seconds, running
from benchmarks.upstreams import PYTHON, rss_kib
from toolscout.demo.config import demo_config

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
PING = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
VICTIM_PAUSE = 0.02
ADMIN_KEY = "bench-admin-" + "k" * 24
RSS_EVERY = 0.1
WORDS = ["convert", "read", "write", "search", "list", "file", "note", "text", "unit", "weather"]


@dataclass
class Samples:
    """Victim call latencies (seconds), each with the phase it fell in."""

    phase: str = "baseline"
    latencies: dict[str, list[float]] = field(default_factory=dict[str, list[float]])
    errors: Counter[str] = field(default_factory=Counter[str])

    def add(self, seconds: float) -> None:
        self.latencies.setdefault(self.phase, []).append(seconds)


def _from(address: str, token: str | None = None) -> httpx2.AsyncClient:
    headers = {"authorization": f"Bearer {token or ADMIN_KEY}"}
    return httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(local_address=address), timeout=120, headers=headers)


async def victim(url: str, address: str, token: str, samples: Samples, stop: anyio.Event) -> None:
    """One ordinary client with an issued token: list_mcp_servers and search_tools in turn until `stop`."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("list_mcp_servers", {}),
        ("search_tools", {"query": "convert miles to kilometers", "limit": 3}),
    ]
    async with (
        _from(address, token) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        turn = 0
        while not stop.is_set():
            name, arguments = calls[turn % 2]
            turn += 1
            phase = samples.phase
            started = time.perf_counter()
            try:
                result = await client.call_tool(name, arguments)
            except Exception as exc:  # counted, not fatal: the point is to see what an attack does to others
                samples.errors[f"{phase}: {type(exc).__name__}"] += 1
                continue
            if samples.phase == phase:  # a call that straddles two phases is left out of both
                samples.add(time.perf_counter() - started)
            if result.is_error:
                samples.errors[f"{phase}: isError"] += 1
            await anyio.sleep(VICTIM_PAUSE)


async def flood(url: str, count: int, concurrency: int) -> tuple[Counter[int], list[str]]:
    """`count` initialize requests from 127.0.0.1: the statuses, and the sessions opened."""
    statuses: Counter[int] = Counter()
    opened: list[str] = []
    body = json.dumps(initialize("flood"))
    limiter = anyio.Semaphore(concurrency)
    async with _from("127.0.0.1") as http, anyio.create_task_group() as tg:

        async def one() -> None:
            async with limiter:
                try:
                    answer = await http.post(url, content=body, headers=ACCEPT)
                except httpx2.HTTPError:
                    statuses[0] += 1
                    return
                statuses[answer.status_code] += 1
                if "mcp-session-id" in answer.headers:
                    opened.append(answer.headers["mcp-session-id"])

        for _ in range(count):
            tg.start_soon(one)
    return statuses, opened


async def still_open(url: str, sessions: list[str]) -> int:
    """How many of `sessions` the gateway still has (a ping answers 200, a closed one 404)."""
    alive = 0
    async with httpx2.AsyncClient(timeout=60, headers={"authorization": f"Bearer {ADMIN_KEY}"}) as http:
        for session_id in sessions:
            answer = await http.post(url, json=PING, headers={**ACCEPT, "mcp-session-id": session_id})
            alive += answer.status_code == 200
    return alive


async def oversized_queries(url: str, megabytes: float, times: int) -> list[str]:
    """`search_tools` with a query of `megabytes` MB, `times` times on one session: what came back."""
    words: list[str] = []
    size = 0
    while size < megabytes * 1_000_000:
        word = WORDS[len(words) % len(WORDS)]
        words.append(word)
        size += len(word) + 1
    query = " ".join(words)
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "search_tools", "arguments": {"query": query}},
    }
    body = json.dumps(call)
    outcomes: list[str] = []
    async with _from("127.0.0.1") as http:
        opened = await http.post(url, json=initialize("big-query"), headers=ACCEPT)
        session = {"mcp-session-id": opened.headers["mcp-session-id"]}
        await http.post(url, json=INITIALIZED, headers={**ACCEPT, **session})
        for _ in range(times):
            started = time.perf_counter()
            answer = await http.post(url, content=body, headers={**ACCEPT, **session})
            took = time.perf_counter() - started
            text = answer.text
            summary = "isError" if '"isError":true' in text else "result"
            if '"error"' in text and '"jsonrpc"' in text and '"result"' not in text:
                summary = "JSON-RPC error"
            excerpt = text[text.find("{") :][:160].replace("\n", " ")
            outcomes.append(f"HTTP {answer.status_code}, {summary}, {len(text):,} bytes in {took:.1f} s: {excerpt}")
    return outcomes


async def fill(url: str, clients: int, each: int) -> Counter[int]:
    """`each` sessions from each of `clients` loopback addresses (127.0.1.x), a few at a time per address."""
    statuses: Counter[int] = Counter()
    body = json.dumps(initialize("fill"))

    async def from_one(address: str) -> None:
        async with _from(address) as http:
            for _ in range(each):
                answer = await http.post(url, content=body, headers=ACCEPT)
                statuses[answer.status_code] += 1

    async with anyio.create_task_group() as tg:
        for index in range(clients):
            tg.start_soon(from_one, f"127.0.1.{index + 1}")
    return statuses


async def attack(url: str, kind: str, args: argparse.Namespace) -> dict[str, Any]:
    """Run one attack in a process of its own (in this one, its requests would share the victims'
    event loop and delay their calls by themselves); its result, as it printed it."""
    command = [PYTHON, "-m", "benchmarks", "hardening_load", "--attack", kind, "--url", url]
    for option in (
        "flood",
        "concurrency",
        "query_mb",
        "queries",
        "fill_clients",
        "bomb_calls",
        "forged",
        "registrations",
        "slow_sockets",
        "slow_hold",
    ):
        command += [f"--{option.replace('_', '-')}", str(getattr(args, option))]
    done = await anyio.run_process(command)
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


async def run_attack(args: argparse.Namespace) -> None:
    """The `--attack` side: one attack on `--url`, its result as one JSON line on stdout."""
    if args.attack == "flood":
        statuses, opened = await flood(args.url, args.flood, args.concurrency)
        print(json.dumps({"statuses": statuses, "opened": opened}))
    elif args.attack == "query":
        print(json.dumps({"outcomes": await oversized_queries(args.url, args.query_mb, args.queries)}))
    elif args.attack == "bomb":
        print(json.dumps(await hardening_attacks.schema_bomb(args.url, ADMIN_KEY, args.bomb_calls)))
    elif args.attack == "forged":
        print(json.dumps(await hardening_attacks.forged_tokens(args.url, args.forged, args.concurrency)))
    elif args.attack == "registrations":
        api = args.url.removesuffix("/mcp") + "/api/v1"
        flooded = await hardening_attacks.registration_flood(api, ADMIN_KEY, args.registrations, 10)
        print(json.dumps(flooded))
    elif args.attack == "slow":
        address = httpx2.URL(args.url)
        held = await hardening_attacks.slow_headers(address.host, address.port or 80, args.slow_sockets, args.slow_hold)
        print(json.dumps(held))
    else:
        print(json.dumps({"statuses": await fill(args.url, args.fill_clients, 40)}))


async def _all_connected(client: Client) -> bool:
    listed: dict[str, Any] = (await client.call_tool("list_mcp_servers", {})).structured_content or {}
    servers: list[dict[str, Any]] = listed.get("servers", [])
    return bool(servers) and all(server["status"] == "connected" for server in servers)


def _percentiles(values: list[float]) -> str:
    if len(values) < 2:
        return f"{len(values)} calls"
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return (
        f"{len(values)} calls, p50 {cuts[49] * 1000:.1f} ms, p99 {cuts[98] * 1000:.1f} ms, "
        f"max {max(values) * 1000:.1f} ms"
    )


@asynccontextmanager
async def gateway(state: str, http: dict[str, Any]) -> AsyncGenerator[tuple[anyio.abc.Process, str]]:
    """`serve --transport http` in front of the demo servers (`toolscout serve --demo`'s config) and the
    schema bomb, with `http`, an admin key and its registry in `state`."""
    config = demo_config().model_dump(mode="json", by_alias=True, exclude_defaults=True)
    servers = {**config["mcpServers"], "bomb": {"command": PYTHON, "args": ["-m", "tests.servers.schema_bomb"]}}
    path = Path(state) / "toolscout.json"
    extra = {"auth": {"adminKeys": [ADMIN_KEY]}, "registry": {"path": str(Path(state) / "registry.sqlite3")}}
    path.write_text(json.dumps({**config, "mcpServers": servers, "http": http, **extra}))
    env = {**os.environ, "XDG_STATE_HOME": state, "XDG_RUNTIME_DIR": state, "TOOLSCOUT_CACHE_DIR": state}
    command = [PYTHON, "-m", "toolscout", "serve", "--config", str(path), "--transport", "http", "--port", "0"]
    async with running([*command, "--log-level", "warning"], ready=SERVE_READY, env=env) as served:
        yield served.process, served.match.group(1)


async def issue_tokens(url: str, count: int) -> list[str]:
    """`count` tokens for every server, issued through the API with the admin key."""
    api = url.removesuffix("/mcp") + "/api/v1/tokens"
    body = {"namespace": "bench", "servers": ["*"], "ttlSeconds": 3600, "label": "victim"}
    async with httpx2.AsyncClient(timeout=60, headers={"authorization": f"Bearer {ADMIN_KEY}"}) as http:
        return [(await http.post(api, json=body)).json()["token"] for _ in range(count)]


def _mib(pid: int) -> str:
    memory = rss_kib(pid)
    return f"RSS {memory['VmRSS'] / 1024:.0f} MiB (peak {memory['VmHWM'] / 1024:.0f})"


async def sample_rss(pid: int, samples: Samples, rss: dict[str, list[float]], stop: anyio.Event) -> None:
    """The gateway's VmRSS (MiB) every `RSS_EVERY` seconds, filed under the phase it fell in."""
    while not stop.is_set():
        rss.setdefault(samples.phase, []).append(rss_kib(pid)["VmRSS"] / 1024)
        await anyio.sleep(RSS_EVERY)


def _rss_line(values: list[float]) -> str:
    if not values:
        return "no RSS sample"
    return (
        f"RSS {values[0]:.0f} -> {values[-1]:.0f} MiB (highest {max(values):.0f}; "
        f"{max(values) - values[0]:+.0f} MiB at most)"
    )


PHASES = (
    "baseline",
    "session flood",
    "after flood",
    "oversized query",
    "schema bomb",
    "forged tokens",
    "registration flood",
    "slow headers",
    "fill",
)


def _statuses(answer: dict[str, Any]) -> str:
    counted = Counter({int(k): v for k, v in answer["statuses"].items()})
    return ", ".join(f"HTTP {status or 'connection error'} x{n}" for status, n in sorted(counted.items()))


async def measure(args: argparse.Namespace) -> None:
    samples = Samples()
    stop = anyio.Event()
    report: list[str] = []
    rss: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="ts-load-") as state:
        http: dict[str, Any] = {} if args.opening_rate is None else {"sessionOpeningRate": args.opening_rate}
        async with gateway(state, http) as (process, url):
            async with anyio.create_task_group() as tg:
                # Warm: every upstream connected and the search index built before anything is timed.
                async with (
                    _from("127.0.0.1") as warm_http,
                    Client(streamable_http_client(url, http_client=warm_http), mode="legacy") as warm,
                ):
                    # The first catalog question waits for every server's first attempt to connect.
                    if not await _all_connected(warm):
                        raise SystemExit("a demo server did not connect; see the gateway's log")
                    await warm.call_tool("search_tools", {"query": "warm up"})
                tokens = await issue_tokens(url, args.victims)
                tg.start_soon(sample_rss, process.pid, samples, rss, stop)
                for index in range(args.victims):
                    tg.start_soon(victim, url, f"127.0.0.{index + 2}", tokens[index], samples, stop)
                await anyio.sleep(args.baseline)
                report.append(f"baseline ({args.baseline:.0f} s): {_mib(process.pid)}")

                samples.phase = "session flood"
                started, cpu = time.perf_counter(), cpu_seconds(process.pid)
                flooded = await attack(url, "flood", args)
                opened: list[str] = flooded["opened"]
                took, cpu = time.perf_counter() - started, cpu_seconds(process.pid) - cpu
                samples.phase = "after flood"
                kept = await still_open(url, opened)
                report.append(
                    f"session flood: {args.flood} initialize in {took:.1f} s ({args.concurrency} at a time); "
                    f"attacker got {_statuses(flooded)}; {kept} of its {len(opened)} sessions still open "
                    f"afterwards; gateway CPU {cpu / took:.0%} of a core during the flood (the victims' calls "
                    f"included); {_mib(process.pid)}"
                )

                samples.phase = "oversized query"
                outcomes: list[str] = (await attack(url, "query", args))["outcomes"]
                report.extend(f"oversized query ({args.query_mb:g} MB): {outcome}" for outcome in outcomes)

                async def during(phase: str, kind: str) -> tuple[dict[str, Any], float]:
                    """The attack `kind` as phase `phase`: what the attacker got, and how long it took."""
                    samples.phase = phase
                    started = time.perf_counter()
                    return await attack(url, kind, args), time.perf_counter() - started

                bombed, took = await during("schema bomb", "bomb")
                report.append(
                    f"schema bomb: {args.bomb_calls} calls in {took:.1f} s, each answered {bombed['outcomes']}"
                )
                forged, took = await during("forged tokens", "forged")
                report.append(
                    f"forged tokens: {args.forged} requests in {took:.1f} s ({args.concurrency} at a time); "
                    f"attacker got {_statuses(forged)}"
                )
                registered, took = await during("registration flood", "registrations")
                report.append(
                    f"registration flood: {args.registrations} callback tools in {took:.1f} s; attacker got "
                    f"{_statuses(registered)}; first refusal: {registered['refusal']}"
                )
                held, _ = await during("slow headers", "slow")
                report.append(
                    f"slow headers: {held['opened']} connections with half a header held {args.slow_hold:g} s "
                    f"({held['refused']} could not connect); the gateway closed {held['closed_by_gateway']}"
                )

                samples.phase = "fill"
                filled = await attack(url, "fill", args)
                samples.phase = "done"
                report.append(f"fill: {args.fill_clients} addresses x 40 initialize: {_statuses(filled)}")
                stop.set()  # the victims end after their current call
            started = time.perf_counter()
            process.terminate()
            with anyio.fail_after(120):
                code = await process.wait()
            report.append(
                f"shutdown after the fill: SIGTERM to exit {time.perf_counter() - started:.2f} s (exit {code})"
            )

    print(
        f"# hardening load, {harness.today()}, {platform.node()}, {os.cpu_count()} cores, {args.victims} victims, "
        f"load average {os.getloadavg()[0]:.1f}, http settings {http or 'default'}"
    )
    for line in report:
        print(line)
    print("victims' latency and the gateway's memory per phase (targets: p99 < 100 ms, RSS within 50 MiB):")
    for phase in PHASES:
        print(f"  {phase}: {_percentiles(samples.latencies.get(phase, []))}; {_rss_line(rss.get(phase, []))}")
    if samples.errors:
        print("victims' errors:", dict(samples.errors))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--victims", type=int, default=4)
    parser.add_argument("--baseline", type=float, default=5.0, help="seconds of victims alone")
    parser.add_argument("--flood", type=int, default=5000, help="initialize requests in the flood")
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--query-mb", type=float, default=4.0)
    parser.add_argument("--queries", type=int, default=2)
    parser.add_argument("--fill-clients", type=int, default=40)
    parser.add_argument(
        "--opening-rate", type=float, default=None, help="http.sessionOpeningRate (unset: the default; 1e6: no limit)"
    )
    parser.add_argument("--bomb-calls", type=int, default=20, help="calls of the schema bomb's tool")
    parser.add_argument("--forged", type=int, default=3300, help="requests with forged tokens")
    parser.add_argument("--registrations", type=int, default=1000, help="callback tools registered")
    parser.add_argument("--slow-sockets", type=int, default=900, help="connections sending half a header")
    parser.add_argument("--slow-hold", type=float, default=15.0, help="seconds the slow connections are held")
    parser.add_argument(
        "--attack",
        choices=["flood", "query", "bomb", "forged", "registrations", "slow", "fill"],
        help=argparse.SUPPRESS,
    )
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    anyio.run(run_attack if args.attack else measure, args)
