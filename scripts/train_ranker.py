"""Fit the learned search ranker (`toolscout.search.ranker`) on the train split of `../shared/train`.

    PYTHONPATH=src:. nice -n 5 /work/train-venv/bin/python scripts/train_ranker.py \\
        [--fold-a /work/wt/models/foldA --fold-b /work/wt/models/foldB] [--out src/toolscout/search/model/ranker.json]

A dev step (torch from a training venv; the ranker runs on numpy). Every query of the train split
(`benchmarks/train_data.py`: MIT/Apache sources, ToolAlpaca held out and never read) is ranked by
the hybrid search's candidate generation against its own group's catalog and against a 30-tool
catalog (`benchmarks/search_train.small_catalog`: the everyday case); each candidate's features
(`toolscout.search.ranker`) are labelled by whether it is a gold tool. A linear scorer (plus
`--hidden` ReLU units) is fitted with a listwise softmax loss, early-stopped on the validation
split's R@5; then a logistic curve on its score, fitted on the validation candidates, makes the
relevance (the chance a hit is a gold tool). Two models: `static` (with embeddings) and `lexical`.

Cosine features are cross-fitted: the queries of fold A's groups get cosines from `--fold-b`'s
embedder (trained on fold B only) and vice versa, so the ranker does not learn to trust a cosine
that has seen its queries; without fold models, the given `--model` (default: packaged) for all.
`--drop steps,server,names` zeroes feature groups (ablations); `--cache FILE` keeps the extracted
features, so a refit with other settings skips the extraction.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from benchmarks import train_data
from benchmarks.search_train import small_catalog

from toolscout.catalog import CatalogTool
from toolscout.search.embedding import DenseBackend, StaticEmbedder
from toolscout.search.evaluation import LabelledQuery
from toolscout.search.hybrid import FusionWeights, HybridBackend
from toolscout.search.ranker import RANKER_FILE, names_of

FOLD_A = ("seal_tools", "stabletoolbench", "tooltalk")
FOLD_B = ("bfcl", "gorilla_apibench", "nestful", "api_bank")
GROUPS = {
    "steps": ("step_", "steps"),
    "server": ("server_",),
    "names": ("name",),
}
PER_QUERY = ("steps", "query_len")
List = tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]  # (features, labels)


def embedders(args: argparse.Namespace) -> dict[str, StaticEmbedder]:
    """The embedder whose cosines each group's queries get (cross-fitted when fold models exist)."""
    shipped = StaticEmbedder.load(args.model)
    out: dict[str, StaticEmbedder] = {}
    for groups, other in ((FOLD_A, args.fold_b), (FOLD_B, args.fold_a)):
        model = StaticEmbedder.load(other) if other is not None and (other / "config.json").is_file() else shipped
        for group in groups:
            out[group] = model
    return out


def lists_of(backend: HybridBackend, query: LabelledQuery, tools: list[CatalogTool]) -> tuple[List, List]:
    """The candidates' features and labels for the static and the lexical model."""
    signals, _ = backend.signals(query.text)
    gold = np.fromiter(((t.server, t.name) in query.relevant for t in tools), dtype=bool, count=len(tools))
    picked, features = backend.candidate_features(signals)
    signals.dense = None
    lex_picked, lex_features = backend.candidate_features(signals)
    return (features, gold[picked]), (lex_features, gold[lex_picked])


def extract(args: argparse.Namespace) -> dict[str, dict[str, list[List]]]:
    """{split: {model: [lists]}} for split train and validation."""
    pairs = train_data.load_pairs(args.train_dir)
    train, validation, _ = train_data.split(pairs)
    embed = embedders(args)
    out: dict[str, dict[str, list[List]]] = {s: {"static": [], "lexical": []} for s in ("train", "validation")}
    for group in embed:
        every = [p for p in train + validation if p.group == group]
        weights = FusionWeights(learned=True, depth=args.depth)
        backend = HybridBackend(DenseBackend(embed[group]), weights, ranker=None)
        for split, chosen in (("train", train), ("validation", validation)):
            tools, queries = train_data.catalog_and_queries([p for p in chosen if p.group == group], every)
            started = time.perf_counter()
            backend.rebuild(tools)
            for query in queries:
                static, lexical = lists_of(backend, query, tools)
                out[split]["static"].append(static)
                out[split]["lexical"].append(lexical)
            # The everyday case: each query against 30 tools (its gold servers' and others).
            rng = random.Random(0)
            by_server: dict[str, list[CatalogTool]] = defaultdict(list)
            for tool in tools:
                by_server[tool.server].append(tool)
            for query in queries[: args.small]:
                catalog = small_catalog(tools, by_server, query, rng)
                backend.rebuild(catalog)
                static, lexical = lists_of(backend, query, catalog)
                out[split]["static"].append(static)
                out[split]["lexical"].append(lexical)
            print(
                f"{group} {split}: {len(tools)} tools, {len(queries)} queries, {time.perf_counter() - started:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    return out


def extract_unanswered(args: argparse.Namespace) -> dict[str, list[List]]:
    """{model: [lists]}: each validation query against its 30-tool catalog without its gold tools.

    Calibration only (no label is positive): a search whose tool no server has is everyday use, and
    its best hit must read as the weak match it is, not as the best of the training lists."""
    pairs = train_data.load_pairs(args.train_dir)
    _, validation, _ = train_data.split(pairs)
    embed = embedders(args)
    out: dict[str, list[List]] = {"static": [], "lexical": []}
    for group in embed:
        every = [p for p in pairs if p.group == group and p.group != train_data.HELD_OUT]
        backend = HybridBackend(DenseBackend(embed[group]), FusionWeights(learned=True, depth=args.depth), ranker=None)
        tools, queries = train_data.catalog_and_queries([p for p in validation if p.group == group], every)
        rng = random.Random(1)
        by_server: dict[str, list[CatalogTool]] = defaultdict(list)
        for tool in tools:
            by_server[tool.server].append(tool)
        for query in queries[: args.small]:
            catalog = [
                t for t in small_catalog(tools, by_server, query, rng) if (t.server, t.name) not in query.relevant
            ]
            backend.rebuild(catalog)
            static, lexical = lists_of(backend, query, catalog)
            out["static"].append(static)
            out["lexical"].append(lexical)
    return out


def _padded(lists: list[List], dims: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    size = max(len(y) for _, y in lists)
    x = np.zeros((len(lists), size, dims), dtype=np.float32)
    y = np.zeros((len(lists), size), dtype=np.float32)
    mask = np.zeros((len(lists), size), dtype=bool)
    for i, (f, g) in enumerate(lists):
        x[i, : len(g)] = f
        y[i, : len(g)] = g
        mask[i, : len(g)] = True
    return torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(mask)


class Scorer(torch.nn.Module):
    def __init__(self, dims: int, hidden: int) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(dims, 1)
        self.hidden = (
            torch.nn.Sequential(torch.nn.Linear(dims, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1, bias=False))
            if hidden
            else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.linear(x).squeeze(-1)
        return out if self.hidden is None else out + self.hidden(x).squeeze(-1)


def metrics(scores: list[np.ndarray[Any, Any]], lists: list[List]) -> dict[str, float]:
    """R@5 and MRR of the candidates' ranking (a gold tool not among the candidates counts as missed)."""
    r5: list[float] = []
    rr: list[float] = []
    for s, (_, y) in zip(scores, lists, strict=True):
        order = np.argsort(-s, kind="stable")
        found = np.flatnonzero(y[order])
        total = max(1, int(y.sum()))  # lists without a gold candidate count 0
        r5.append(float((found < 5).sum()) / total if y.any() else 0.0)
        rr.append(1.0 / (found[0] + 1) if found.size else 0.0)
    return {"r5": float(np.mean(r5)), "mrr": float(np.mean(rr))}


def fit(
    args: argparse.Namespace,
    train: list[List],
    validation: list[List],
    names: tuple[str, ...],
    unanswered: list[List] | None = None,
) -> dict[str, Any]:
    """One model: standardisation, weights early-stopped on validation R@5, calibration; as ranker.json's entry."""
    dropped = [i for i, n in enumerate(names) if any(n.startswith(p) for g in args.drop for p in GROUPS[g])]
    # The same for every candidate of a query: no effect on a linear ranking (its weight would only
    # shift a query's scores and so its relevance), but a hidden unit may use them to weigh the others.
    constant = [i for i, n in enumerate(names) if n in PER_QUERY]
    stacked = np.concatenate([f for f, _ in train])
    mean, scale = stacked.mean(axis=0), np.maximum(stacked.std(axis=0), 1e-3)
    mean[dropped], scale[dropped] = 0.0, 1.0

    def norm(lists: list[List]) -> list[List]:
        out = [((f - mean) / scale, y) for f, y in lists]
        for f, _ in out:
            f[:, dropped] = 0.0
        return out

    train_n = [lst for lst in norm(train) if lst[1].any()]
    valid_n = norm(validation)
    torch.manual_seed(0)
    model = Scorer(len(names), args.hidden)
    keep = torch.ones(len(names))
    keep[constant] = 0.0
    with torch.no_grad():
        model.linear.weight.zero_()
    optimiser = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    rng = random.Random(0)
    best: tuple[float, dict[str, Any], int] = (-1.0, {}, 0)
    record: list[dict[str, float]] = []
    train_n.sort(key=lambda lst: len(lst[1]))  # batches of similar length pad little
    batches = [_padded(train_n[i : i + args.batch], len(names)) for i in range(0, len(train_n), args.batch)]
    for epoch in range(args.epochs):
        rng.shuffle(batches)
        model.train()
        for x, y, mask in batches:
            logits = model(x).masked_fill(~mask, -1e9)
            target = y / y.sum(dim=1, keepdim=True)
            loss = -(target * torch.log_softmax(logits, dim=1)).sum(dim=1).mean()
            optimiser.zero_grad()
            loss.backward()  # pyright: ignore[reportUnknownMemberType]
            optimiser.step()
            with torch.no_grad():
                model.linear.weight.mul_(keep)
        model.eval()
        with torch.no_grad():
            scores = [model(torch.from_numpy(f)).numpy() for f, _ in valid_n]
        found = metrics(scores, valid_n)
        record.append({"epoch": epoch + 1, **found})
        print(
            f"  epoch {epoch + 1}: validation R@5 {found['r5']:.4f} MRR {found['mrr']:.4f}", file=sys.stderr, flush=True
        )
        if found["r5"] > best[0]:
            best = (found["r5"], {k: v.clone() for k, v in model.state_dict().items()}, epoch + 1)
    model.load_state_dict(best[1])
    calibration = valid_n + (norm(unanswered) if unanswered else [])
    with torch.no_grad():
        raw = np.concatenate([model(torch.from_numpy(f)).numpy() for f, _ in calibration])
    labels = np.concatenate([y for _, y in calibration]).astype(np.float64)
    slope, intercept = calibrate(raw.astype(np.float64), labels)
    state = {k: v.numpy().astype(float) for k, v in model.state_dict().items()}
    spec: dict[str, Any] = {
        "features": list(names),
        "mean": mean.tolist(),
        "scale": scale.tolist(),
        "weights": state["linear.weight"][0].tolist(),
        "bias": float(state["linear.bias"][0]),
        "slope": slope,
        "intercept": intercept,
        "training": {
            "best_epoch": best[2],
            "validation": record,
            "train_lists": len(train_n),
            "validation_lists": len(valid_n),
            "dropped": [names[i] for i in dropped],
        },
    }
    if args.hidden:
        spec["hidden"] = state["hidden.0.weight"].T.tolist()
        spec["hidden_bias"] = state["hidden.0.bias"].tolist()
        spec["output"] = state["hidden.2.weight"][0].tolist()
    return spec


def calibrate(scores: np.ndarray[Any, Any], labels: np.ndarray[Any, Any]) -> tuple[float, float]:
    """Logistic regression of the labels on the scores: (slope, intercept)."""
    x = torch.from_numpy(scores.astype(np.float64))
    y = torch.from_numpy(labels.astype(np.float64))
    params = torch.tensor([1.0, 0.0], dtype=torch.float64, requires_grad=True)
    optimiser = torch.optim.LBFGS([params], max_iter=200, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        optimiser.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(params[0] * x + params[1], y)
        loss.backward()  # pyright: ignore[reportUnknownMemberType]
        return loss

    optimiser.step(closure)  # pyright: ignore[reportUnknownMemberType]
    a, b = (float(v) for v in params.detach())
    return a, b


def _described(directory: Path | None) -> dict[str, Any] | None:
    """Which embedding model a directory held (its weights' sha256), for the record."""
    if directory is None or not (directory / "config.json").is_file():
        return None
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    return {"path": str(directory), "embeddings_sha256": config.get("embeddings_sha256")}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--train-dir", type=Path, default=train_data.DEFAULT_TRAIN_DIR)
    parser.add_argument(
        "--model", type=Path, default=None, help="Embedding model without fold models (default: packaged)."
    )
    parser.add_argument("--fold-a", type=Path, default=None, help="Embedder trained on fold A (for fold B's queries).")
    parser.add_argument("--fold-b", type=Path, default=None, help="Embedder trained on fold B (for fold A's queries).")
    parser.add_argument("--out", type=Path, default=RANKER_FILE)
    parser.add_argument("--cache", type=Path, default=None, help="Features kept here (read if present).")
    parser.add_argument("--depth", type=int, default=FusionWeights().depth)
    parser.add_argument("--small", type=int, default=1000, help="Queries per group also ranked in a 30-tool catalog.")
    parser.add_argument("--hidden", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument(
        "--unanswered", action="store_true", help="Calibrate also on catalogs without the query's tools."
    )
    parser.add_argument("--only", default="lexical,static", help="Which models to fit (ablations: static).")
    parser.add_argument("--drop", type=lambda s: [g for g in s.split(",") if g], default=[])
    args = parser.parse_args()
    started = time.perf_counter()
    if args.cache is not None and args.cache.is_file():
        with args.cache.open("rb") as handle:
            data = torch.load(handle, weights_only=False)  # pyright: ignore[reportUnknownMemberType]
    else:
        data = extract(args)
        if args.cache is not None:
            with args.cache.open("wb") as handle:
                torch.save(data, handle)
    if args.unanswered and "unanswered" not in data:
        data["unanswered"] = extract_unanswered(args)
        if args.cache is not None:
            with args.cache.open("wb") as handle:
                torch.save(data, handle)
    models: dict[str, Any] = {}
    for name in args.only.split(","):
        print(f"{name}:", file=sys.stderr, flush=True)
        unanswered = data["unanswered"][name] if args.unanswered else None
        models[name] = fit(args, data["train"][name], data["validation"][name], names_of(name != "lexical"), unanswered)
    # The command that redoes this file from scratch (a --cache holds the extraction of the same
    # --fold-a/--fold-b/--model/--depth/--small: pass them with it, so that they are recorded).
    skip = ("cache", "out", "drop", "only", "train_dir", "unanswered")
    settings = [
        f"--{k.replace('_', '-')} {v}" for k, v in sorted(vars(args).items()) if k not in skip and v is not None
    ]
    settings += [f"--drop {','.join(args.drop)}"] if args.drop else []
    settings += ["--unanswered"] if args.unanswered else []
    command = "PYTHONPATH=src:. nice -n 5 /work/train-venv/bin/python scripts/train_ranker.py " + " ".join(settings)
    out = {
        "command": command,
        "embedders": {
            k: _described(v) for k, v in (("fold_a", args.fold_a), ("fold_b", args.fold_b), ("model", args.model))
        },
        "models": models,
        "seconds": round(time.perf_counter() - started),
    }
    args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({out['seconds']} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
