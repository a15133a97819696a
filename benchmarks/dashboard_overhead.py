"""What serving the dashboard adds to `/mcp` tool calls: the same calls with the dashboard off, on,
and on while a browser-like client follows the Activity page's live tail, side by side in one run.

    python -m benchmarks dashboard_overhead [--calls 600] [--batch 50] [--poll 1.0]

Two gateways front the same upstream (the demo server `units`, a real stdio process each), each a
child process serving streamable HTTP with the same settings, one without the dashboard and one
with it (`python -m benchmarks.dashboard_overhead serve off|on CONFIG`, which serves as `toolscout
serve --transport http` does, its dashboard app given or not). One `mcp.Client` each calls
`execute_tool` (units.convert_units, audited), in batches, the three rows in a shuffled order each
round so the machine's noise falls on all alike. In the "tail followed" row, a poller asks the
dashboard's `/dashboard/activity/tail` every `--poll` seconds (the page asks every second) from its
last position, as activity.js does, while the batch runs.

Reported per row: median and p95 in ms, and the ratio of each to the dashboard-off row with a 95%
bootstrap interval (rounds resampled, 2,000 times, each with its batch of both rows: the load of
a shared machine drifts between rounds, and the batches of one round ran under the same load).
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
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx2
import numpy as np
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchmarks import harness
from benchmarks.processes import SERVE_READY, running

PYTHON = sys.executable
CALL = (
    "execute_tool",
    {"server": "units", "tool": "convert_units", "arguments": {"value": 26.2, "from_unit": "mi", "to_unit": "km"}},
)
ROWS = ("dashboard off", "dashboard on", "dashboard on, tail followed")


def write_config(root: Path, name: str) -> Path:
    config: dict[str, Any] = {
        "mcpServers": {"units": {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]}},
        "catalogCache": {"path": str(root / name / "catalog.sqlite3")},
        "audit": {"path": str(root / name / "audit.jsonl")},
        "registry": {"path": str(root / name / "registry.sqlite3")},
    }
    path = root / name / "toolscout.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


async def serve(with_dashboard: bool, config_path: Path) -> None:
    """Serve `config_path`'s gateway over streamable HTTP on a free loopback port, with or without the
    dashboard, until a stop signal; says where on stderr, as `toolscout serve` does."""
    from toolscout.config.loader import load_config
    from toolscout.gateway.core import Gateway
    from toolscout.modes.base import SurfaceOptions
    from toolscout.serve.auth import AnonymousPrincipals
    from toolscout.serve.dashboard.app import dashboard_app
    from toolscout.serve.dashboard.context import Dashboard
    from toolscout.serve.http import bind, serve_http

    config = load_config(config_path)
    gateway = Gateway.from_config(config)
    sock = bind("127.0.0.1", 0)
    dashboard = dashboard_app(Dashboard(gateway, AnonymousPrincipals())) if with_dashboard else None
    async with gateway:
        print(f"serving streamable HTTP at http://127.0.0.1:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
        options = SurfaceOptions.from_config(config)
        await serve_http(gateway, sock, host="127.0.0.1", mode=config.mode, options=options, dashboard=dashboard)


async def follow_tail(http: httpx2.AsyncClient, base: str, every: float, polls: list[int]) -> None:
    """Ask the Activity page's live tail every `every` seconds from the last position, as activity.js does."""
    position = "0-0"
    while True:
        answer = await http.get(f"{base}/dashboard/activity/tail", params={"after": position})
        assert answer.status_code == 200, answer.text
        position = str(answer.json()["position"])
        polls.append(len(answer.json()["rows"]))
        await anyio.sleep(every)


def ratio_interval(
    on: list[list[float]], off: list[list[float]], q: float, resamples: int = 2000
) -> tuple[float, float, float]:
    """The `q` percentile (50: the median) of the `on` calls over that of the `off` calls, and its 95%
    bootstrap interval. Rounds are resampled, each with its batch of both rows: the machine's load
    drifts from round to round, and a round's two batches ran under the same load."""
    batches_on = [np.asarray(times, dtype=np.float64) for times in on]
    batches_off = [np.asarray(times, dtype=np.float64) for times in off]

    def ratio_of(picks: Sequence[int]) -> float:
        a = np.concatenate([batches_on[k] for k in picks])
        b = np.concatenate([batches_off[k] for k in picks])
        return float(np.percentile(a, q) / np.percentile(b, q))

    ratio = ratio_of(range(len(on)))
    rng = np.random.default_rng(0)
    ratios: list[float] = []
    for _ in range(resamples):
        ratios.append(ratio_of([int(k) for k in rng.integers(0, len(on), size=len(on))]))
    low, high = np.percentile(ratios, [2.5, 97.5])
    return ratio, float(low), float(high)


async def run(calls: int, batch: int, poll: float) -> None:
    load = os.getloadavg()  # the machine may be shared: the report says how busy it was
    root = Path(tempfile.mkdtemp(prefix="dashboard-overhead-"))
    env = {**os.environ, "HOME": str(root)}
    samples: dict[str, list[list[float]]] = {row: [] for row in ROWS}
    """Each row's call times, a batch per round."""
    polls: list[int] = []
    tool, arguments = CALL
    async with AsyncExitStack() as stack:
        urls: dict[str, str] = {}
        for setting in ("off", "on"):
            config = write_config(root, setting)
            command = [PYTHON, "-m", "benchmarks.dashboard_overhead", "serve", setting, str(config)]
            served = await stack.enter_async_context(running(command, ready=SERVE_READY, env=env))
            urls[setting] = served.match.group(1)
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=30))
        poller_http = await stack.enter_async_context(httpx2.AsyncClient(timeout=30))
        clients = {
            setting: await stack.enter_async_context(Client(streamable_http_client(url, http_client=http)))
            for setting, url in urls.items()
        }
        for client in clients.values():  # warm-up
            for _ in range(20):
                assert not (await client.call_tool(tool, arguments)).is_error
        base_on = urls["on"].removesuffix("/mcp")
        done = 0
        while done < calls:
            order = list(ROWS)
            random.shuffle(order)
            for row in order:
                client = clients["off" if row == "dashboard off" else "on"]
                times: list[float] = []
                samples[row].append(times)
                async with anyio.create_task_group() as tg:
                    if row.endswith("followed"):
                        tg.start_soon(follow_tail, poller_http, base_on, poll, polls)
                    for _ in range(batch):
                        started = time.perf_counter()
                        result = await client.call_tool(tool, arguments)
                        times.append(time.perf_counter() - started)
                        assert not result.is_error, result.content
                    tg.cancel_scope.cancel()
            done += batch

    off = samples["dashboard off"]
    print(f"# Dashboard overhead on /mcp — {harness.today()}\n")
    print(f"{os.cpu_count()} cores, Python {platform.python_version()}, {calls} `execute_tool` calls per row")
    after = os.getloadavg()
    shown = ", ".join(f"{a:.1f}/{b:.1f}" for a, b in zip(load, after, strict=True))
    print(f"load average (1, 5, 15 min) at start/end: {shown}; tail polls: {len(polls)}, every {poll:g} s\n")
    print("| row | median ms | p95 ms | median / off [95% CI] | p95 / off [95% CI] |")
    print("|---|---|---|---|---|")
    for row in ROWS:
        values = [t for times in samples[row] for t in times]
        median = statistics.median(values) * 1000
        p95 = harness.percentile(values, 0.95, rank="round") * 1000
        if row == "dashboard off":
            print(f"| {row} | {median:.3f} | {p95:.3f} | — | — |")
            continue
        m, m_low, m_high = ratio_interval(samples[row], off, 50)
        p, p_low, p_high = ratio_interval(samples[row], off, 95)
        harness.record(f"median_ratio.{row}", round(m, 3))
        ratios = f"{m:.3f} [{m_low:.3f}, {m_high:.3f}] | {p:.3f} [{p_low:.3f}, {p_high:.3f}]"
        print(f"| {row} | {median:.3f} | {p95:.3f} | {ratios} |")


def main() -> None:
    if sys.argv[1:2] == ["serve"]:  # a gateway child of this benchmark
        anyio.run(serve, sys.argv[2] == "on", Path(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=600, help="calls per row")
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--poll", type=float, default=1.0, help="seconds between the tail's polls")
    args = parser.parse_args()
    anyio.run(run, args.calls, args.batch, args.poll)


if __name__ == "__main__":
    main()
