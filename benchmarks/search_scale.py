"""Hybrid search at scale: build time, search latency and memory of the index at 10,000 and 50,000 tools.

    python -m benchmarks search_scale [--tools 10000,50000] [--queries 300] [--eval-dir ../shared/eval]

For each size, a child process (so that its memory is the index's alone) builds the synthetic
catalog of `benchmarks.search` (the dev catalogs copied under renamed servers, `synthetic`), then:
the shipped hybrid backend built from a cold embedding cache (a new temporary directory) and again
from the warm one (a second backend reading the vectors the first wrote); `--queries` MetaTool dev
queries searched with `limit=10`, each timed (p50, p99); and the process's resident memory
(VmRSS) before the catalog, with the catalog, and once the index is built and searched, with its
peak (VmHWM). "Index" is the memory the backend added to the catalog, "a tool" that divided by the
number of tools. Prints Markdown, with the machine and the load average.
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

from benchmarks import harness
from benchmarks.search import DEFAULT_EVAL_DIR
from benchmarks.upstreams import rss_kib


def measure(size: int, queries: int, eval_dir: Path) -> dict[str, float]:
    """One size's figures, in this process (run it in a child of its own)."""
    from benchmarks.search import synthetic
    from toolscout.gateway.index import release_freed_memory
    from toolscout.search import make_backend

    start = rss_kib(os.getpid())["VmRSS"]
    tools, labelled = synthetic(eval_dir, size)
    texts = [q.text for q in labelled[:queries]]
    with_catalog = rss_kib(os.getpid())["VmRSS"]
    with tempfile.TemporaryDirectory(prefix="toolscout-scale-") as cache:
        began = time.perf_counter()
        cold = make_backend("hybrid", cache_dir=Path(cache))
        cold.rebuild(tools)
        cold_s = time.perf_counter() - began
        del cold
        release_freed_memory()
        began = time.perf_counter()
        backend = make_backend("hybrid", cache_dir=Path(cache))
        backend.rebuild(tools)
        warm_s = time.perf_counter() - began
        release_freed_memory()
    backend.search(texts[0], limit=10)
    timings: list[float] = []
    for text in texts:
        began = time.perf_counter()
        backend.search(text, limit=10)
        timings.append((time.perf_counter() - began) * 1000)
    release_freed_memory()
    after = rss_kib(os.getpid())
    timings.sort()
    return {
        "tools": len(tools),
        "cold_s": cold_s,
        "warm_s": warm_s,
        "p50_ms": statistics.median(timings),
        "p99_ms": harness.percentile(timings, 0.99, rank="ceil"),
        "start_mib": start / 1024,
        "catalog_mib": (with_catalog - start) / 1024,
        "index_mib": (after["VmRSS"] - with_catalog) / 1024,
        "peak_mib": after["VmHWM"] / 1024,
        "rss_mib": after["VmRSS"] / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tools", default="10000,50000", help="comma-separated catalog sizes")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child's size
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(measure(args.one, args.queries, args.eval_dir)))
        return
    print(f"## Hybrid search at scale — {harness.today()}\n")
    print(f"{harness.machine_line()}; load average {harness.load():.1f} before.\n")
    print("| tools | cold build | warm build | search p50 / p99 | catalog | index | index a tool | RSS / peak |")
    print("|---|---|---|---|---|---|---|---|")
    for size in (int(part) for part in args.tools.split(",")):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.search_scale",
                "--one",
                str(size),
                "--queries",
                str(args.queries),
                "--eval-dir",
                str(args.eval_dir),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"{size} tools: {done.stderr[-2000:]}")
        r = json.loads(done.stdout.strip().splitlines()[-1])
        per_tool = r["index_mib"] * 1024 / r["tools"]
        harness.record(str(size), {**r, "index_kib_a_tool": per_tool})
        print(
            f"| {int(r['tools']):,} | {r['cold_s']:.2f} s | {r['warm_s']:.2f} s "
            f"| {r['p50_ms']:.2f} / {r['p99_ms']:.2f} ms | {r['catalog_mib']:.0f} MiB | {r['index_mib']:.0f} MiB "
            f"| {per_tool:.1f} KiB | {r['rss_mib']:.0f} / {r['peak_mib']:.0f} MiB |"
        )
    print(f"\nLoad average {harness.load():.1f} after.")


if __name__ == "__main__":
    main()
