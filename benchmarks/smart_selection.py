"""Smart mode's fair hybrid: calibration of its confidence, the LLM's candidates, scripted LLMs.

    python -m benchmarks smart_selection [--eval-dir ../shared/eval] [--train-dir ../shared/train]
        [--queries 2000] [--bins 10]

1. Calibration of `confidence_score` offline (hybrid, no LLM: `smart.selection.choose` over the
   candidates `method_hits` gives, as `SmartDiscovery._select` asks for them): a reliability table
   (per confidence bin: how many top choices, their mean confidence, how often they are right) and
   the expected calibration error (ECE: the bin-weighted gap between confidence and accuracy), with
   a 95% bootstrap interval (queries resampled). On the training data: the argument-extraction
   requests of `../shared/train` (MIT/Apache sources only) searched in the catalog of all their
   tools, split as `scripts/fit_smart_confidence.py` splits them: the validation requests (one in
   ten, never fitted on) and the held-out source (ToolAlpaca); and on each dev set of
   `../shared/eval` (measured, never fitted on).
2. The threshold, calibrated on the training validation requests only: the lowest confidence from
   which the top choices are right more often than not (marginal precision, per bin, at least 0.5),
   against the default `confidenceThreshold`.
3. Recall of a right tool among the candidates the LLM sees (`max_llm_candidates`, 30), for several
   ways of choosing them: the search's fused ranking (`llm_candidates`, what ships), the best of the
   fused, rule and semantic rankings in turn (each method's own top 30 from the whole catalog), at
   most 5 tools per server (server diversity, from the fused top 90), and the fused first 60 (a
   larger budget). Paired differences to the first, with their intervals.
4. Scripted LLMs over the same candidates, in process (what `select_with_llm` would return): right
   (a relevant tool among those it sees, 0.9; none there: it declines), wrong and sure (the best
   irrelevant candidate it sees, 0.95), declining (no candidate fits), and failing (no answer). For
   each, at the default threshold: how often the right tool would run, a wrong one, or nothing;
   before (the fixed 45:55 sum over the first 30, a declined answer counting 0) and after (`choose`).

Intervals: 95% bootstrap (2,000 resamples of the queries). Nothing is fitted on the dev sets.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from benchmarks import harness, train_data
from benchmarks.search import DEFAULT_EVAL_DIR
from benchmarks.smart import DevSet, dev_sets, indexed
from toolscout.catalog import Catalog, CatalogTool
from toolscout.config.models import SmartConfig
from toolscout.search import make_backend
from toolscout.search.base import MethodHit, SearchBackend, method_hits
from toolscout.search.evaluation import LabelledQuery, bootstrap_interval
from toolscout.smart.selection import (
    CONFIDENT_SEARCH,
    LLMPick,
    choose,
    llm_candidates,
    search_confidence,
)

CONFIG = SmartConfig()
CANDIDATES = CONFIG.max_llm_candidates
THRESHOLD = CONFIG.confidence_threshold
Key = tuple[str, str]
Picker = Callable[[Sequence[MethodHit], frozenset[Key]], dict[Key, LLMPick] | None]


@dataclass
class Outcomes:
    """Per query: the top choice's confidence and whether it is right; what would run at the threshold."""

    confidence: list[float] = field(default_factory=list[float])
    right: list[float] = field(default_factory=list[float])
    sure: list[float] = field(default_factory=list[float])
    """1 where the search alone is sure (`CONFIDENT_SEARCH`) of a right tool."""

    def add(self, confidence: float, right: bool, sure: bool = False) -> None:
        self.confidence.append(confidence)
        self.right.append(1.0 if right else 0.0)
        self.sure.append(1.0 if sure else 0.0)

    def runs(self, threshold: float) -> tuple[list[float], list[float], list[float]]:
        """(right run, wrong run, nothing ran), one 0/1 per query."""
        ran = [1.0 if c >= threshold else 0.0 for c in self.confidence]
        return (
            [a * r for a, r in zip(ran, self.right, strict=True)],
            [a * (1 - r) for a, r in zip(ran, self.right, strict=True)],
            [1 - a for a in ran],
        )


def _mean(values: Sequence[float]) -> str:
    if not values:
        return "—"
    low, high = bootstrap_interval(values)
    return f"{statistics.fmean(values):.3f} ({low:.3f}–{high:.3f})"


def ece(confidence: np.ndarray[Any, Any], right: np.ndarray[Any, Any], bins: int) -> float:
    """The expected calibration error over `bins` equal-width confidence bins."""
    index = np.minimum((confidence * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        mask = index == b
        if mask.any():
            total += float(mask.mean()) * abs(float(confidence[mask].mean()) - float(right[mask].mean()))
    return total


def ece_interval(outcomes: Outcomes, bins: int, resamples: int = 2000) -> str:
    confidence = np.asarray(outcomes.confidence, dtype=float)
    right = np.asarray(outcomes.right, dtype=float)
    if not confidence.size:
        return "—"
    rng = np.random.default_rng(0)
    draws = [ece(confidence[s], right[s], bins) for s in rng.integers(0, confidence.size, (resamples, confidence.size))]
    low, high = np.percentile(draws, [2.5, 97.5])
    return f"{ece(confidence, right, bins):.3f} ({low:.3f}–{high:.3f})"


def reliability(name: str, outcomes: Outcomes, bins: int) -> list[str]:
    lines = [f"| {name}: confidence bin | top choices | mean confidence | right (accuracy) |", "|---|---|---|---|"]
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        members = [
            (c, r)
            for c, r in zip(outcomes.confidence, outcomes.right, strict=True)
            if low <= c < high or (b == bins - 1 and c == 1.0)
        ]
        if not members:
            continue
        mean_confidence = statistics.fmean(c for c, _ in members)
        lines.append(
            f"| {low:.1f}–{high:.1f} | {len(members):,} | {mean_confidence:.3f} | {_mean([r for _, r in members])} |"
        )
    return lines


def calibrated_threshold(outcomes: Outcomes, bins: int) -> float:
    """The lowest bin edge from which every bin's top choices are right at least half the time."""
    edge = 1.0
    for b in reversed(range(bins)):
        low, high = b / bins, (b + 1) / bins
        members = [r for c, r in zip(outcomes.confidence, outcomes.right, strict=True) if low <= c < high or c == high]
        if members and statistics.fmean(members) < 0.5:
            break
        edge = low
    return edge


# Scripted LLMs: each sees the candidates and the query's relevant tools, and answers as `select_with_llm` would.


def right_llm(shown: Sequence[MethodHit], relevant: frozenset[Key]) -> dict[Key, LLMPick] | None:
    for hit in shown:
        if (hit.tool.server, hit.tool.name) in relevant:
            return {(hit.tool.server, hit.tool.name): LLMPick(0.9, "right")}
    return {}  # the right tool is not among those it sees: it says none fits


def wrong_llm(shown: Sequence[MethodHit], relevant: frozenset[Key]) -> dict[Key, LLMPick] | None:
    for hit in shown:
        if (hit.tool.server, hit.tool.name) not in relevant:
            return {(hit.tool.server, hit.tool.name): LLMPick(0.95, "wrong")}
    return {}


def declining_llm(shown: Sequence[MethodHit], relevant: frozenset[Key]) -> dict[Key, LLMPick] | None:
    return {}


def failing_llm(shown: Sequence[MethodHit], relevant: frozenset[Key]) -> dict[Key, LLMPick] | None:
    return None


LLMS: dict[str, Picker] = {
    "right (0.9)": right_llm,
    "wrong and sure (0.95)": wrong_llm,
    "declines": declining_llm,
    "fails": failing_llm,
}


def before_top(hits: Sequence[MethodHit], picks: Mapping[Key, LLMPick] | None) -> tuple[Key, float]:
    """The fixed 45:55 sum the hybrid used before: the LLM's share 0 for a tool it did not pick or
    when it declined; without an answer (failed), the search's chance alone."""
    searched = search_confidence(hits)
    scored: list[tuple[Key, float]] = []
    for hit, search in zip(hits, searched, strict=True):
        key = (hit.tool.server, hit.tool.name)
        llm = picks[key].confidence if picks is not None and key in picks else 0.0
        scored.append((key, search if picks is None else 0.45 * search + 0.55 * llm))
    return max(scored, key=lambda item: item[1])


CHOICES = ("fused top 30 (shipped)", "rule/semantic/fused in turn", "≤ 5 per server", "fused top 60")


def _key(hit: MethodHit) -> Key:
    return (hit.tool.server, hit.tool.name)


def in_turn(rankings: Sequence[Sequence[MethodHit]], limit: int) -> list[MethodHit]:
    """The best of each ranking in turn, each tool once, at most `limit`."""
    chosen: list[MethodHit] = []
    seen: set[Key] = set()
    for depth in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if depth < len(ranking) and _key(ranking[depth]) not in seen and len(chosen) < limit:
                seen.add(_key(ranking[depth]))
                chosen.append(ranking[depth])
    return chosen


def per_server(hits: Sequence[MethodHit], limit: int, most: int = 5) -> list[MethodHit]:
    """The fused ranking with at most `most` tools of one server first, then the rest in order."""
    counts: dict[str, int] = {}
    first: list[MethodHit] = []
    for hit in hits:
        if counts.get(hit.tool.server, 0) < most:
            counts[hit.tool.server] = counts.get(hit.tool.server, 0) + 1
            first.append(hit)
    return (first + [h for h in hits if h not in first])[:limit]


@dataclass
class Measured:
    """One query set's outcomes."""

    offline: Outcomes = field(default_factory=Outcomes)
    recall: dict[str, list[float]] = field(default_factory=dict[str, list[float]])
    llms: dict[str, tuple[Outcomes, Outcomes]] = field(default_factory=dict[str, tuple[Outcomes, Outcomes]])


def measure(backend: SearchBackend, queries: Sequence[LabelledQuery], *, with_llms: bool) -> Measured:
    measured = Measured()
    for query in queries:
        relevant = query.relevant
        hits = method_hits(backend, query.text, limit=CANDIDATES, method="hybrid")
        offline = choose(hits, mode="hybrid", weights=CONFIG.weights)
        measured.offline.add(offline[0].confidence if offline else 0.0, bool(offline) and offline[0].key in relevant)
        if not with_llms:
            continue
        pool = method_hits(backend, query.text, limit=CANDIDATES * 3, method="hybrid")
        rule = method_hits(backend, query.text, limit=CANDIDATES, method="rule")
        semantic = method_hits(backend, query.text, limit=CANDIDATES, method="semantic")
        shown = llm_candidates(hits, CANDIDATES)
        ways = (
            shown,
            in_turn([hits, rule, semantic], CANDIDATES),
            per_server(pool, CANDIDATES),
            pool[: 2 * CANDIDATES],
        )
        for way, candidates in zip(CHOICES, ways, strict=True):
            measured.recall.setdefault(way, []).append(float(any(_key(h) in relevant for h in candidates)))
        searched = search_confidence(hits)
        top = max(range(len(hits)), key=lambda i: searched[i]) if hits else None
        sure = (
            top is not None
            and searched[top] >= CONFIDENT_SEARCH
            and (hits[top].tool.server, hits[top].tool.name) in relevant
        )
        for name, picker in LLMS.items():
            before, after = measured.llms.setdefault(name, (Outcomes(), Outcomes()))
            if hits:
                key, confidence = before_top(hits, picker(shown, relevant))
                before.add(confidence, key in relevant, sure)
            else:
                before.add(0.0, False)
            choices = choose(hits, mode="hybrid", weights=CONFIG.weights, llm=picker(shown, relevant))
            after.add(choices[0].confidence if choices else 0.0, bool(choices) and choices[0].key in relevant, sure)
    return measured


def train_sets(train_dir: Path) -> tuple[list[CatalogTool], dict[str, list[LabelledQuery]]]:
    """The catalog of every usable argument-extraction tool, and its validation and held-out requests."""
    rows = [
        cast(dict[str, Any], json.loads(line))
        for line in (train_dir / "argument_extraction.jsonl").open(encoding="utf-8")
    ]
    usable = [r for r in rows if train_data.group_of(str(r["source"])) is not None]
    pool: dict[Key, dict[str, Any]] = {}
    for row in usable:
        tool = cast(dict[str, Any], row["tool"])
        pool.setdefault((str(tool["server"]), str(tool["name"])), tool)
    catalog = Catalog()
    by_server: dict[str, list[Any]] = {}
    import mcp_types as types

    for (server, name), tool in pool.items():
        by_server.setdefault(server, []).append(
            types.Tool(name=name, description=tool.get("description"), input_schema=tool["input_schema"])
        )
    for server, listed in by_server.items():
        catalog.set_server_tools(server, listed)
    parts: dict[str, list[LabelledQuery]] = {"train validation": [], "train held out (ToolAlpaca)": []}
    for row in usable:
        tool = cast(dict[str, Any], row["tool"])
        gold = frozenset({(str(tool["server"]), str(tool["name"]))})
        request = str(row["request"])
        if train_data.group_of(str(row["source"])) == train_data.HELD_OUT:
            parts["train held out (ToolAlpaca)"].append(LabelledQuery(request, gold))
        elif train_data.is_validation(request):
            parts["train validation"].append(LabelledQuery(request, gold))
    return catalog.tools(), parts


def report(results: Mapping[str, Measured], bins: int, threshold: float) -> list[str]:
    lines = [
        "Calibration of the offline hybrid's confidence (top choice per query):",
        "",
        "| query set | queries | mean confidence | right (accuracy) | ECE |",
        "|---|---|---|---|---|",
    ]
    for name, m in results.items():
        lines.append(
            f"| {name} | {len(m.offline.right):,} | {statistics.fmean(m.offline.confidence):.3f} "
            f"| {_mean(m.offline.right)} | {ece_interval(m.offline, bins)} |"
        )
    for name, m in results.items():
        lines += ["", *reliability(name, m.offline, bins)]
    lines += [
        "",
        f"Threshold calibrated on the train validation requests: {threshold:.2f} (default {THRESHOLD:.2f}).",
        "",
        "| query set | threshold | runs right | runs wrong | nothing runs |",
        "|---|---|---|---|---|",
    ]
    for name, m in results.items():
        for t in sorted({THRESHOLD, threshold}):
            good, bad, none = m.offline.runs(t)
            lines.append(f"| {name} | {t:.2f} | {_mean(good)} | {_mean(bad)} | {_mean(none)} |")
    dev = {name: m for name, m in results.items() if m.recall}
    if dev:
        lines += [
            "",
            f"Recall of a right tool among the {CANDIDATES} candidates the LLM sees:",
            "",
            "| dev set | queries | candidates | recall | Δ vs shipped (paired) |",
            "|---|---|---|---|---|",
        ]
        for name, m in dev.items():
            base = m.recall[CHOICES[0]]
            for way, values in m.recall.items():
                diff = [a - b for a, b in zip(values, base, strict=True)]
                low, high = bootstrap_interval(diff)
                delta = "—" if way == CHOICES[0] else f"{statistics.fmean(diff):+.3f} ({low:+.3f}…{high:+.3f})"
                lines.append(f"| {name} | {len(values):,} | {way} | {_mean(values)} | {delta} |")
        lines += [
            "",
            f"Scripted LLMs at threshold {THRESHOLD:.2f}: before (45:55 sum) and after (pooled, `choose`):",
            "",
            "| dev set | LLM | combination | runs right | runs wrong | nothing runs "
            "| runs wrong where the search is sure and right | ECE |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name, m in dev.items():
            for llm, pair in m.llms.items():
                for label, outcomes in zip(("before", "after"), pair, strict=True):
                    good, bad, none = outcomes.runs(THRESHOLD)
                    guarded = [b for b, g in zip(bad, outcomes.sure, strict=True) if g]
                    lines.append(
                        f"| {name} | {llm} | {label} | {_mean(good)} | {_mean(bad)} | {_mean(none)} "
                        f"| {_mean(guarded)} of {len(guarded):,} "
                        f"| {ece_interval(outcomes, bins, resamples=500)} |"
                    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    parser.add_argument("--train-dir", type=Path, default=train_data.DEFAULT_TRAIN_DIR)
    parser.add_argument("--queries", type=int, default=2000, help="At most this many queries of each dev set.")
    parser.add_argument("--bins", type=int, default=10)
    args = parser.parse_args()
    results: dict[str, Measured] = {}
    with tempfile.TemporaryDirectory(prefix="smart-selection-") as scratch:
        started = time.perf_counter()
        tools, parts = train_sets(args.train_dir)
        backend = make_backend("hybrid", cache_dir=Path(scratch) / "train")
        backend.rebuild(tools)
        for name, queries in parts.items():
            results[name] = measure(backend, queries, with_llms=False)
        print(f"[train: {len(tools):,} tools in {time.perf_counter() - started:.0f} s]", file=sys.stderr)
        devs: list[DevSet] = dev_sets(args.eval_dir, args.queries)
        for dev in devs:
            started = time.perf_counter()
            results[f"dev {dev.name}"] = measure(indexed(dev, Path(scratch) / dev.name), dev.queries, with_llms=True)
            print(
                f"[{dev.name}: {len(dev.queries):,} queries in {time.perf_counter() - started:.0f} s]", file=sys.stderr
            )
    threshold = calibrated_threshold(results["train validation"].offline, args.bins)
    for name, m in results.items():
        harness.record(
            f"{name}: ECE", round(ece(np.asarray(m.offline.confidence), np.asarray(m.offline.right), args.bins), 4)
        )
        for way, values in m.recall.items():
            harness.record(f"{name}: LLM candidate recall, {way}", round(statistics.fmean(values), 4))
    harness.record("threshold calibrated on train", threshold)
    print("\n".join(report(results, args.bins, threshold)))


if __name__ == "__main__":
    main()
