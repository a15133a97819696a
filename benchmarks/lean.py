"""Every row of issue 37's "lean and quick" table in one run, before and after with `--compare`.

The rows: memory, start-up, the command line's latency, answer tokens, the gateway's CPU and added
time per proxied call, and search at 50,000 tools.

    python -m benchmarks lean [--compare SRC] [--quick] [--only NAME,...] [--skip NAME,...]
        [--eval-dir DIR] [--records DIR] [--timeout MINUTES]

It runs the five benchmarks that measure the rows, one child process each (`python -m benchmarks
NAME --json FILE`, so one that fails or hangs is reported and the others still run), echoes each
one's own output as it comes, and then prints one table: each row's figure, its goal and whether it
is met, with the machine, the load average before and after, and each child's command line, wall
time and the load average around it. The rows and the children are also recorded for `--json`.
NAME is a benchmark: memory, cli_latency, answer_tokens, proxy_latency, search_scale.

Where each row comes from:

* `memory --tools 10000`: the gateway's resident memory with the four demo servers over stdio, once
  all are connected and nothing was asked (the goal's "idle") and after a search; with no servers
  after a search (the floor); after the first search with 10,000 tools on 1,327 HTTP servers and
  on 100 servers; and, at 10,000 tools from a cold embedding cache, how long the first search took
  and when the full index answered (the search before it ranks by words alone).
* `cli_latency`: `config validate`, `search`, `tokens`, `smart --suggestions 3` and `execute` (it
  starts the `units` server) with the stored catalog of the four demo servers, median wall time.
* `answer_tokens --sizes 527,10000`: the median tokens (o200k) of a 5- and a 10-result
  `search_tools` answer and of one tool's `get_tool_details`, for short queries, at 10,000 tools;
  the 5-result answer on the 527 real tools beside it (the 10,000 are those tools copied under
  other servers' names, and an answer says a tool several servers offer alike once).
* `proxy_latency`: the CPU time `toolscout serve --transport http` spends per proxied call, beside
  the SDK's bare proxy's (each one process serving both eras, from /proc), and `execute_tool`'s
  added time less the bare proxy's in every transport and era. It runs its FastMCP rows too, and so
  needs benchmarks/.venv-fastmcp (`python -m benchmarks proxy_latency --install-fastmcp`).
* `search_scale --tools 50000`: hybrid search p50, the index's memory a tool and its cold build.

`--compare SRC` gives the before and after in the same run. SRC holds another tree's `toolscout`
package (a checkout's `src/`, e.g. of the previous main from `git worktree add /tmp/prev REV`).
`cli_latency` alternates the two trees command by command itself (its own `--compare`), so its
rows' before comes from the same child. Each of the other four runs twice in a row, once for this
tree and once with `PYTHONPATH=SRC:<this repository>`, which puts SRC's `toolscout` ahead of this
tree's (the benchmarks' own code stays this tree's); which of the two goes first alternates from one
benchmark to the next. The processes those benchmarks start (`toolscout serve`, the demo and catalog
servers, search_scale's child) inherit the environment, and proxy_latency hands PYTHONPATH to its
stdio children as well (the SDK's stdio client passes on only a few variables). Before the first
child, `lean` checks that `toolscout` imports from SRC under that environment.

`--quick` runs fewer repetitions (2 runs a command, 200 and 100 calls a configuration, 60 queries):
about 5 minutes on 2 cores (8 with `--compare`), with noisier figures; the defaults take about 6
(11 with `--compare`). The memory rows cost the same in both: they need the 10,000 tools connected.
`--records DIR` keeps each child's JSON record and stderr; `--timeout` stops a child that hangs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any

from benchmarks import harness
from benchmarks.search import DEFAULT_EVAL_DIR

ROOT = harness.ROOT
DEMOS = "four demo servers (stdio)"
NO_SERVERS = "idle, no servers"
TEN_K_COPIED = "10,000 tools, LiveMCPTool copied"
TEN_K_PACKED = "10,000 tools, 100 servers"
SHORT = "short (tool names as words)"
ERAS = ("2025-11-25", "2026-07-28")
TRANSPORTS = ("stdio", "http")
BARE = "bare SDK proxy"
OURS = "toolscout execute_tool"

# The goals of issue 37's table.
IDLE_MIB = 80
TEN_K_SERVERS_MIB = 200
TEN_K_PACKED_MIB = 150
FIRST_SEARCH_S = 1.0
CONFIG_SEARCH_S = 0.35
SMART_TOKENS_S = 0.5
SEARCH_ANSWER_TOKENS = 200
DETAILS_TOKENS = 120
CPU_MS_A_CALL = 2.0
OVER_BARE_PROXY_MS = 0.0
SCALE_P50_MS = 3.0
SCALE_KIB_A_TOOL = 3.0
SCALE_COLD_S = 3.0

Figures = dict[str, Any]


@dataclass(frozen=True)
class Step:
    """One benchmark run for the table, with its options (default and `--quick`)."""

    name: str
    args: tuple[str, ...]
    quick: tuple[str, ...]
    eval_dir: bool = False
    """Whether it takes `--eval-dir`."""
    own_compare: bool = False
    """Whether it alternates the two trees itself (`--compare SRC`)."""


STEPS = (
    Step("memory", ("--tools", "10000"), ("--tools", "10000"), eval_dir=True),
    Step("cli_latency", ("--runs", "5"), ("--runs", "2"), own_compare=True),
    Step("answer_tokens", ("--sizes", "527,10000"), ("--sizes", "527,10000"), eval_dir=True),
    Step("proxy_latency", ("--calls", "1000", "--calls-2026", "400"), ("--calls", "200", "--calls-2026", "100")),
    Step(
        "search_scale", ("--tools", "50000", "--queries", "300"), ("--tools", "50000", "--queries", "60"), eval_dir=True
    ),
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
    """The most the figure may be (None: reported, not judged)."""
    about: str = "reported"
    """What the goal column says when there is no goal to judge by."""


def _memory(case: str, key: str) -> Callable[[Figures, str], float]:
    return lambda f, _: float(f[case][key])


def _cli(scenario: str) -> Callable[[Figures, str], float]:
    return lambda f, suffix: float(f[f"wall s/{scenario}{suffix}"])


def _tokens(size: int, answer: str) -> Callable[[Figures, str], float]:
    return lambda f, _: float(f[f"{size}/{SHORT}"][answer])


def _scale(key: str) -> Callable[[Figures, str], float]:
    return lambda f, _: float(f["50000"][key])


def _cpu(front: str) -> Callable[[Figures, str], float]:
    return lambda f, _: float(f[f"cpu ms a call/http/{front}"])


def _over_bare(era: str, transport: str) -> Callable[[Figures, str], float]:
    def figure(f: Figures, _: str) -> float:
        return float(f[f"added ms/{era}/{transport}/{OURS}"]) - float(f[f"added ms/{era}/{transport}/{BARE}"])

    return figure


ROWS: tuple[Row, ...] = (
    Row(
        "RSS, four demo servers, idle (all connected, nothing asked)",
        "memory",
        _memory(DEMOS, "connected_mib"),
        "MiB",
        IDLE_MIB,
    ),
    Row("RSS, four demo servers, after a search", "memory", _memory(DEMOS, "searched_mib"), "MiB", None),
    Row("RSS, no servers, after a search", "memory", _memory(NO_SERVERS, "searched_mib"), "MiB", None),
    Row(
        "RSS, 10,000 tools on 1,327 HTTP servers, after a search",
        "memory",
        _memory(TEN_K_COPIED, "searched_mib"),
        "MiB",
        TEN_K_SERVERS_MIB,
    ),
    Row(
        "RSS, 10,000 tools on 100 servers, after a search",
        "memory",
        _memory(TEN_K_PACKED, "searched_mib"),
        "MiB",
        TEN_K_PACKED_MIB,
    ),
    Row(
        "first search at 10,000 tools, cold embedding cache",
        "memory",
        _memory(TEN_K_COPIED, "first_search_s"),
        "s",
        FIRST_SEARCH_S,
    ),
    Row(
        "… the full index answers after (from the first search)",
        "memory",
        _memory(TEN_K_COPIED, "full_index_after_s"),
        "s",
        None,
    ),
    Row(
        "`toolscout config validate`",
        "cli_latency",
        _cli("the config file alone: config validate"),
        "s",
        CONFIG_SEARCH_S,
    ),
    Row("`toolscout search`, stored catalog", "cli_latency", _cli("warm catalog"), "s", CONFIG_SEARCH_S),
    Row(
        "`toolscout smart --suggestions 3`",
        "cli_latency",
        _cli("warm catalog: smart --suggestions 3"),
        "s",
        SMART_TOKENS_S,
    ),
    Row("`toolscout tokens`", "cli_latency", _cli("warm catalog: tokens"), "s", SMART_TOKENS_S),
    Row(
        "`toolscout execute` (starts the `units` server)",
        "cli_latency",
        _cli("warm catalog: execute units"),
        "s",
        None,
        "one server's start + 0.3 s",
    ),
    Row(
        "tokens of a 5-result search answer, 10,000 tools, median",
        "answer_tokens",
        _tokens(10_000, "search 5"),
        "tokens",
        SEARCH_ANSWER_TOKENS,
    ),
    Row(
        "tokens of a 10-result search answer, 10,000 tools, median",
        "answer_tokens",
        _tokens(10_000, "search 10"),
        "tokens",
        None,
    ),
    Row(
        "tokens of a 5-result search answer, the 527 real tools, median",
        "answer_tokens",
        _tokens(527, "search 5"),
        "tokens",
        None,
    ),
    Row(
        "tokens of one tool's details, 10,000 tools, median",
        "answer_tokens",
        _tokens(10_000, "details"),
        "tokens",
        DETAILS_TOKENS,
    ),
    Row("gateway CPU per proxied call over HTTP (both eras)", "proxy_latency", _cpu(OURS), "ms", CPU_MS_A_CALL),
    Row("the SDK's bare proxy, CPU per call over HTTP", "proxy_latency", _cpu(BARE), "ms", None),
    *(
        Row(
            f"`execute_tool` added time − the bare proxy's, {transport} {era}",
            "proxy_latency",
            _over_bare(era, transport),
            "ms",
            OVER_BARE_PROXY_MS,
        )
        for era in ERAS
        for transport in TRANSPORTS
    ),
    Row("hybrid search at 50,000 tools, p50", "search_scale", _scale("p50_ms"), "ms", SCALE_P50_MS),
    Row("index at 50,000 tools, a tool", "search_scale", _scale("index_kib_a_tool"), "KiB", SCALE_KIB_A_TOOL),
    Row("cold build at 50,000 tools", "search_scale", _scale("cold_s"), "s", SCALE_COLD_S),
)


@dataclass
class Outcome:
    """What one child run left: its figures (empty when it failed), how long it took, and what it said."""

    command: str
    seconds: float
    load: tuple[float, float]
    """The one-minute load average when it started and when it ended."""
    figures: Figures = field(default_factory=dict[str, Any])
    failure: str = ""


def _echo(stream: IO[str]) -> None:
    for line in stream:
        print(line, end="", flush=True)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    """Signal the process group of a child this module started (it leads a session of its own)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


def _run_child(command: Sequence[str], env: dict[str, str], limit: float, errors: IO[str]) -> tuple[int | None, str]:
    """Run `command`, its output echoed as it comes, for at most `limit` seconds; its exit code (None
    if it was stopped) and why it was stopped."""
    # A session of its own, so that a child that hangs is stopped with everything it started.
    child = subprocess.Popen(
        list(command), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=errors, text=True, start_new_session=True
    )
    assert child.stdout is not None
    reader = threading.Thread(target=_echo, args=(child.stdout,), daemon=True)
    reader.start()
    code: int | None
    stopped = ""
    try:
        code = child.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        stopped = f"stopped after {limit / 60:g} minutes (--timeout)"
        _signal_group(child.pid, signal.SIGTERM)
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            _signal_group(child.pid, signal.SIGKILL)
            child.wait()
        code = None
    except BaseException:
        # Ctrl-C reaches this process alone (the child has a session of its own): stop the child too.
        _signal_group(child.pid, signal.SIGTERM)
        raise
    reader.join(timeout=10)
    if reader.is_alive():
        # Something the child started outlived it and still holds its output: stop what is left of its group.
        _signal_group(child.pid, signal.SIGTERM)
        reader.join(timeout=10)
    return code, stopped


def _environment(source: Path | None) -> dict[str, str]:
    """This process's environment, with `source` (another tree's `src/`) first on PYTHONPATH when given."""
    env = {**os.environ}
    if source is None:
        return env
    # This repository after SRC: the benchmarks' own code stays this tree's, `toolscout` is SRC's.
    env["PYTHONPATH"] = os.pathsep.join([str(source), str(ROOT)])
    return env


def _shown_command(command: Sequence[str], source: Path | None) -> str:
    prefix = f"PYTHONPATH={source} " if source is not None else ""
    return prefix + "python -m benchmarks " + " ".join(command[3:])


def run_step(
    step: Step, options: argparse.Namespace, records: Path, source: Path | None, compare: Path | None
) -> Outcome:
    """Run `step`'s benchmark as a child (with `source` first on PYTHONPATH when given) and read its record."""
    record = records / f"{step.name}-{'before' if source else 'now'}.json"
    record.unlink(missing_ok=True)
    args = [*(step.quick if options.quick else step.args)]
    if step.eval_dir:
        args += ["--eval-dir", str(options.eval_dir)]
    if step.own_compare and compare is not None:
        args += ["--compare", str(compare)]
    command = [sys.executable, "-m", "benchmarks", step.name, "--json", str(record), *args]
    shown = _shown_command(command, source)
    print(f"\n<!-- {shown} -->\n", flush=True)
    load_before = harness.load()
    with harness.Stopwatch() as watch, (records / f"{record.stem}.stderr").open("w+", encoding="utf-8") as errors:
        code, stopped = _run_child(command, _environment(source), options.timeout * 60, errors)
        errors.seek(0)
        said = errors.read().strip()
    load = (load_before, harness.load())
    if stopped or code != 0 or not record.exists():
        why = stopped or f"exit {code}"
        return Outcome(shown, watch.seconds, load, failure=f"{why}: {said[-1500:]}" if said else why)
    return Outcome(shown, watch.seconds, load, json.loads(record.read_text(encoding="utf-8"))["figures"])


def _value(row: Row, outcome: Outcome | None, suffix: str = "") -> float | None:
    if outcome is None or not outcome.figures:
        return None
    try:
        return float(row.figure(outcome.figures, suffix))
    except (KeyError, TypeError, ValueError):
        return None


def _shown(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    digits = 0 if unit in {"tokens", "MiB"} else 2
    return f"{value:.{digits}f} {unit}"


def table(rows: Sequence[Row], now: dict[str, Outcome], before: dict[str, Outcome], compare: Path | None) -> list[str]:
    """The Markdown table of every row: before (with --compare), now, the goal and whether it is met."""
    header = "| measure | " + ("before | " if compare else "") + "now | goal | met |"
    lines = [header, "|---|" + ("---|" if compare else "") + "---|---|---|"]
    for row in rows:
        figure = _value(row, now.get(row.step))
        if compare is None:
            then = None
        elif row.step == "cli_latency":  # the compared tree's rows, from the same child
            then = _value(row, now.get(row.step), f" ({compare})")
        else:
            then = _value(row, before.get(row.step))
        goal = row.about if row.goal is None else f"≤ {row.goal:g} {row.unit}"
        if figure is None:
            met = "no figure"
        elif row.goal is None:
            met = "—"
        else:
            met = "met" if figure <= row.goal else "missed"
        harness.record(row.measure, {"now": figure, "before": then, "goal": row.goal, "unit": row.unit})
        cells = [row.measure, *([_shown(then, row.unit)] if compare else []), _shown(figure, row.unit), goal, met]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _names(text: str, option: str) -> set[str]:
    names = {name.strip() for name in text.split(",") if name.strip()}
    unknown = names - {step.name for step in STEPS}
    if unknown:
        raise SystemExit(f"{option}: no benchmark {', '.join(sorted(unknown))} here; these: {[s.name for s in STEPS]}")
    return names


def _check_compare(compare: Path) -> str:
    """Make sure `toolscout` imports from `compare` under the environment its runs get; say which commit it is."""
    if not (compare / "toolscout" / "__init__.py").is_file():
        raise SystemExit(f"--compare {compare}: no toolscout package there (give a tree's src/ directory)")
    done = subprocess.run(
        [sys.executable, "-c", "import toolscout; print(toolscout.__file__)"],
        cwd=ROOT,
        env=_environment(compare),
        capture_output=True,
        text=True,
        check=False,
    )
    imported = Path(done.stdout.strip() or ".").resolve()
    if done.returncode != 0 or not imported.is_relative_to(compare):
        raise SystemExit(f"--compare {compare}: toolscout imports from {imported} instead\n{done.stderr}")
    found = subprocess.run(
        ["git", "-C", str(compare), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return found.stdout.strip() or "?"


def _tree() -> str:
    """This tree's commit, and whether its src/ differs from it (the runs import the files as they are)."""
    done = subprocess.run(
        ["git", "status", "--porcelain", "--", "src"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return harness.commit() + (" with uncommitted changes in src/" if done.stdout.strip() else "")


def _terminated(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main() -> None:
    # SIGTERM, as Ctrl-C, reaches this process alone: raised here, it stops the running child on its way out.
    signal.signal(signal.SIGTERM, _terminated)
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--compare", type=Path, default=None, help="another tree's src/: its figures beside these")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions: a few minutes, noisier figures")
    parser.add_argument("--only", default="", help="comma-separated benchmarks to run (default: all five)")
    parser.add_argument("--skip", default="", help="comma-separated benchmarks to leave out")
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    parser.add_argument("--records", type=Path, default=None, help="keep each child's JSON record and stderr here")
    parser.add_argument("--timeout", type=float, default=60, help="minutes after which a child is stopped")
    args = parser.parse_args()
    compare: Path | None = args.compare.resolve() if args.compare else None
    compare_commit = _check_compare(compare) if compare is not None else ""
    chosen, skipped = _names(str(args.only), "--only"), _names(str(args.skip), "--skip")
    steps = [step for step in STEPS if (not chosen or step.name in chosen) and step.name not in skipped]
    if not steps:
        raise SystemExit("--only and --skip leave no benchmark to run")

    load_before = harness.load()
    now: dict[str, Outcome] = {}
    before: dict[str, Outcome] = {}
    children: list[Outcome] = []
    with harness.Stopwatch() as watch, tempfile.TemporaryDirectory(prefix="toolscout-lean-") as scratch:
        records = args.records.resolve() if args.records else Path(scratch)
        records.mkdir(parents=True, exist_ok=True)
        twice = 0
        for step in steps:
            if compare is None or step.own_compare:
                sources: tuple[Path | None, ...] = (None,)
            else:
                # Which tree goes first alternates, so that neither always meets a warmer or a busier machine.
                sources = (None, compare) if twice % 2 == 0 else (compare, None)
                twice += 1
            for source in sources:
                outcome = run_step(step, args, records, source, compare)
                (now if source is None else before)[step.name] = outcome
                children.append(outcome)
    load_after = harness.load()

    rest = [("--quick", args.quick), (f"--only {args.only}", chosen), (f"--skip {args.skip}", skipped)]
    print(f"\n## Lean and quick: every row of issue 37 in one run — {harness.today()}\n")
    print(
        "`python -m benchmarks lean"
        + (f" --compare {compare}" if compare else "")
        + "".join(f" {option}" for option, given in rest if given)
        + f"`; {harness.machine_line()}, commit {_tree()}; load average {load_before:.1f} before, "
        f"{load_after:.1f} after; {watch.seconds / 60:.0f} minutes."
        + (f" Before: {compare} (commit {compare_commit})." if compare else "")
    )
    print()
    for line in table([row for row in ROWS if row.step in now], now, before, compare):
        print(line)
    print()
    for outcome in children:
        print(
            f"- `{outcome.command}`: {outcome.seconds:.0f} s, load average {outcome.load[0]:.1f} → "
            f"{outcome.load[1]:.1f}" + (f"; failed ({outcome.failure})" if outcome.failure else "")
        )
    harness.record(
        "children",
        [
            {
                "command": o.command,
                "seconds": round(o.seconds, 1),
                "load": [round(x, 2) for x in o.load],
                "failure": o.failure,
            }
            for o in children
        ],
    )
    if any(outcome.failure for outcome in children):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
