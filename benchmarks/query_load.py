"""Oversized searches against a running gateway: do the other clients still get quick answers?

    python -m benchmarks query_load [--servers 140] [--probes 200] [--src OTHER/src]
    python -m benchmarks query_load --query-sizes   # what the query caps' defaults rest on

The hardening target: one `search_tools` call with a 4 MB query once held the event loop for seconds,
and another session's `list_mcp_servers` waited as long. Here `toolscout serve --transport http` fronts
LiveMCPBench's catalog servers (copied under new names up to `--servers`), served over streamable
HTTP by one `toolscout.demo.catalog_server` process. One client asks `list_mcp_servers` `--probes`
times in a row, first alone, then while two clients search with queries at `search.maxQueryChars`
(2,000 characters) and one sends 4 MB queries, each in a loop. It reports the probe's p50/p99/max
and what the loaders got. `--src` runs the gateway from another tree's `src` (PYTHONPATH), to
measure the code before a change. Bounded: a fixed number of probes, the loaders stop with them,
and everything within 10 minutes. Traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from mcp import Client

from benchmarks import harness
from benchmarks.processes import SERVE_READY, running
from benchmarks.upstreams import PYTHON, catalog_over_http, copies, http_servers, write_catalog
from toolscout.config.models import DEFAULT_MAX_QUERY_CHARS
from toolscout.search.evaluation import load_catalog_servers

EVAL_DIR = Path(os.environ.get("TOOLSCOUT_EVAL_DIR") or Path(__file__).resolve().parents[2] / "shared" / "eval")
TARGET_P99_MS = 100.0


def at_cap() -> str:
    return ("find a tool that converts a spreadsheet to a chart and emails it " * 40)[:DEFAULT_MAX_QUERY_CHARS]


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "p50": round(statistics.median(ordered), 2),
        "p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2),
        "max": round(ordered[-1], 2),
    }


async def probe(client: Client, count: int) -> list[float]:
    out: list[float] = []
    for _ in range(count):
        started = time.perf_counter()
        result = await client.call_tool("list_mcp_servers", {})
        out.append((time.perf_counter() - started) * 1000)
        assert not result.is_error
    return out


async def measure(servers: int, probes: int, src: str | None) -> dict[str, Any]:
    catalog = load_catalog_servers(EVAL_DIR / "catalog_livemcpbench.jsonl")
    chosen = copies(catalog, servers)
    tools = sum(len(t) for t in chosen.values())
    with tempfile.TemporaryDirectory() as tmp:
        path = write_catalog(chosen, Path(tmp) / "catalog.jsonl")
        async with catalog_over_http(path) as base:
            config = Path(tmp) / "toolscout.json"
            config.write_text(json.dumps({"mcpServers": http_servers(base, list(chosen)), "catalogCache": False}))
            env = {**os.environ, "TOOLSCOUT_CACHE_DIR": str(Path(tmp) / "cache"), "XDG_STATE_HOME": tmp}
            if src:
                env["PYTHONPATH"] = src
            command = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--transport", "http"]
            async with running([*command, "--port", "0"], ready=SERVE_READY, env=env) as serve:
                url = serve.match.group(1)
                with anyio.fail_after(600):
                    async with Client(url) as prober:
                        # Warm: every server connected and the index built before anything is timed.
                        await prober.call_tool("search_tools", {"query": "warm up"})
                        alone = await probe(prober, probes)
                        # The loaders run in processes of their own: in this one, encoding 4 MB
                        # requests would hold up the probe's own event loop, not the gateway's.
                        loaders: list[anyio.abc.Process] = []
                        for kind in ("cap", "cap", "4mb"):
                            loaders.append(
                                await anyio.open_process(
                                    [PYTHON, "-m", "benchmarks", "query_load", "--loader", kind, url],
                                    stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE,
                                )
                            )
                        for loader in loaders:  # each says when its first search is answered
                            assert loader.stdout is not None
                            await loader.stdout.receive(1)
                        loaded = await probe(prober, probes)
                        searched: list[float] = []
                        refused: list[float] = []
                        for kind, loader in zip(("cap", "cap", "4mb"), loaders, strict=True):
                            assert loader.stdin is not None and loader.stdout is not None
                            await loader.stdin.aclose()  # stop
                            out = b""
                            async for chunk in loader.stdout:
                                out += chunk
                            await loader.wait()
                            (searched if kind == "cap" else refused).extend(json.loads(out))
    return {
        "servers": servers,
        "tools": tools,
        "alone": summary(alone),
        "under_load": summary(loaded),
        "searches_at_cap": summary(searched) if searched else {},
        "refused_4mb": summary(refused) if refused else {},
    }


async def load(kind: str, url: str) -> None:
    """A loader process: search in a loop until stdin closes, then print the latencies (ms) as JSON."""
    query = at_cap() if kind == "cap" else "x" * 4_000_000
    stop = anyio.Event()
    times: list[float] = []

    async def until_stdin_closes() -> None:
        await anyio.to_thread.run_sync(sys.stdin.buffer.read)
        stop.set()

    async with anyio.create_task_group() as tg, Client(url) as client:
        tg.start_soon(until_stdin_closes)
        while not stop.is_set():
            started = time.perf_counter()
            await client.call_tool("search_tools", {"query": query})
            times.append((time.perf_counter() - started) * 1000)
            if len(times) == 1:
                sys.stdout.write("!")
                sys.stdout.flush()
        tg.cancel_scope.cancel()
    sys.stdout.write(json.dumps(times))
    sys.stdout.flush()


TRAIN_DIR = Path(os.environ.get("TOOLSCOUT_TRAIN_DIR") or EVAL_DIR.parent / "train")


def query_sizes() -> dict[str, Any]:
    """What the defaults of `search.maxQueryChars` and `search.maxQuerySteps` rest on: the training
    queries' lengths, and how many tools one query needs (rows that share a `qid`)."""
    import gzip
    from collections import Counter

    lengths: dict[str, int] = {}
    tools: Counter[str] = Counter()
    with gzip.open(TRAIN_DIR / "retrieval_pairs.jsonl.gz", "rt", encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            lengths[row["qid"]] = len(row["query"])
            tools[row["qid"]] += 1
    chars = sorted(lengths.values())
    needs = sorted(tools.values())
    return {
        "queries": len(chars),
        "chars": {
            "p50": chars[len(chars) // 2],
            "p99": chars[int(len(chars) * 0.99)],
            "p99.9": chars[int(len(chars) * 0.999)],
            "max": chars[-1],
        },
        "tools_per_query": {
            "p99": needs[int(len(needs) * 0.99)],
            "p99.9": needs[int(len(needs) * 0.999)],
            "max": needs[-1],
            "count": dict(sorted(Counter(needs).items())),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--loader", nargs=2, metavar=("KIND", "URL"), help=argparse.SUPPRESS)
    parser.add_argument("--servers", type=int, default=140)
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--src", help="run the gateway from this tree's src (the code before a change)")
    parser.add_argument("--query-sizes", action="store_true", help="print the training queries' sizes and stop")
    args = parser.parse_args()
    if args.query_sizes:
        sizes = query_sizes()
        harness.record("query_sizes", sizes)
        print(json.dumps(sizes, indent=2))
        return
    if args.loader:
        anyio.run(load, *args.loader)
        return
    result = anyio.run(measure, args.servers, args.probes, args.src)
    print(json.dumps(result, indent=2))
    p99 = result["under_load"]["p99"]
    verdict = "meets" if p99 < TARGET_P99_MS else "misses"
    print(f"list_mcp_servers p99 under load: {p99} ms ({verdict} the {TARGET_P99_MS:g} ms target)")
