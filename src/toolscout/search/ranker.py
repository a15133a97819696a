"""The learned ranker: scores candidate tools from their features (`features`), with weights from `model/ranker.json`.

The weights are fitted by `scripts/train_ranker.py` on the train split of `../shared/train` (a dev
step that may use torch); scoring is numpy only. A model is a linear scorer over standardised
features, optionally plus a small ReLU layer, and a logistic calibration that turns its score into
the chance that the tool is one the query needs (fitted on the validation split).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

import numpy as np

from toolscout.search.features import names_of

RANKER_FILE = Path(__file__).resolve().parent / "model" / "ranker.json"
Matrix = np.ndarray[Any, np.dtype[np.float32]]


class RankerError(ValueError):
    """A ranker file that cannot be used, and why."""


@dataclass(frozen=True)
class Ranker:
    """One fitted scorer: `score` ranks candidates, `relevance` calibrates a score to a probability."""

    features: tuple[str, ...]
    mean: Matrix
    scale: Matrix
    weights: Matrix
    bias: float
    hidden: Matrix | None  # (features, units) or None
    hidden_bias: Matrix | None
    output: Matrix | None  # (units,)
    slope: float
    intercept: float

    def score(self, features: Matrix) -> Matrix:
        x = (features - self.mean) / self.scale
        out = x @ self.weights + self.bias
        if self.hidden is not None and self.hidden_bias is not None and self.output is not None:
            out = out + np.maximum(x @ self.hidden + self.hidden_bias, 0.0) @ self.output
        return out.astype(np.float32)

    def relevance(self, scores: Matrix) -> Matrix:
        z = np.clip(self.slope * scores + self.intercept, -30.0, 30.0)
        return (1.0 / (1.0 + np.exp(-z))).astype(np.float32)


def _vector(spec: Mapping[str, Any], key: str, size: int, where: str) -> Matrix:
    value = np.asarray(spec.get(key), dtype=np.float32)
    if value.shape != (size,) or not np.all(np.isfinite(value)):
        raise RankerError(f"{where}: '{key}' must be {size} finite numbers")
    return value


def parse_ranker(spec: Mapping[str, Any], where: str, *, dense: bool) -> Ranker:
    """One model of a ranker file, checked against the features this version computes."""
    features = tuple(str(f) for f in cast(list[Any], spec.get("features") or []))
    expected = names_of(dense)
    if features != expected:
        raise RankerError(f"{where}: features {list(features)} are not the ones this version computes {list(expected)}")
    n = len(features)
    mean, scale = _vector(spec, "mean", n, where), _vector(spec, "scale", n, where)
    if np.any(scale <= 0):
        raise RankerError(f"{where}: 'scale' must be positive")
    hidden = hidden_bias = output = None
    if spec.get("hidden") is not None:
        hidden = np.asarray(spec["hidden"], dtype=np.float32)
        if hidden.ndim != 2 or hidden.shape[0] != n or not np.all(np.isfinite(hidden)):
            raise RankerError(f"{where}: 'hidden' must be a finite {n} x units matrix")
        hidden_bias = _vector(spec, "hidden_bias", hidden.shape[1], where)
        output = _vector(spec, "output", hidden.shape[1], where)
    try:
        bias, slope, intercept = (float(spec[k]) for k in ("bias", "slope", "intercept"))
    except (KeyError, TypeError, ValueError):
        raise RankerError(f"{where}: needs numbers 'bias', 'slope' and 'intercept'") from None
    if slope <= 0:
        raise RankerError(f"{where}: 'slope' must be positive (a higher score is a likelier tool)")
    return Ranker(
        features, mean, scale, _vector(spec, "weights", n, where), bias, hidden, hidden_bias, output, slope, intercept
    )


def load_rankers(path: Path = RANKER_FILE) -> dict[str, Ranker]:
    """The models of a ranker file by name: `lexical` (BM25 only) and `static` (with the packaged embeddings)."""
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RankerError(f"cannot read the ranker {path}: {exc}") from None
    models: Any = cast(dict[str, Any], raw).get("models") if isinstance(raw, dict) else None
    if not isinstance(models, dict) or not models:
        raise RankerError(f"{path}: no 'models' object")
    out: dict[str, Ranker] = {}
    for name, spec in cast(dict[str, Any], models).items():
        if not isinstance(spec, dict):
            raise RankerError(f"{path}: model {name!r} is not an object")
        out[name] = parse_ranker(cast(dict[str, Any], spec), f"{path} model {name!r}", dense=name != "lexical")
    if "lexical" not in out:
        raise RankerError(f"{path}: no 'lexical' model (the search without embeddings needs one)")
    return out


@lru_cache(maxsize=1)
def packaged_rankers() -> dict[str, Ranker]:
    """The rankers shipped with toolscout (loaded once)."""
    return load_rankers()
