"""Search quality and latency of the gateway's search backend on the labelled dev data.

    .venv/bin/python -m benchmarks.search_quality [--eval-dir ../shared/eval]

Every tool of a dataset's catalog goes through the same path as live tools
(`Catalog` -> `SearchBackend`); each query ranks the whole catalog. Metrics as
defined in the eval README: R@k is the share of a query's relevant tools in the
top k, Hit@5 whether any is, nDCG@10 with binary gains, MRR over the ranking.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, cast

import mcp_types as types

from toolscout.catalog import Catalog
from toolscout.search import BM25Backend, SearchBackend

DEFAULT_EVAL_DIR = Path(__file__).resolve().parents[2] / "shared" / "eval"
DATASETS = ("livemcpbench", "metatool")


@dataclass
class Scores:
    recall_1: float
    recall_5: float
    ndcg_10: float
    mrr: float
    hit_5: float
    p50_ms: float
    p95_ms: float
    queries: int
    tools: int


def _read_jsonl(path: Path) -> Iterable[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)


def load_catalog(eval_dir: Path, dataset: str) -> Catalog:
    by_server: dict[str, list[types.Tool]] = {}
    for row in _read_jsonl(eval_dir / f"catalog_{dataset}.jsonl"):
        raw: Any = row["input_schema"]
        schema = cast(dict[str, Any], raw) if isinstance(raw, dict) else {"type": "object"}
        tool = types.Tool(name=row["name"], description=row["description"], input_schema=schema)
        by_server.setdefault(row["server"], []).append(tool)
    catalog = Catalog()
    for server, tools in by_server.items():
        catalog.set_server_tools(server, tools)
    return catalog


def evaluate(backend: SearchBackend, catalog: Catalog, queries: list[dict[str, Any]]) -> Scores:
    tools = catalog.tools()
    backend.rebuild(tools)
    r1: list[float] = []
    r5: list[float] = []
    ndcg: list[float] = []
    rr: list[float] = []
    hit: list[float] = []
    latencies: list[float] = []
    for query in queries:
        relevant = {(server, name) for server, name in query["relevant"]}
        started = time.perf_counter()
        hits = backend.search(query["query"], limit=len(tools))
        latencies.append((time.perf_counter() - started) * 1000)
        ranked = [(h.tool.server, h.tool.name) for h in hits]
        found = [i for i, key in enumerate(ranked) if key in relevant]
        r1.append(sum(1 for i in found if i < 1) / len(relevant))
        r5.append(sum(1 for i in found if i < 5) / len(relevant))
        hit.append(1.0 if any(i < 5 for i in found) else 0.0)
        rr.append(1 / (found[0] + 1) if found else 0.0)
        dcg = sum(1 / math.log2(i + 2) for i in found if i < 10)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
        ndcg.append(dcg / ideal)
    latencies.sort()
    return Scores(
        recall_1=statistics.fmean(r1),
        recall_5=statistics.fmean(r5),
        ndcg_10=statistics.fmean(ndcg),
        mrr=statistics.fmean(rr),
        hit_5=statistics.fmean(hit),
        p50_ms=latencies[len(latencies) // 2],
        p95_ms=latencies[int(len(latencies) * 0.95)],
        queries=len(queries),
        tools=len(tools),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    args = parser.parse_args()
    eval_dir: Path = args.eval_dir
    print(f"search quality, dev split, {date.today()}, {platform.machine()} ({platform.python_version()})")
    print("| dataset | backend | tools | queries | R@1 | R@5 | nDCG@10 | MRR | Hit@5 | p50 ms | p95 ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for dataset in DATASETS:
        catalog = load_catalog(eval_dir, dataset)
        queries = list(_read_jsonl(eval_dir / f"queries_{dataset}_dev.jsonl"))
        s = evaluate(BM25Backend(), catalog, queries)
        print(
            f"| {dataset} | bm25 | {s.tools} | {s.queries} | {s.recall_1:.3f} | {s.recall_5:.3f} | {s.ndcg_10:.3f} "
            f"| {s.mrr:.3f} | {s.hit_5:.3f} | {s.p50_ms:.2f} | {s.p95_ms:.2f} |"
        )


if __name__ == "__main__":
    main()
