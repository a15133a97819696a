"""Leave one source out: for each group of `../shared/train`, the search fitted without it, measured on it.

    PYTHONPATH=src:. /work/train-venv/bin/python -m benchmarks search_loso [--groups bfcl,...]
        [--work DIR] [--write]

The generalisation check of the trained search: does what the embeddings and the ranker learn carry over to
tools and queries of an origin they never saw? For each group G (`benchmarks.train_data.GROUPS`):

1. `scripts/train_embeddings.py --exclude-groups G` fine-tunes the starting weights (the packaged
   model of `BASE_COMMIT`, before any fine-tuning) without G, as the shipped model was made;
2. G's queries are ranked against G's catalog by: `bm25s plain` (the README's baseline), `dense
   before` and `before` (the starting weights alone, and in the previous release's hybrid search),
   and the fold's `dense` and `hybrid` (its embeddings alone, and in the default hybrid search;
   `--dense-weights` adds the hybrid with other fusion weights).

The learned ranker (`search.ranker`, off by default) is not in it: its feature extraction takes
about ten minutes a fold.

Needs torch (the training venv); takes a few minutes per group on 2 cores. `--write` replaces the
"Leave one source out" section of docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import harness, train_data
from benchmarks.baselines import PlainBM25
from toolscout.search import HybridBackend, SearchBackend
from toolscout.search.embedding import DEFAULT_MODEL_DIR, DenseBackend, StaticEmbedder
from toolscout.search.evaluation import bootstrap_interval, evaluate
from toolscout.search.hybrid import FusionWeights

ROOT = Path(__file__).resolve().parents[1]
BASE_COMMIT = "7e5b04f"
"""The last commit whose packaged weights were not fine-tuned on tool data: every fold starts there."""
PREVIOUS_FUSION = FusionWeights(dense=0.6, lexical=0.4)
"""The hand-set fusion of the previous release (with `BASE_COMMIT`'s weights)."""
MODEL_FILES = ("embeddings.npy", "tokenizer.json", "config.json", "LICENSE", "README.md")
DOC = ROOT / "docs" / "BENCHMARKS.md"
SECTION = re.compile(r"## Leave one source out.*?(?=\n## |\Z)", re.S)
METRICS = (("recall_1", "R@1"), ("recall_5", "R@5"), ("ndcg_10", "nDCG@10"), ("mrr", "MRR"))


def base_model(work: Path) -> Path:
    """The starting weights, read from git at `BASE_COMMIT`."""
    out = work / "base"
    out.mkdir(parents=True, exist_ok=True)
    for name in MODEL_FILES:
        blob = subprocess.run(
            ["git", "show", f"{BASE_COMMIT}:src/toolscout/search/model/{name}"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
        (out / name).write_bytes(blob)
    return out


def _run(*args: str) -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    subprocess.run([sys.executable, *args], cwd=ROOT, env=env, check=True)


def fit_fold(group: str, base: Path, work: Path, train_dir: Path) -> Path:
    """The embeddings fitted without `group` as the packaged ones were (reused when already in `work`)."""
    model = work / f"emb-{group}"
    if not (model / "config.json").is_file():
        config = json.loads((DEFAULT_MODEL_DIR / "config.json").read_text(encoding="utf-8"))
        interpolate = str(config["fine_tuning"]["settings"]["interpolate"])
        _run(
            "scripts/train_embeddings.py",
            *("--train-dir", str(train_dir), "--base", str(base), "--exclude-groups", group),
            *("--interpolate", interpolate, "--out", str(model)),
        )
    return model


def _cell(values: tuple[float, ...]) -> str:
    low, high = bootstrap_interval(values)
    return f"{statistics.fmean(values):.3f} ({low:.3f}–{high:.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--train-dir", type=Path, default=train_data.DEFAULT_TRAIN_DIR)
    parser.add_argument("--groups", default=",".join(train_data.GROUPS), help="Comma-separated groups to leave out.")
    parser.add_argument("--work", type=Path, default=None, help="Keep the fold models here (reused on a rerun).")
    parser.add_argument("--write", action="store_true", help="Update docs/BENCHMARKS.md.")
    parser.add_argument(
        "--dense-weights", default="", help="Also the hybrid with these dense weights (comma-separated, e.g. 0.5,0.6)."
    )
    args = parser.parse_args()
    groups = [g for g in str(args.groups).split(",") if g]
    weights = [float(w) for w in str(args.dense_weights).split(",") if w]
    unknown = sorted(set(groups) - set(train_data.GROUPS))
    if unknown:
        raise SystemExit(f"unknown groups {unknown}; choose from {list(train_data.GROUPS)}")
    scratch = tempfile.TemporaryDirectory()
    work: Path = args.work or Path(scratch.name)
    base = base_model(work)
    lines = [
        f"## Leave one source out — {harness.today()}",
        "",
        "`PYTHONPATH=src:. /work/train-venv/bin/python -m benchmarks search_loso"
        + (f" --dense-weights {args.dense_weights}" if weights else "")
        + " --write` (a venv with torch "
        f"for the training steps; {os.cpu_count()} cores): each group of `../shared/train` ranked against its "
        "own catalog by the search fitted without it (its embeddings); `dense before` and `before` are the starting "
        f"weights of {BASE_COMMIT} alone and with the previous release's hand-set fusion. 95% bootstrap intervals.",
        "",
        "| left out | tools | queries | search | " + " | ".join(name for _, name in METRICS) + " |",
        "|---|---|---|---|" + "---|" * len(METRICS),
    ]
    means: dict[str, list[float]] = {}
    for group in groups:
        fold = StaticEmbedder.load(fit_fold(group, base, work, args.train_dir))
        start = StaticEmbedder.load(base)
        tools, queries = train_data.catalog_and_queries(train_data.load_pairs(args.train_dir, [group]))
        setups: list[tuple[str, SearchBackend]] = [
            ("bm25s plain", PlainBM25()),
            ("dense before", DenseBackend(start)),
            ("before", HybridBackend(DenseBackend(start), PREVIOUS_FUSION)),
            ("dense", DenseBackend(fold)),
            ("hybrid", HybridBackend(DenseBackend(fold))),
        ]
        for dense in weights:
            fusion = FusionWeights(dense=dense, lexical=round(1 - dense, 3))
            setups.append((f"hybrid {fusion.dense}/{fusion.lexical}", HybridBackend(DenseBackend(fold), fusion)))
        for label, backend in setups:
            report = evaluate(backend, tools, queries)
            cells = [_cell(report.per_query[key]) for key, _ in METRICS]
            lines.append(f"| {group} | {len(tools)} | {len(queries)} | {label} | " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
            means.setdefault(label, []).append(report.mrr)
    lines += [
        "",
        "Mean MRR over the groups left out: "
        + ", ".join(f"{k} {statistics.fmean(v):.3f}" for k, v in means.items())
        + ".",
    ]
    print(lines[-1])
    if args.write:
        text = DOC.read_text(encoding="utf-8")
        section = "\n".join(lines) + "\n"
        if SECTION.search(text):
            text = SECTION.sub(lambda _: section.rstrip("\n") + "\n", text, count=1)
        else:
            text = text.rstrip("\n") + "\n\n" + section
        DOC.write_text(text, encoding="utf-8")
    scratch.cleanup()
