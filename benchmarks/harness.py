"""The harness every benchmark shares: timing, percentiles, bootstrap intervals, the machine line and JSON.

A benchmark prints its figures as prose and Markdown for docs/BENCHMARKS.md. Through this module it
also takes its times the same way (`Stopwatch`), cuts them the same way (`percentile`, `quartiles`),
puts the same 95% bootstrap interval on a mean (`bootstrap_interval`, `ratio_interval`), says which
machine it ran on in the same words (`machine_line`, `machine`) and hands its figures to the JSON
record (`record`). `python -m benchmarks NAME --json PATH` writes that record to PATH once the
benchmark is done: the machine, the command, each figure recorded, each Markdown table printed (as
rows of cells keyed by the table's header) and the whole printed text.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from toolscout.search.evaluation import bootstrap_interval, ratio_interval

__all__ = [
    "ROOT",
    "Stopwatch",
    "bootstrap_interval",
    "commit",
    "cores",
    "figures",
    "load",
    "machine",
    "machine_line",
    "markdown_tables",
    "percentile",
    "quartiles",
    "ratio_interval",
    "record",
    "today",
]

ROOT = Path(__file__).resolve().parent.parent
"""The repository the benchmarks run from."""


class Stopwatch:
    """A wall-clock timer for a block: `with Stopwatch() as watch: ...`, then `watch.seconds`.

    It reads `time.perf_counter`, the clock every benchmark times with, and `seconds` also reads the
    time so far while the block still runs.
    """

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.stopped: float | None = None

    def __enter__(self) -> Stopwatch:
        self.started = time.perf_counter()
        self.stopped = None
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stopped = time.perf_counter()

    @property
    def seconds(self) -> float:
        return (self.stopped if self.stopped is not None else time.perf_counter()) - self.started


def percentile(values: Sequence[float], share: float, *, rank: Literal["floor", "ceil", "round"] = "floor") -> float:
    """Return the value at `share` (0.9 for p90) of the sorted values, one of the values themselves.

    The rank is `int(share * n)` by default ("floor"), `ceil(share * n) - 1` with "ceil" (the textbook
    nearest rank) or `round(share * (n - 1))` with "round"; each benchmark keeps the rule its published
    figures were taken with, so that a new run compares with the old ones.
    """
    ordered = sorted(values)
    count = len(ordered)
    if rank == "ceil":
        index = max(0, math.ceil(count * share) - 1)
    elif rank == "round":
        index = round(share * (count - 1))
    else:
        index = int(share * count)
    return ordered[min(count - 1, index)]


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """Return the first quartile, the median and the third quartile (inclusive method).

    With fewer than two values there is nothing to cut, and the one value (or NaN) is all three.
    """
    if len(values) < 2:
        value = values[0] if values else math.nan
        return value, value, value
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def today() -> str:
    """Return today's date as the benchmarks print it (ISO, 2026-11-27)."""
    return str(date.today())


def cores() -> int:
    """Return how many CPU cores the machine has (0 when the system will not say)."""
    return os.cpu_count() or 0


def load() -> float:
    """Return the machine's one-minute load average, which says how busy it was while a figure was taken."""
    return os.getloadavg()[0]


def commit() -> str:
    """Return the short commit the repository is at, or "?" outside a git checkout."""
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return "?"
    return done.stdout.strip() or "?"


def machine_line() -> str:
    """Return the words most benchmarks use for the machine: cores, architecture and Python version."""
    return f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}"


def machine() -> dict[str, Any]:
    """Return the machine a run took its figures on, as the JSON record holds it."""
    return {
        "date": today(),
        "commit": commit(),
        "cores": cores(),
        "load": round(load(), 2),
        "arch": platform.machine(),
        "python": platform.python_version(),
        "platform": sys.platform,
    }


_figures: dict[str, Any] = {}


def record(name: str, value: Any) -> None:
    """Add one figure (a number, a string, or lists and dicts of them) to this run's JSON record.

    Recording the same name again replaces the value. Nothing is written unless the benchmark runs
    with `--json PATH`.
    """
    _figures[name] = value


def figures() -> dict[str, Any]:
    """Return the figures recorded so far in this process."""
    return dict(_figures)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def markdown_tables(text: str) -> list[dict[str, Any]]:
    """Return each Markdown table in `text`: the line before it as its title, and its rows as dicts.

    Each row maps the header's cells to the row's; a row with fewer cells than the header leaves the
    rest out. This is how the JSON record carries the figures of a benchmark that prints tables.
    """
    tables: list[dict[str, Any]] = []
    lines = text.splitlines()
    index = 0
    while index + 1 < len(lines):
        header, rule = lines[index].strip(), lines[index + 1].strip()
        if header.startswith("|") and rule.startswith("|") and set(rule) <= set("|-: "):
            title = next((line.strip() for line in reversed(lines[:index]) if line.strip()), "")
            columns = _cells(header)
            rows: list[dict[str, str]] = []
            index += 2
            while index < len(lines) and lines[index].strip().startswith("|"):
                rows.append(dict(zip(columns, _cells(lines[index]), strict=False)))
                index += 1
            tables.append({"title": title, "columns": columns, "rows": rows})
        else:
            index += 1
    return tables
