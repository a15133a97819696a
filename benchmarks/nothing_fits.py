"""Saying when nothing fits: how often a search still offers a tool for a request no server can do,
and how often an answerable request is flagged or loses its right tool.

    python -m benchmarks nothing_fits [--train-dir ../shared/train] [--eval-dir ../shared/eval]
        [--queries 2000]

1. The public set's catalog (the servers `smart_requests` connects, connected the same way): the
   requests of benchmarks/data/unanswerable.jsonl, which no server can do, and the answerable
   requests of smart_requests.jsonl (those with a right tool), each searched as `search_tools`
   searches (`Gateway.search`, floor 0). For each threshold t of a sweep (the defaults of
   `search.minRelevance` and `search.nothingFitsBelow` among them): the share of unanswerable
   requests whose best hit reaches t (a tool still offered as fitting), the share of answerable ones
   whose best hit is below t (flagged: nothing fits) and whose right tool is below t (left out,
   were t the floor). Then smart mode (hybrid, no LLM, cache and learning off) on the unanswerable
   requests: how often it commits to a tool (runs it, holds it for confirmation or stops for its
   arguments); every commitment is a wrong one.
2. The training pairs (MIT and Apache-2.0 sources, all their tools in one catalog), where the default
   threshold was chosen: each request's best hit (answerable), and its best hit among the other
   servers' tools (as if its own server were absent: unanswerable), per split.
3. The dev sets of ../shared/eval, every query answerable: the share flagged at each threshold.

Intervals: 95% bootstrap (2,000 resamples of the requests).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types

from benchmarks import harness, train_data
from benchmarks.smart import DEFAULT_EVAL_DIR, dev_sets, indexed
from benchmarks.smart_requests import (
    DATA,
    ROOT_NAME,
    RecordingGateway,
    load_rows,
    outcome_of,
    upstream_specs,
    write_root,
)
from toolscout.catalog import Catalog
from toolscout.config.models import (
    DEFAULT_MIN_RELEVANCE,
    DEFAULT_NOTHING_FITS_BELOW,
    SmartCacheConfig,
    SmartConfig,
)
from toolscout.modes.smart import SmartArgs, SmartDiscovery
from toolscout.search import make_backend
from toolscout.search.evaluation import bootstrap_interval

UNANSWERABLE = Path(__file__).parent / "data" / "unanswerable.jsonl"
THRESHOLDS = sorted({DEFAULT_MIN_RELEVANCE, 0.05, DEFAULT_NOTHING_FITS_BELOW, 0.2, 0.3, 0.5})
COMMITTED = ("ran", "confirmation_required", "arguments")
"""What smart mode does when it settles on a tool (`smart_requests.outcome_of`'s statuses)."""


def _share(values: Sequence[float]) -> str:
    if not values:
        return "—"
    low, high = bootstrap_interval(values)
    return f"{statistics.fmean(values):.3f} ({low:.3f}–{high:.3f})"


def unanswerable_requests() -> list[str]:
    lines = UNANSWERABLE.read_text(encoding="utf-8").splitlines()
    return [str(json.loads(line)["request"]) for line in lines if line.strip()]


async def public_catalog() -> list[str]:
    root = Path(tempfile.gettempdir()) / ROOT_NAME  # the same folder as smart_requests: its path is searched
    shutil.rmtree(root, ignore_errors=True)
    write_root(root)
    try:
        return await _public_catalog(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def _public_catalog(root: Path) -> list[str]:
    negatives = unanswerable_requests()
    rows = [r for r in load_rows(DATA, str(root)) if r.calls]
    with tempfile.TemporaryDirectory() as scratch:
        gateway = RecordingGateway(upstream_specs(root, Path(scratch)))
        gateway.executed = []
        async with gateway:
            with anyio.fail_after(120):
                await gateway.settle()
            down = [u.name for u in gateway.upstreams if u.status.value != "connected"]
            if down:
                raise SystemExit(f"servers not connected: {down} (tools/npm installed? scripts/test installs it)")
            best_negative = [await _best(gateway, q) for q in negatives]
            best_positive: list[float] = []
            right_positive: list[float] = []
            for row in rows:
                hits = await gateway.search(row.request, limit=50, min_relevance=0.0)
                best_positive.append(hits[0].relevance if hits else 0.0)
                right = [h.relevance for h in hits if row.right_tool(f"{h.tool.server}/{h.tool.name}")]
                right_positive.append(right[0] if right else 0.0)
            config = SmartConfig(cache=SmartCacheConfig(enabled=False), enable_learning=False)
            smart = SmartDiscovery(gateway, config)
            committed: list[float] = []
            statuses: dict[str, int] = {}
            acted: list[str] = []
            for request in negatives:
                gateway.executed = []
                result: types.CallToolResult | None = None
                with anyio.move_on_after(60):
                    result = await smart.run(SmartArgs.model_validate({"request": request}))
                outcome = outcome_of(result, list(gateway.executed))
                statuses[outcome.status] = statuses.get(outcome.status, 0) + 1
                committed.append(float(outcome.status in COMMITTED))
                if outcome.status in COMMITTED:
                    acted.append(f"- {request!r}: {outcome.status} {outcome.chosen}")
    lines = [
        f"{len(negatives)} unanswerable requests, {len(rows)} answerable ones, over the public set's catalog "
        f"({len(gateway.catalog.tools())} tools).",
        "",
        "| threshold t | unanswerable: a tool at t or above | answerable: flagged (best below t) "
        "| answerable: right tool below t |",
        "|---|---|---|---|",
    ]
    for t in THRESHOLDS:
        marks = " (minRelevance)" if t == DEFAULT_MIN_RELEVANCE else ""
        marks += " (nothingFitsBelow)" if t == DEFAULT_NOTHING_FITS_BELOW else ""
        offered = [float(v >= t) for v in best_negative]
        flagged = [float(v < t) for v in best_positive]
        left_out = [float(v < t) for v in right_positive]
        lines.append(f"| {t:g}{marks} | {_share(offered)} | {_share(flagged)} | {_share(left_out)} |")
        harness.record(f"public t={t:g}", {"offered": statistics.fmean(offered), "flagged": statistics.fmean(flagged)})
    lines += [
        "",
        f"Smart mode (hybrid, no LLM) committed to a tool for {int(sum(committed))} of {len(committed)} "
        f"unanswerable requests: {_share(committed)} ("
        + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
        + "):",
        "",
        *acted,
    ]
    harness.record("smart committed", sum(committed))
    return lines


async def _best(gateway: RecordingGateway, query: str) -> float:
    hits = await gateway.search(query, limit=1, min_relevance=0.0)
    return hits[0].relevance if hits else 0.0


def training_pairs(train_dir: Path) -> list[str]:
    pairs = [json.loads(line) for line in (train_dir / "argument_extraction.jsonl").open(encoding="utf-8")]
    usable = [p for p in pairs if train_data.group_of(str(p["source"])) is not None]
    tools: dict[tuple[str, str], dict[str, Any]] = {}
    for pair in usable:
        tool = cast(dict[str, Any], pair["tool"])
        tools[(str(tool["server"]), str(tool["name"]))] = tool
    catalog = Catalog()
    by_server: dict[str, list[types.Tool]] = {}
    for (server, name), tool in tools.items():
        by_server.setdefault(server, []).append(
            types.Tool(name=name, description=tool.get("description"), input_schema=tool["input_schema"])
        )
    for server, listed in by_server.items():
        catalog.set_server_tools(server, listed)
    backend = make_backend("hybrid", use_cache=False)
    backend.rebuild(catalog.tools())
    parts: dict[str, tuple[list[float], list[float]]] = {
        "train": ([], []),
        "validation": ([], []),
        "held out": ([], []),
    }
    for pair in usable:
        request, tool = str(pair["request"]), cast(dict[str, Any], pair["tool"])
        part = (
            "held out"
            if train_data.group_of(str(pair["source"])) == train_data.HELD_OUT
            else "validation"
            if train_data.is_validation(request)
            else "train"
        )
        hits = backend.search(request, limit=40)
        # Without its own server; bfcl's functions share one server name, so there only the tool goes.
        gone = (str(tool["server"]), str(tool["name"]) if tool["server"] == "bfcl" else None)
        others = [h for h in hits if h.tool.server != gone[0] or (gone[1] is not None and h.tool.name != gone[1])]
        parts[part][0].append(hits[0].relevance if hits else 0.0)
        parts[part][1].append(others[0].relevance if others else 0.0)
    lines = [
        f"{len(usable)} training requests, {len(tools)} tools in one catalog.",
        "",
        "| split | requests | threshold t | without its server: a tool at t or above | with it: flagged |",
        "|---|---|---|---|---|",
    ]
    for part, (positive, negative) in parts.items():
        for t in THRESHOLDS:
            offered = _share([float(v >= t) for v in negative])
            lines.append(
                f"| {part} | {len(positive)} | {t:g} | {offered} | {_share([float(v < t) for v in positive])} |"
            )
    return lines


def dev_flags(eval_dir: Path, sample: int | None) -> list[str]:
    lines = ["| dataset | queries | " + " | ".join(f"flagged at {t:g}" for t in THRESHOLDS) + " |"]
    lines.append("|---|---|" + "---|" * len(THRESHOLDS))
    with tempfile.TemporaryDirectory() as cache:
        for dev in dev_sets(eval_dir, sample):
            backend = indexed(dev, Path(cache) / dev.name)
            best: list[float] = []
            for query in dev.queries:
                hits = backend.search(query.text, limit=1)
                best.append(hits[0].relevance if hits else 0.0)
            cells = [_share([float(v < t) for v in best]) for t in THRESHOLDS]
            lines.append(f"| {dev.name} | {len(best):,} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--train-dir", type=Path, default=train_data.DEFAULT_TRAIN_DIR)
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    parser.add_argument("--queries", type=int, default=2000, help="At most this many queries of each dev set.")
    args = parser.parse_args()
    print(f"{harness.today()}, {harness.machine_line()}, load {os.getloadavg()[0]:.2f}", flush=True)
    started = time.perf_counter()
    print("\n".join(["", "### The public set's catalog", "", *anyio.run(public_catalog)]), flush=True)
    print("\n".join(["", "### Training pairs", "", *training_pairs(args.train_dir)]), flush=True)
    print("\n".join(["", "### Dev sets (every query answerable)", "", *dev_flags(args.eval_dir, args.queries)]))
    print(f"\n[{time.perf_counter() - started:.0f} s in all]", flush=True)


if __name__ == "__main__":
    main()
