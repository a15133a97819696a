"""Parameter mapping without an LLM: `smart` mode's extractor on `../shared/train/argument_extraction.jsonl`.

    python -m benchmarks smart_extraction [--train-dir ../shared/train] [--examples 0]

Each row is a request, a tool (with its input schema) and the arguments a person (or the source's
gold call) gave. For every row the extractor (`toolscout.smart.extraction.extract_arguments`) maps the request
to arguments, and this prints, per source and overall, with 95% bootstrap intervals (rows resampled):

* exact: the whole argument object equals the gold one (strings compared case- and space-blind;
  BFCL rows accept any of their listed values, and leaving out a parameter BFCL lets be left out);
* precision and recall per argument;
* of the gold arguments the request does not state word for word (a ticker for "Apple", "23:00"
  for "11PM"), how often the extractor reports the parameter missing (right: never invent) and how
  often it gives a value instead, and how often any value it gives is wrong (invented).

The extractor is hand-written, nothing is fitted on these rows; they measure it.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from benchmarks import harness, train_data
from toolscout.search.evaluation import bootstrap_interval, ratio_interval
from toolscout.smart.extraction import extract_arguments


def _same(value: Any, gold: Any) -> bool:
    if isinstance(gold, str) and isinstance(value, str):
        return " ".join(value.lower().split()) == " ".join(gold.lower().split())
    if isinstance(gold, bool) or isinstance(value, bool):
        return value is gold
    if isinstance(gold, int | float) and isinstance(value, int | float):
        return float(value) == float(gold)
    return value == gold


def _stated(gold: Any, request: str) -> bool:
    """Whether the gold value is written in the request as it is (so an extractor could copy it)."""
    if isinstance(gold, bool):
        return False
    text = gold if isinstance(gold, str) else json.dumps(gold) if not isinstance(gold, int | float) else str(gold)
    if isinstance(gold, float) and gold.is_integer():
        text = str(int(gold))
    return bool(text) and text.lower() in request.lower()


@dataclass(frozen=True)
class RowScore:
    """One row's counts: whether the object is exact, values right / given / in the gold call, and so on."""

    exact: bool
    right: int
    given: int
    gold: int
    unstated_missing: int
    unstated_given: int
    shown: dict[str, Any]


@dataclass
class Tally:
    """Counts per row, for the means and their intervals."""

    exact: list[float] = field(default_factory=list[float])
    right: list[int] = field(default_factory=list[int])
    given: list[int] = field(default_factory=list[int])
    gold: list[int] = field(default_factory=list[int])
    unstated_missing: int = 0
    unstated_given: int = 0

    def add(self, row: RowScore) -> None:
        self.exact.append(1.0 if row.exact else 0.0)
        self.right.append(row.right)
        self.given.append(row.given)
        self.gold.append(row.gold)
        self.unstated_missing += row.unstated_missing
        self.unstated_given += row.unstated_given


def row_schema(row: dict[str, Any]) -> dict[str, Any]:
    """The input schema of a row's tool (an empty one when it has none)."""
    return cast(dict[str, Any], cast(dict[str, Any], row["tool"]).get("input_schema") or {})


def score_row(row: dict[str, Any]) -> RowScore:
    """The extractor's arguments for one row, scored."""
    found = extract_arguments(str(row["request"]), row_schema(row))
    return score_arguments(row, found.arguments, found.missing_required)


def score_arguments(row: dict[str, Any], arguments: Mapping[str, Any], missing: Sequence[str]) -> RowScore:
    """Any mapper's `arguments` (and the required parameters it reports `missing`) for one row, scored."""
    request = str(row["request"])
    gold = cast(dict[str, Any], row["arguments"])
    accepted = cast(dict[str, list[Any]] | None, row.get("arguments_accepted"))

    def right(name: str, value: Any) -> bool:
        if accepted is not None and name in accepted:
            return any(_same(value, option) for option in accepted[name] if option != "")
        return name in gold and _same(value, gold[name])

    hits = sum(1 for name, value in arguments.items() if right(name, value))
    optional = {n for n, options in (accepted or {}).items() if "" in options}
    complete = all(n in arguments and right(n, arguments[n]) for n in gold if n not in optional)
    unstated = [name for name, value in gold.items() if not _stated(value, request)]
    given_unstated = sum(1 for name in unstated if name in arguments)
    return RowScore(
        exact=complete and hits == len(arguments),
        right=hits,
        given=len(arguments),
        gold=len(gold),
        unstated_missing=len(unstated) - given_unstated,
        unstated_given=given_unstated,
        shown={"request": request, "gold": gold, "found": dict(arguments), "missing": list(missing)},
    )


def load_rows(train_dir: Path) -> list[dict[str, Any]]:
    """The rows of `argument_extraction.jsonl` in `train_dir`, in file order."""
    path = train_dir / "argument_extraction.jsonl"
    if not path.is_file():
        raise SystemExit(f"{path} not found: pass --train-dir (the folder of ../shared/train)")
    return [cast(dict[str, Any], json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]


def source_group(row: dict[str, Any]) -> str:
    """The source a row is reported under (SGD's and BFCL's sub-sets pooled)."""
    source = str(row["source"])
    return "sgd" if source.startswith("sgd") else "bfcl" if source.startswith("bfcl") else source


TABLE_HEADER = (
    "| source | rows | exact match | precision | recall | unstated gold value reported missing | wrong values |",
    "|---|---|---|---|---|---|---|",
)


def table(rows: Sequence[dict[str, Any]], scores: Sequence[RowScore]) -> list[str]:
    """The table rows (per source, then `all`) of `scores`, one per row of `rows`."""
    by_source: dict[str, Tally] = defaultdict(Tally)
    overall = Tally()
    for row, scored in zip(rows, scores, strict=True):
        by_source[source_group(row)].add(scored)
        overall.add(scored)
    return [_line(name, by_source[name]) for name in sorted(by_source)] + [_line("all", overall)]


def ratio_text(numerators: Sequence[float], denominators: Sequence[float]) -> str:
    """The pooled ratio and its 95% bootstrap interval (rows resampled), or n/a without a denominator."""
    if not sum(denominators):
        return "n/a"
    ratio, low, high = ratio_interval(numerators, denominators)
    return f"{ratio:.3f} ({low:.3f}–{high:.3f})"


def _line(name: str, t: Tally) -> str:
    low, high = bootstrap_interval(t.exact)
    unstated = t.unstated_missing + t.unstated_given
    missing = f"{t.unstated_missing / unstated:.3f} of {unstated}" if unstated else "n/a"
    return (
        f"| {name} | {len(t.exact)} | {statistics.fmean(t.exact):.3f} ({low:.3f}–{high:.3f}) "
        f"| {ratio_text(t.right, t.given)} | {ratio_text(t.right, t.gold)} | {missing} "
        f"| {sum(t.given) - sum(t.right)} of {sum(t.given)} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--train-dir", type=Path, default=train_data.DEFAULT_TRAIN_DIR)
    parser.add_argument("--examples", type=int, default=0, help="Print this many rows the extractor got wrong.")
    args = parser.parse_args()
    rows = load_rows(args.train_dir)
    scores = [score_row(row) for row in rows]
    lines = table(rows, scores)
    harness.record("rows", len(rows))
    print("\n".join((*TABLE_HEADER, *lines)))
    for miss in [s.shown for s in scores if not s.exact][: args.examples]:
        print(json.dumps(miss, ensure_ascii=False))
