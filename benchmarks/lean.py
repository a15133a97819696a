"""Every row of the "lean and quick" table in one run: memory, start-up, the command line's latency,
answer tokens, the gateway's CPU and added time per proxied call, and search at 50,000 tools.

    python -m benchmarks lean [--compare SRC] [--quick] [--only memory,cli_latency,...] [--eval-dir DIR]

It runs the benchmarks that measure each row, one child process each (`python -m benchmarks NAME
--json FILE`, so one that fails is reported and the others still run), prints each one's own
output, and then one table: each row's figure, its goal and whether it is met, with the machine
and the load average before and after.

* `memory` (10,000 tools): the gateway's resident memory after the first search with no servers,
  with 10,000 tools on 1,327 servers and on 100 servers, and the first search's time at 10,000
  tools from a cold embedding cache.
* `cli_latency`: `config validate`, `search`, `tokens`, `smart --suggestions 3` and `execute`
  with the stored catalog of the four demo servers (median wall time).
* `answer_tokens` (10,000 tools): the median tokens of a 5- and a 10-result `search_tools`
  answer and of one tool's `get_tool_details`, for short queries.
* `proxy_latency`: the CPU time `toolscout serve --transport http` spends per proxied call (one
  process serving both eras, from /proc), and `execute_tool`'s added time against the SDK's bare
  proxy in every transport and era.
* `search_scale` (50,000 tools): hybrid search p50, the index's memory a tool and its cold build.

`--compare SRC`: the before and after in the same run. SRC holds another tree's `toolscout` package
(a checkout's `src/`, e.g. of the previous main from `git worktree add`). `cli_latency` alternates
the two trees command by command itself (its own `--compare`); each of the others runs once for
this tree and then once more with SRC first on `PYTHONPATH`, which the gateway processes it starts
inherit, so the two runs follow each other on the same machine. `--quick` runs fewer repetitions
(for trying the command out; the figures are noisier).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import harness
from benchmarks.search import DEFAULT_EVAL_DIR

ROOT = Path(__file__).resolve().parent.parent
TEN_K_COPIED = "10,000 tools, LiveMCPTool copied"
TEN_K_PACKED = "10,000 tools, 100 servers"
SHORT_QUERIES = "10000/short (tool names as words)"
ERAS = ("2025-11-25", "2026-07-28")
TRANSPORTS = ("stdio", "http")

Figures = dict[str, Any]


@dataclass(frozen=True)
class Step:
    """One benchmark run for the table, with its options (full and `--quick`)."""

    name: str
    args: tuple[str, ...]
    quick: tuple[str, ...]
    own_compare: bool = False
    """Whether the benchmark alternates the two trees itself (`--compare SRC`)."""


STEPS = (
    Step("memory", ("--tools", "10000"), ("--tools", "10000")),
    Step("cli_latency", ("--runs", "5"), ("--runs", "2"), own_compare=True),
    Step("answer_tokens", ("--sizes", "10000"), ("--sizes", "10000")),
    Step("proxy_latency", ("--calls", "1000", "--calls-2026", "400"), ("--calls", "200", "--calls-2026", "100")),
    Step("search_scale", ("--tools", "50000", "--queries", "300"), ("--tools", "50000", "--queries", "60")),
)


@dataclass(frozen=True)
class Row:
    """One row of the table: where its figure is in a benchmark's record, and its goal."""

    measure: str
    step: str
    figure: Callable[[Figures, str], float]
    """The figure from the benchmark's recorded figures; the second argument is the label suffix
    `cli_latency` gives the compared tree's rows ("" for this tree's)."""
    unit: str
    goal: float | None
    """The most the figure may be (None: reported beside another row's goal)."""


def _cli(scenario: str) -> Callable[[Figures, str], float]:
    return lambda f, suffix: float(f[f"wall s/{scenario}{suffix}"])


def _added_over_bare(figures: Figures, era: str, transport: str) -> float:
    ours = float(figures[f"added ms/{era}/{transport}/toolscout execute_tool"])
    return ours - float(figures[f"added ms/{era}/{transport}/bare SDK proxy"])


ROWS: tuple[Row, ...] = (
    Row("RSS, idle, no servers", "memory", lambda f, _: f["idle, no servers"]["searched_mib"], "MiB", 80),
    Row(
        "RSS, 10,000 tools on 1,327 HTTP servers, after a search",
        "memory",
        lambda f, _: f[TEN_K_COPIED]["searched_mib"],
        "MiB",
        200,
    ),
    Row("RSS, 10,000 tools on 100 servers", "memory", lambda f, _: f[TEN_K_PACKED]["searched_mib"], "MiB", 150),
    Row(
        "first search at 10,000 tools, cold embedding cache",
        "memory",
        lambda f, _: f[TEN_K_COPIED]["first_search_s"],
        "s",
        1.0,
    ),
    Row("`toolscout config validate`", "cli_latency", _cli("the config file alone: config validate"), "s", 0.35),
    Row("`toolscout search`, stored catalog", "cli_latency", _cli("warm catalog"), "s", 0.35),
    Row("`toolscout smart --suggestions 3`", "cli_latency", _cli("warm catalog: smart --suggestions 3"), "s", 0.5),
    Row("`toolscout tokens`", "cli_latency", _cli("warm catalog: tokens"), "s", 0.5),
    Row("`toolscout execute` (starts one server)", "cli_latency", _cli("warm catalog: execute units"), "s", None),
    Row(
        "tokens of a 5-result search answer, 10,000 tools, median",
        "answer_tokens",
        lambda f, _: f[SHORT_QUERIES]["search 5"],
        "tokens",
        200,
    ),
    Row(
        "tokens of a 10-result search answer, median",
        "answer_tokens",
        lambda f, _: f[SHORT_QUERIES]["search 10"],
        "tokens",
        None,
    ),
    Row(
        "tokens of one tool's details, median",
        "answer_tokens",
        lambda f, _: f[SHORT_QUERIES]["details"],
        "tokens",
        120,
    ),
    Row(
        "gateway CPU per proxied call over HTTP (both eras)",
        "proxy_latency",
        lambda f, _: f["cpu ms a call/http/toolscout execute_tool"],
        "ms",
        2.0,
    ),
    Row(
        "the SDK's bare proxy, CPU per call over HTTP",
        "proxy_latency",
        lambda f, _: f["cpu ms a call/http/bare SDK proxy"],
        "ms",
        None,
    ),
    *(
        Row(
            f"`execute_tool` added time − the bare proxy's, {transport} {era}",
            "proxy_latency",
            lambda f, _, era=era, transport=transport: _added_over_bare(f, era, transport),
            "ms",
            0.0,
        )
        for era in ERAS
        for transport in TRANSPORTS
    ),
    Row("hybrid search at 50,000 tools, p50", "search_scale", lambda f, _: f["50000"]["p50_ms"], "ms", 3.0),
    Row("index at 50,000 tools, a tool", "search_scale", lambda f, _: f["50000"]["index_kib_a_tool"], "KiB", 3.0),
    Row("cold build at 50,000 tools", "search_scale", lambda f, _: f["50000"]["cold_s"], "s", 3.0),
)


@dataclass
class Outcome:
    """What one child run left: its figures (empty when it failed), how long it took, and what it said."""

    command: str
    seconds: float
    figures: Figures
    failure: str = ""


def run_step(
    step: Step, quick: bool, eval_dir: Path, scratch: Path, source: Path | None, compare: Path | None
) -> Outcome:
    """Run `step`'s benchmark as a child (with `source` first on PYTHONPATH when given) and read its record."""
    record = scratch / f"{step.name}-{'before' if source else 'after'}.json"
    args = [*(step.quick if quick else step.args)]
    if step.name in {"memory", "answer_tokens", "search_scale"}:
        args += ["--eval-dir", str(eval_dir)]
    if step.own_compare and compare is not None:
        args += ["--compare", str(compare)]
    command = [sys.executable, "-m", "benchmarks", step.name, "--json", str(record), *args]
    env = {**os.environ}
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(source), str(ROOT)])
    shown = ("PYTHONPATH=" + str(source) + " " if source else "") + "python -m benchmarks " + " ".join(command[3:])
    print(f"\n<!-- {shown} -->\n", flush=True)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, text=True, capture_output=True, check=False)
    seconds = time.perf_counter() - started
    print(done.stdout, flush=True)
    if done.returncode != 0 or not record.exists():
        return Outcome(shown, seconds, {}, f"exit {done.returncode}: {done.stderr.strip()[-1500:]}")
    return Outcome(shown, seconds, json.loads(record.read_text(encoding="utf-8"))["figures"])


def _value(row: Row, outcome: Outcome | None, suffix: str = "") -> float | None:
    if outcome is None or not outcome.figures:
        return None
    try:
        return float(row.figure(outcome.figures, suffix))
    except KeyError:
        return None


def _shown(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    digits = 0 if unit in {"tokens", "MiB"} else 2
    return f"{value:.{digits}f} {unit}"


def table(
    rows: Sequence[Row], after: dict[str, Outcome], before: dict[str, Outcome], compare: Path | None
) -> list[str]:
    """The Markdown table of every row: before (with --compare), now, the goal and whether it is met."""
    header = "| measure | " + ("before | " if compare else "") + "now | goal | met |"
    lines = [header, "|---|" + ("---|" if compare else "") + "---|---|---|"]
    for row in rows:
        now = _value(row, after.get(row.step))
        if compare is None:
            then = None
        elif row.step == "cli_latency":  # the compared tree's rows, from the same run
            then = _value(row, after.get(row.step), f" ({compare})")
        else:
            then = _value(row, before.get(row.step))
        goal = "—" if row.goal is None else f"≤ {row.goal:g} {row.unit}"
        met = "—" if row.goal is None or now is None else ("met" if now <= row.goal else "missed")
        harness.record(row.measure, {"now": now, "before": then, "goal": row.goal, "unit": row.unit})
        cells = [row.measure, *([_shown(then, row.unit)] if compare else []), _shown(now, row.unit), goal, met]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--compare", type=Path, default=None, help="another tree's src/: its figures beside these")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (noisier figures)")
    parser.add_argument("--only", default="", help="comma-separated benchmarks to run (default: all five)")
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    args = parser.parse_args()
    compare: Path | None = args.compare.resolve() if args.compare else None
    if compare is not None and not (compare / "toolscout").is_dir():
        raise SystemExit(f"--compare {compare}: no toolscout package there (give a tree's src/ directory)")
    chosen = {name.strip() for name in str(args.only).split(",") if name.strip()}
    unknown = chosen - {step.name for step in STEPS}
    if unknown:
        raise SystemExit(f"--only: no such step {', '.join(sorted(unknown))}; the steps: {[s.name for s in STEPS]}")
    steps = [step for step in STEPS if not chosen or step.name in chosen]
    load_before = os.getloadavg()
    started = time.perf_counter()
    after: dict[str, Outcome] = {}
    before: dict[str, Outcome] = {}
    with tempfile.TemporaryDirectory(prefix="toolscout-lean-") as scratch:
        for step in steps:
            after[step.name] = run_step(step, args.quick, args.eval_dir, Path(scratch), None, compare)
            if compare is not None and not step.own_compare:
                before[step.name] = run_step(step, args.quick, args.eval_dir, Path(scratch), compare, compare)
    took = time.perf_counter() - started
    load_after = os.getloadavg()

    print(f"## Lean and quick: every row in one run — {harness.today()}")
    print()
    print(
        "`python -m benchmarks lean"
        + (f" --compare {compare}" if compare else "")
        + (" --quick" if args.quick else "")
        + (f" --only {args.only}" if chosen else "")
        + f"`; {harness.machine_line()}, commit {harness.commit()}; load average {load_before[0]:.1f} before, "
        f"{load_after[0]:.1f} after; {took / 60:.0f} minutes." + (f" Before: {compare}." if compare else "")
    )
    print()
    rows = [row for row in ROWS if row.step in after]
    for line in table(rows, after, before, compare):
        print(line)
    print()
    for outcome in [*after.values(), *before.values()]:
        print(
            f"- `{outcome.command}`: {outcome.seconds:.0f} s"
            + (f", failed ({outcome.failure})" if outcome.failure else "")
        )
    if any(outcome.failure for outcome in [*after.values(), *before.values()]):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
