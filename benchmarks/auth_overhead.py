"""Added latency of authentication (and the scope it brings) per `search_tools` and `execute_tool` call,
against the same calls without authentication, in one run.

    python -m benchmarks auth_overhead [--calls 600] [--batch 50] [--era legacy]

Two `toolscout serve --transport http` children front the same upstream (the demo server `units`,
a real stdio process each) with the same settings: one with no keys (loopback, anonymous), one with
an admin key, a client key (a scope: namespace, servers, a tool rule) and a token issued through its
API. One `mcp.Client` per configuration (no credential; the admin key; the client key; the issued
token), all open at once and warmed up, then measured round-robin in batches, in a shuffled order
each round, so the machine's noise falls on all of them alike. Each configuration calls
`search_tools` and `execute_tool` (convert_units) in turn.

Prints Markdown: p50 and p99 per configuration and call, the added p50 against no authentication
(the goal: at most 0.2 ms), and the same round by round (each round's median minus the same round's
no-authentication median: the machine's drift between rounds falls out). Over HTTP a call takes
milliseconds and its noise is larger than what authentication adds, so the run also times the
resolver itself, in process (`BearerPrincipals.resolve` on a Starlette request, per credential
kind): that is the part authentication adds to every request, whatever the transport does; and
the scope's part, in process too: the same `search_tools` and `execute_tool` calls on one gateway
(the demo server `units` in process, the discovery surface) under a token's scope and unscoped,
interleaved call by call, so authentication + scope filtering = the resolver + the scoped call's
difference.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.requests import Request

from benchmarks import harness
from benchmarks.processes import running
from toolscout.config.http import AuthConfig
from toolscout.registry.requests import issue_token
from toolscout.registry.sqlite import SqliteRegistry
from toolscout.serve.auth import BearerPrincipals

PYTHON = sys.executable
SERVE_READY = r"serving streamable HTTP at (http://\S+/mcp)"
ADMIN = "bench-admin-key-0123456789"
CLIENT = "bench-client-key-0123456789"
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "search_tools": ("search_tools", {"query": "convert miles to kilometers", "limit": 3}),
    "execute_tool": (
        "execute_tool",
        {"server": "units", "tool": "convert_units", "arguments": {"value": 26.2, "from_unit": "mi", "to_unit": "km"}},
    ),
}


def write_config(root: Path, name: str, *, keyed: bool) -> Path:
    config: dict[str, Any] = {
        "mcpServers": {"units": {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]}},
        "catalogCache": {"path": str(root / name / "catalog.sqlite3")},
        "audit": {"path": str(root / name / "audit.jsonl")},
    }
    if keyed:
        config["auth"] = {
            "adminKeys": [ADMIN],
            "keys": [
                {"key": CLIENT, "label": "bench", "namespace": "bench", "servers": ["units"], "tools": ["!*delete*"]}
            ],
        }
    path = root / name / "toolscout.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def summary(values: list[float]) -> tuple[float, float]:
    """p50 and p99, in ms."""
    return statistics.median(values) * 1000, harness.percentile(values, 0.99, rank="round") * 1000


async def resolver_times(root: Path, count: int) -> dict[str, list[float]]:
    """`BearerPrincipals.resolve` per credential kind, in process (the token's record cached, as in a run)."""
    registry = SqliteRegistry(root / "resolver.sqlite3")
    auth = AuthConfig.model_validate(
        {
            "adminKeys": [ADMIN],
            "keys": [{"key": CLIENT, "label": "bench", "namespace": "bench", "servers": ["units"], "tools": ["!x"]}],
        }
    )
    _, token = await issue_token(
        registry, {"namespace": "bench", "servers": ["units"], "ttlSeconds": 3600, "label": "t"}
    )
    principals = BearerPrincipals(auth, registry)
    times: dict[str, list[float]] = {}
    for kind, credential in (("admin key", ADMIN), ("client key", CLIENT), ("issued token", token)):
        headers = [(b"authorization", f"Bearer {credential}".encode())]
        scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers, "client": ("127.0.0.1", 1)}
        samples: list[float] = []
        for _ in range(count):
            started = time.perf_counter()
            await principals.resolve(Request(scope))
            samples.append(time.perf_counter() - started)
        times[kind] = samples
    return times


class _Client:
    """The discovery surface's view of a client (nothing loaded, handshake era)."""

    def __init__(self) -> None:
        self.loaded: dict[tuple[str, str], None] = {}
        self.modern = False

    def mark_tools_changed(self) -> None:
        pass


async def scope_times(count: int) -> dict[tuple[str, str], list[float]]:
    """Each call through the discovery surface, unscoped and under a token's scope, interleaved."""
    from toolscout.config.scopes import UNSCOPED, Scope, scoped
    from toolscout.demo.units import build_server
    from toolscout.gateway.core import Gateway
    from toolscout.modes.base import make_surface
    from toolscout.upstream import InProcessUpstream, UpstreamSpec

    scopes = {
        "unscoped": UNSCOPED,
        "scoped": Scope.of(namespace="bench", servers=["units"], tools=["!*delete*"], label="bench"),
    }
    times: dict[tuple[str, str], list[float]] = {}
    logging.getLogger("toolscout").setLevel(logging.WARNING)  # one INFO line per execution otherwise
    async with Gateway([UpstreamSpec("units", InProcessUpstream(build_server()))]) as gateway:
        with anyio.fail_after(60):
            await gateway.settle()
        surface, client = make_surface("discovery", gateway), _Client()
        for round_ in range(count + 50):  # the first 50 warm up (the scope's own index is built on its first search)
            for name, scope in scopes.items():
                for call, (tool, arguments) in CALLS.items():
                    with scoped(scope):
                        started = time.perf_counter()
                        result = await surface.call(client, tool, dict(arguments))
                        elapsed = time.perf_counter() - started
                    assert result is not None and not result.is_error, result
                    if round_ >= 50:
                        times.setdefault((name, call), []).append(elapsed)
    return times


async def run(calls: int, batch: int, era: str) -> None:
    root = Path(tempfile.mkdtemp(prefix="auth-bench-"))
    env = {**os.environ, "HOME": str(root)}
    command = [PYTHON, "-m", "toolscout", "serve", "--transport", "http", "--port", "0", "--log-level", "warning"]
    samples: dict[tuple[str, str], list[float]] = {}
    rounds: dict[tuple[str, str], list[float]] = {}
    """Each round's median per configuration and call (ms): paired with the same round's baseline."""
    async with AsyncExitStack() as stack:
        plain = await stack.enter_async_context(
            running([*command, "-c", str(write_config(root, "plain", keyed=False))], ready=SERVE_READY, env=env)
        )
        keyed = await stack.enter_async_context(
            running([*command, "-c", str(write_config(root, "keyed", keyed=True))], ready=SERVE_READY, env=env)
        )
        plain_url, keyed_url = plain.match.group(1), keyed.match.group(1)
        async with httpx2.AsyncClient(timeout=30) as http:
            issued = await http.post(
                keyed_url.removesuffix("/mcp") + "/api/v1/tokens",
                json={"namespace": "bench", "servers": ["units"], "ttlSeconds": 3600, "label": "bench-token"},
                headers={"authorization": f"Bearer {ADMIN}"},
            )
            token = issued.json()["token"]
        setups: dict[str, tuple[str, dict[str, str]]] = {
            "no authentication": (plain_url, {}),
            "admin key": (keyed_url, {"authorization": f"Bearer {ADMIN}"}),
            "client key (scoped)": (keyed_url, {"authorization": f"Bearer {CLIENT}"}),
            "issued token (scoped)": (keyed_url, {"authorization": f"Bearer {token}"}),
        }
        clients: dict[str, Client] = {}
        for name, (url, headers) in setups.items():
            http_client = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=30))
            clients[name] = await stack.enter_async_context(
                Client(streamable_http_client(url, http_client=http_client), mode=era)
            )
        for client in clients.values():  # warm-up
            for tool, arguments in CALLS.values():
                for _ in range(20):
                    assert not (await client.call_tool(tool, arguments)).is_error
        done = 0
        while done < calls:
            order = list(clients)
            random.shuffle(order)
            for name in order:
                for call, (tool, arguments) in CALLS.items():
                    batch_times: list[float] = []
                    for _ in range(batch):
                        started = time.perf_counter()
                        result = await clients[name].call_tool(tool, arguments)
                        batch_times.append(time.perf_counter() - started)
                        assert not result.is_error, result.content
                    samples.setdefault((name, call), []).extend(batch_times)
                    rounds.setdefault((name, call), []).append(statistics.median(batch_times) * 1000)
            done += batch
    resolved = await resolver_times(root, 20_000)
    filtered = await scope_times(2_000)

    print(f"# Authentication overhead — {harness.today()}\n")
    print(f"{os.cpu_count()} cores, Python {platform.python_version()}, era {era}, {calls} calls per row\n")
    print("| credential | call | p50 ms | p99 ms | added p50 ms | added, round by round: median [quartiles] ms |")
    print("|---|---|---|---|---|---|")
    for call in CALLS:
        base = summary(samples[("no authentication", call)])[0]
        for name in setups:
            p50, p99 = summary(samples[(name, call)])
            if name == "no authentication":
                added = paired = "—"
            else:
                added = f"{p50 - base:+.3f}"
                diffs = [a - b for a, b in zip(rounds[(name, call)], rounds[("no authentication", call)], strict=True)]
                q1, q2, q3 = harness.quartiles(diffs)
                paired = f"{q2:+.3f} [{q1:+.3f}, {q3:+.3f}]"
            print(f"| {name} | {call} | {p50:.3f} | {p99:.3f} | {added} | {paired} |")
    print("\nThe resolver alone (`BearerPrincipals.resolve`, in process, 20,000 requests each):\n")
    print("| credential | p50 µs | p99 µs |")
    print("|---|---|---|")
    for kind, values in resolved.items():
        p50, p99 = summary(values)
        print(f"| {kind} | {p50 * 1000:.1f} | {p99 * 1000:.1f} |")
    print("\nThe scope's filtering, in process (the discovery surface, 2,000 calls each, interleaved):\n")
    print("| call | unscoped p50 µs | p99 µs | scoped p50 µs | p99 µs | added p50 µs |")
    print("|---|---|---|---|---|---|")
    for call in CALLS:
        base, base99 = summary(filtered[("unscoped", call)])
        p50, p99 = summary(filtered[("scoped", call)])
        added = (p50 - base) * 1000
        cells = (
            f"{base * 1000:.0f}",
            f"{base99 * 1000:.0f}",
            f"{p50 * 1000:.0f}",
            f"{p99 * 1000:.0f}",
            f"{added:+.0f}",
        )
        print(f"| {call} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=600, help="calls per configuration and tool")
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--era", default="legacy", help="the client's mode: legacy, auto, or 2026-07-28")
    args = parser.parse_args()
    anyio.run(run, args.calls, args.batch, args.era)
