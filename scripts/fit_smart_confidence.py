"""Fit smart mode's confidence: the chance that a candidate is the tool a request needs, from what the
search says of it and of the others (`toolscout.smart.selection.CONFIDENCE`).

The search's relevance is calibrated for search queries ("convert miles to km"); a smart request
carries its data too ("read the file recipes/pancakes.md"), which pulls every cosine down, and a
small catalog has no near misses to compare with: the right tool, far ahead of the rest, read 0.14.
So the confidence is a logistic model over the candidate's relevance, its lead over the best other
candidate, and its rule and semantic scores, fitted here on requests that carry their values: the
argument-extraction rows of `../shared/train` from its MIT/Apache sources only (never the CC-BY-SA
SGD rows, never the eval files), each searched as smart mode searches it (`search_text`) in three
catalogs: the catalog of every such tool, a small one (the gold tool and 14 tools of other
servers), and a small one without the gold tool (15 tools of other servers). The last is a request
no tool of the catalog does: every candidate is wrong, however far it leads, so a lone weak match
in a small catalog is not taken for a sure one. ToolAlpaca is held out; one request in ten is
validation.

    .venv/bin/python scripts/fit_smart_confidence.py            # prints the fit and the checks
"""

from __future__ import annotations

import json
import math
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import mcp_types as types
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.train_data import DEFAULT_TRAIN_DIR, HELD_OUT, group_of, is_validation

from toolscout.catalog import Catalog, CatalogTool
from toolscout.search import make_backend
from toolscout.search.base import MethodHit
from toolscout.search.hybrid import HybridBackend
from toolscout.smart.extraction import search_text
from toolscout.smart.selection import confidence_features

SMALL = 15
CANDIDATES = 10


def _catalog(tools: Sequence[dict[str, Any]]) -> list[CatalogTool]:
    catalog = Catalog()
    by_server: dict[str, list[types.Tool]] = {}
    for tool in tools:
        by_server.setdefault(str(tool["server"]), []).append(
            types.Tool(name=str(tool["name"]), description=tool.get("description"), input_schema=tool["input_schema"])
        )
    for server, listed in by_server.items():
        catalog.set_server_tools(server, listed)
    return catalog.tools()


def _examples(backend: HybridBackend, request: str, gold: tuple[str, str]) -> tuple[list[list[float]], list[int]]:
    hits: list[MethodHit] = backend.by_method(search_text(request), limit=CANDIDATES, method="hybrid")
    features = confidence_features(hits)
    labels = [int((h.tool.server, h.tool.name) == gold) for h in hits]
    return features, labels


def fit(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any], l2: float = 1e-3) -> np.ndarray[Any, Any]:
    """Logistic regression by Newton's method (with a small L2 penalty, not on the intercept)."""
    w: np.ndarray[Any, Any] = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-(x @ w)))
        penalty = l2 * np.r_[w[:-1], 0.0]
        gradient = x.T @ (p - y) + penalty
        hessian = (x * (p * (1 - p))[:, None]).T @ x + l2 * np.diag(np.r_[np.ones(len(w) - 1), 0.0])
        step = np.linalg.solve(hessian, gradient)
        w = np.asarray(w - step, dtype=float)
        if float(np.abs(step).max()) < 1e-8:
            break
    return w


def report(name: str, part: Part, w: np.ndarray[Any, Any]) -> None:
    """Log loss, and at 0.5 how often the search's first candidate would run: over the requests a
    tool of the catalog does (with precision and right runs), and over those none does."""
    x, y, top, absent = part
    p = 1 / (1 + np.exp(-(x @ w)))
    relevance = np.clip(x[:, 0], 1e-6, 1 - 1e-6)
    for label, score in (("relevance", relevance), ("fitted", np.clip(p, 1e-6, 1 - 1e-6))):
        loss = float(-np.mean(y * np.log(score) + (1 - y) * np.log(1 - score)))
        answerable = top & ~absent
        runs = answerable & (score >= 0.5)
        share = float(runs.sum() / max(1, answerable.sum()))
        precision = float(y[runs].mean()) if runs.any() else math.nan
        right = float((y[runs]).sum() / max(1, answerable.sum()))
        none_fits = top & absent
        wrongly = float((none_fits & (score >= 0.5)).sum() / max(1, none_fits.sum()))
        print(
            f"  {name:<10} {label:<9} log loss {loss:.4f}  runs {share:.3f}  precision {precision:.3f}  "
            f"right runs {right:.3f}  runs where no tool fits {wrongly:.3f}"
        )


Part = tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]
"""Features, labels, whether the row is its search's first candidate, whether the catalog lacks the gold tool."""


def main() -> None:
    rows = [json.loads(line) for line in (DEFAULT_TRAIN_DIR / "argument_extraction.jsonl").open(encoding="utf-8")]
    usable = [r for r in rows if group_of(str(r["source"])) is not None]
    pool: dict[tuple[str, str], dict[str, Any]] = {}
    for row in usable:
        tool = cast(dict[str, Any], row["tool"])
        pool[(str(tool["server"]), str(tool["name"]))] = tool
    print(f"{len(usable)} requests from {len(pool)} tools (MIT/Apache sources)")
    full = make_backend("hybrid", use_cache=False)
    assert isinstance(full, HybridBackend)
    full.rebuild(_catalog(list(pool.values())))
    small = make_backend("hybrid", use_cache=False)
    assert isinstance(small, HybridBackend)
    keys = sorted(pool)
    chance = random.Random(23)
    parts: dict[str, tuple[list[list[float]], list[int], list[bool], list[bool]]] = {
        "train": ([], [], [], []),
        "validation": ([], [], [], []),
        "held out": ([], [], [], []),
    }
    for n, row in enumerate(usable):
        tool = cast(dict[str, Any], row["tool"])
        gold = (str(tool["server"]), str(tool["name"]))
        request = str(row["request"])
        part = (
            "held out"
            if group_of(str(row["source"])) == HELD_OUT
            else "validation"
            if is_validation(request)
            else "train"
        )
        others = chance.sample([k for k in keys if k[0] != gold[0]], SMALL)
        with_gold = [pool[gold], *(pool[k] for k in others[: SMALL - 1])]
        for catalog, absent in ((None, False), (with_gold, False), ([pool[k] for k in others], True)):
            backend = full
            if catalog is not None:
                small.rebuild(_catalog(catalog))
                backend = small
            features, labels = _examples(backend, request, gold)
            xs, ys, tops, absents = parts[part]
            xs.extend(features)
            ys.extend(labels)
            tops.extend(i == 0 for i in range(len(labels)))
            absents.extend(absent for _ in labels)
        if n % 500 == 0:
            print(f"  {n} requests", file=sys.stderr)
    arrays: dict[str, Part] = {
        name: (np.array(x, dtype=float), np.array(y, dtype=float), np.array(t, dtype=bool), np.array(a, dtype=bool))
        for name, (x, y, t, a) in parts.items()
    }
    x, y, _, _ = arrays["train"]
    w = fit(x, y)
    print("weights (relevance, lead, rule, semantic, intercept):", [round(float(v), 4) for v in w])
    for name, part_arrays in arrays.items():
        report(name, part_arrays, w)


if __name__ == "__main__":
    main()
