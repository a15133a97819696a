"""Search within a token's scope against search over the whole catalog, in one run.

    python -m benchmarks scoped_search [--tools 10000] [--scope-servers 20] [--rounds 5]

A gateway over LiveMCPBench's catalog servers, copied under new names (`<server> #<k>`) until the
catalog holds `--tools` tools, each a real in-process MCP server (`toolscout.demo.catalog_server`),
with the shipped search backend (hybrid, static model). The dev queries of `../shared/eval` are
searched (`Gateway.search`, limit 10) `--rounds` times each: unscoped (the whole catalog), and under
a scope of `--scope-servers` servers (`scoped(...)`, as the MCP face serves a token's request), which
searches an index of its own tools. Reported: p50/p99 of each, the first scoped search (which builds
the scope's index) and the build of the whole catalog's index, and the speed-up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import time
from pathlib import Path

import anyio
import mcp_types as types

from benchmarks import harness
from benchmarks.upstreams import copies
from toolscout.config.scopes import Scope, scoped
from toolscout.demo.catalog_server import build_server
from toolscout.gateway.core import Gateway
from toolscout.search import make_backend
from toolscout.search.evaluation import load_catalog_servers
from toolscout.upstream import InProcessUpstream, UpstreamSpec

EVAL_DIR = Path(os.environ.get("TOOLSCOUT_EVAL_DIR") or Path(__file__).resolve().parents[2] / "shared" / "eval")


def catalog(size: int) -> dict[str, list[types.Tool]]:
    """LiveMCPBench's servers, copied until they hold at least `size` tools."""
    servers = load_catalog_servers(EVAL_DIR / "catalog_livemcpbench.jsonl")
    per_server = sum(len(t) for t in servers.values()) / len(servers)
    count = int(size / per_server) + 1
    while sum(len(t) for t in copies(servers, count).values()) < size:
        count += 1
    return copies(servers, count)


def queries() -> list[str]:
    out: list[str] = []
    for name in ("queries_livemcpbench_dev.jsonl", "queries_metatool_dev.jsonl"):
        with (EVAL_DIR / name).open(encoding="utf-8") as rows:
            out.extend(json.loads(line)["query"] for line in rows if line.strip())
    return out


async def timed(gateway: Gateway, texts: list[str], rounds: int) -> list[float]:
    durations: list[float] = []
    for _ in range(rounds):
        for text in texts:
            started = time.perf_counter()
            await gateway.search(text, limit=10)
            durations.append((time.perf_counter() - started) * 1000)
    return durations


async def run(tools: int, scope_servers: int, rounds: int, sample: int) -> dict[str, object]:
    servers = catalog(tools)
    specs = [UpstreamSpec(name, InProcessUpstream(build_server(name, t))) for name, t in servers.items()]
    rng = random.Random(21)
    chosen = rng.sample(sorted(servers), scope_servers)
    scope = Scope.of(namespace="bench", servers=chosen)
    texts = rng.sample(queries(), sample)
    async with Gateway(specs, search=make_backend("hybrid")) as gateway:
        with anyio.fail_after(600):
            await gateway.settle()
        started = time.perf_counter()
        await gateway.search("warm up", limit=10)  # builds the whole catalog's index
        whole_build = (time.perf_counter() - started) * 1000
        with scoped(scope):
            started = time.perf_counter()
            await gateway.search("warm up", limit=10)  # builds the scope's index
            scope_build = (time.perf_counter() - started) * 1000
        whole = await timed(gateway, texts, rounds)
        with scoped(scope):
            within = await timed(gateway, texts, rounds)
            visible = len(gateway.visibility.tools(scope))
        total = len(gateway.catalog.tools())
    return {
        "tools": total,
        "servers": len(servers),
        "scope": {"servers": scope_servers, "tools": visible},
        "queries": len(texts),
        "rounds": rounds,
        "whole": {"p50": statistics.median(whole), "p99": harness.percentile(whole, 0.99), "indexBuildMs": whole_build},
        "scoped": {
            "p50": statistics.median(within),
            "p99": harness.percentile(within, 0.99),
            "indexBuildMs": scope_build,
        },
        "machine": f"{os.cpu_count()} cores, {platform.python_implementation()} {platform.python_version()}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--scope-servers", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queries", type=int, default=200, help="dev queries sampled (seeded)")
    args = parser.parse_args()
    result = asyncio.run(run(args.tools, args.scope_servers, args.rounds, args.queries))
    harness.record("search", result)
    print(json.dumps(result, indent=2))
    whole, within = result["whole"], result["scoped"]
    assert isinstance(whole, dict) and isinstance(within, dict)
    print(f"scoped p50 {within['p50']:.2f} ms vs whole {whole['p50']:.2f} ms")
