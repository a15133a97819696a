"""Added latency of recording metrics per `search_tools` and `execute_tool` call over `/mcp`, against
the same calls with `telemetry.metrics.enabled: false`, in one run.

    python -m benchmarks metrics_overhead [--calls 600] [--batch 50] [--era legacy]

Two `toolscout serve --transport http` children front the same upstream (the demo server `units`, a
real stdio process each) with the same settings but for `telemetry.metrics.enabled`. One `mcp.Client`
each, both open at once and warmed up, then measured in batches, in a shuffled order each round, so
the machine's noise falls on both alike; the enabled gateway is scraped once a round, as Prometheus
would. Prints p50 and p99 per configuration and call, the added p50, and the same round by round
(each round's median minus the same round's median with metrics off).

An HTTP round trip takes milliseconds and its noise is larger than what recording adds, so the run
also times the recording itself, in process: `observed` (serve/telemetry.py) around a handler that
returns at once, with metrics on and off, 200,000 calls each.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchmarks import harness
from benchmarks.processes import SERVE_READY, running
from toolscout.serve.sessions import Context
from toolscout.serve.telemetry import observed
from toolscout.telemetry.metrics import Metrics

PYTHON = sys.executable
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "search_tools": ("search_tools", {"query": "convert miles to kilometers", "limit": 3}),
    "execute_tool": (
        "execute_tool",
        {"server": "units", "tool": "convert_units", "arguments": {"value": 26.2, "from_unit": "mi", "to_unit": "km"}},
    ),
}
SETUPS = ("metrics off", "metrics on")


def write_config(root: Path, name: str, *, enabled: bool) -> Path:
    config: dict[str, Any] = {
        "mcpServers": {"units": {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]}},
        "catalogCache": {"path": str(root / name / "catalog.sqlite3")},
        "audit": {"path": str(root / name / "audit.jsonl")},
        "registry": {"path": str(root / name / "registry.sqlite3")},
        "telemetry": {"metrics": {"enabled": enabled}},
    }
    path = root / name / "toolscout.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def summary(values: list[float]) -> tuple[float, float]:
    """p50 and p99, in ms."""
    return statistics.median(values) * 1000, harness.percentile(values, 0.99, rank="round") * 1000


async def recording_times(count: int) -> dict[str, list[float]]:
    """`observed` around a handler that returns at once, metrics on and off, in batches of 1,000 (µs per call)."""
    result = types.CallToolResult(content=[])
    params = types.CallToolRequestParams(name="execute_tool", arguments={})
    ctx = cast(Context, type("Ctx", (), {"request": None})())

    async def handler(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        return result

    wrapped = {
        "bare handler": handler,
        "metrics off": observed("tools/call", handler, Metrics(enabled=False)),
        "metrics on": observed("tools/call", handler, Metrics()),
    }
    times: dict[str, list[float]] = {}
    for _ in range(count // 1000):
        for name, run in wrapped.items():
            started = time.perf_counter()
            for _ in range(1000):
                await run(ctx, params)
            times.setdefault(name, []).append((time.perf_counter() - started) / 1000 * 1e6)
    return times


async def run(calls: int, batch: int, era: str) -> None:
    root = Path(tempfile.mkdtemp(prefix="metrics-bench-"))
    env = {**os.environ, "HOME": str(root)}
    command = [PYTHON, "-m", "toolscout", "serve", "--transport", "http", "--port", "0", "--log-level", "warning"]
    samples: dict[tuple[str, str], list[float]] = {}
    rounds: dict[tuple[str, str], list[float]] = {}
    async with AsyncExitStack() as stack:
        urls: dict[str, str] = {}
        for name in SETUPS:
            config = write_config(root, name.replace(" ", "-"), enabled=name == "metrics on")
            served = await stack.enter_async_context(running([*command, "-c", str(config)], ready=SERVE_READY, env=env))
            urls[name] = served.match.group(1)
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=30))
        clients = {
            name: await stack.enter_async_context(Client(streamable_http_client(url, http_client=http), mode=era))
            for name, url in urls.items()
        }
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
            scraped = await http.get(urls["metrics on"].removesuffix("/mcp") + "/metrics")
            assert scraped.status_code == 200, scraped.text
            done += batch
    recorded = await recording_times(200_000)

    print(f"# Metrics overhead — {harness.today()}\n")
    print(f"{os.cpu_count()} cores, Python {platform.python_version()}, era {era}, {calls} calls per row\n")
    print("| gateway | call | p50 ms | p99 ms | added p50 ms | added, round by round: median [quartiles] ms |")
    print("|---|---|---|---|---|---|")
    for call in CALLS:
        base = summary(samples[("metrics off", call)])[0]
        for name in SETUPS:
            p50, p99 = summary(samples[(name, call)])
            added = paired = "—"
            if name == "metrics on":
                added = f"{p50 - base:+.3f}"
                diffs = [a - b for a, b in zip(rounds[(name, call)], rounds[("metrics off", call)], strict=True)]
                q1, q2, q3 = harness.quartiles(diffs)
                paired = f"{q2:+.3f} [{q1:+.3f}, {q3:+.3f}]"
                harness.record(f"added_p50_ms.{call}", round(p50 - base, 3))
            print(f"| {name} | {call} | {p50:.3f} | {p99:.3f} | {added} | {paired} |")
    print("\nThe recording alone (`observed` around a handler that returns at once, in process):\n")
    print("| handler | µs per call, median of batches of 1,000 |")
    print("|---|---|")
    for name, values in recorded.items():
        print(f"| {name} | {statistics.median(values):.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=600, help="calls per configuration and tool")
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--era", default="legacy", help="the client's mode: legacy, auto, or 2026-07-28")
    args = parser.parse_args()
    anyio.run(run, args.calls, args.batch, args.era)
