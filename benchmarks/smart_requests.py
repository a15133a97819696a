"""Smart mode end to end on the public request set: plain-English requests through a real gateway.

    python -m benchmarks smart_requests [--limit N] [--mode NAME ...] [--train-dir ../shared/train]
        [--skip-extraction]

The set, `benchmarks/data/smart_requests.jsonl` (MIT, this project's: see the README beside it),
holds requests written for this project over the bundled demo servers (notes, units, text, files),
the npm reference servers (server-everything, server-filesystem, server-memory, from tools/npm) and
`mcp-server-time`, each with the tool and arguments that do it, and requests that must not run:
a destructive tool without the user's confirmation (`confirm`), a required value the request does
not give (`missing`), nothing that any tool does (`no_tool`) and nonsense (`nonsense`).

A real `Gateway` in process connects to every server (the demo servers over the SDK's in-memory
transport, the others as stdio child processes, the filesystem server in a scratch folder written
for the run, `{root}` in the set), and every request goes through `SmartDiscovery.run` as an agent's
`smart_tool_discovery` call would (cache and learning off, so no request helps another), for each
mode: `hybrid`, `rule_based` and `semantic_based` without an LLM, and `hybrid` with a scripted LLM
(`benchmarks.scripted_llm`, a real OpenAI-compatible HTTP server on loopback) that is right, wrong
(confidently picks a tool that is not the expected one) or declines (says no candidate fits).

Per mode, with 95% bootstrap intervals (2,000 resamples of the requests):

* right tool: the tool the engine committed to (ran, held for confirmation, or stopped for its
  arguments) is the expected one, over the requests that have one (`run`, `confirm`, `missing`);
* right tool and arguments: that, and its planned arguments equal the expected ones (every key,
  no extra one; numbers by value, strings case- and space-blind, or one of the row's `accept`
  spellings), over `run` and `confirm` requests;
* ran correctly: the gateway was asked to execute exactly the expected call, over `run` requests
  (the tool's own answer is not judged);
* held back: nothing was executed, over the must-not-run requests; and how many of those ran
  (target 0);
* wrong runs: a call was executed that is not the expected one; for a mode with an LLM, also
  those where hybrid search without the LLM had committed to the right tool (the LLM overrode the
  search), and in brackets those where it had done so with at least `CONFIDENT_SEARCH` (the
  search was confident: the target is none).

Then (unless `--skip-extraction`) the extractor alone on the MIT and Apache-2.0 rows of
`../shared/train/argument_extraction.jsonl`: the share of rows whose arguments are exactly right,
per source group, with the same intervals (`benchmarks.smart_extraction` has the fuller table).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types

from benchmarks import harness, smart_extraction, train_data
from benchmarks.scripted_llm import Expected, ScriptedLLM, scripted_llm
from toolscout.config import GatewayConfig
from toolscout.config.models import LLMConfig, SelectionMode, SmartCacheConfig, SmartConfig
from toolscout.demo import files, notes, text, units
from toolscout.gateway.core import Confirm, Gateway, ResultShape
from toolscout.modes.smart import SmartArgs, SmartDiscovery, llm_source
from toolscout.search.evaluation import bootstrap_interval
from toolscout.smart.selection import CONFIDENT_SEARCH
from toolscout.upstream import InProcessUpstream, UpstreamSpec

DATA = Path(__file__).resolve().parent / "data" / "smart_requests.jsonl"
NPM_BIN = Path(__file__).resolve().parent.parent / "tools" / "npm" / "node_modules" / ".bin"
MUST_NOT_RUN = ("confirm", "missing", "no_tool", "nonsense")
MODES: dict[str, tuple[SelectionMode, str | None]] = {
    "hybrid": ("hybrid", None),
    "rule_based": ("rule_based", None),
    "semantic_based": ("semantic_based", None),
    "hybrid + right LLM": ("hybrid", "right"),
    "hybrid + wrong LLM": ("hybrid", "wrong"),
    "hybrid + declining LLM": ("hybrid", "decline"),
}
"""Each measured mode: the selection mode and the scripted LLM's model (None: no LLM)."""
CALL_SECONDS = 60.0
"""One request's bound: a tool that waits on the client (elicitation, sampling) counts as a failure."""
ROOT_NAME = "toolscout-yardstick"
"""The filesystem server's folder, under the system's temporary folder (one run at a time uses it)."""
FILES = {"todo.txt": "buy milk\nwater the plants\nfile taxes\n", "log.txt": "started\nworking\nstopped\n"}
"""The filesystem server's scratch folder (`{root}`): what the set's requests read."""


@dataclass(frozen=True)
class Call:
    """One way a request is done: a server's tool, its arguments, and other accepted spellings per argument."""

    server: str
    tool: str
    arguments: Mapping[str, Any]
    accept: Mapping[str, Sequence[Any]] = field(default_factory=dict[str, Sequence[Any]])

    @property
    def qualified(self) -> str:
        return f"{self.server}/{self.tool}"

    def matches(self, qualified: str, arguments: Mapping[str, Any]) -> bool:
        """Whether `qualified` with `arguments` is this call (same keys, each value the same or accepted)."""
        if qualified != self.qualified or set(arguments) != set(self.arguments):
            return False
        return all(
            same(arguments[key], wanted) or any(same(arguments[key], a) for a in self.accept.get(key, ()))
            for key, wanted in self.arguments.items()
        )


def same(value: Any, wanted: Any) -> bool:
    """Equal as a person would judge it: numbers by value, strings case- and space-blind, lists item by item."""
    if isinstance(wanted, bool) or isinstance(value, bool):
        return value is wanted
    if isinstance(wanted, int | float) and isinstance(value, int | float):
        return float(value) == float(wanted)
    if isinstance(wanted, str) and isinstance(value, str):
        return " ".join(value.lower().split()) == " ".join(wanted.lower().split())
    if isinstance(wanted, list) and isinstance(value, list):
        items, wanted_items = cast(list[Any], value), cast(list[Any], wanted)
        return len(items) == len(wanted_items) and all(same(a, b) for a, b in zip(items, wanted_items, strict=True))
    if isinstance(wanted, dict) and isinstance(value, dict):
        got, want = cast(dict[str, Any], value), cast(dict[str, Any], wanted)
        return set(got) == set(want) and all(same(got[k], want[k]) for k in want)
    return bool(value == wanted)


@dataclass(frozen=True)
class Row:
    """One request of the set: what it is, and the calls that do it (none for `no_tool`, `nonsense`)."""

    id: str
    request: str
    expect: str
    calls: tuple[Call, ...]

    @property
    def must_run(self) -> bool:
        return self.expect == "run"

    def right_tool(self, qualified: str | None) -> bool:
        return any(c.qualified == qualified for c in self.calls)

    def right_call(self, qualified: str | None, arguments: Mapping[str, Any]) -> bool:
        return qualified is not None and any(c.matches(qualified, arguments) for c in self.calls)


def _filled(value: Any, root: str) -> Any:
    if isinstance(value, str):
        return value.replace("{root}", root)
    if isinstance(value, list):
        return [_filled(v, root) for v in cast(list[Any], value)]
    if isinstance(value, dict):
        return {k: _filled(v, root) for k, v in cast(dict[str, Any], value).items()}
    return value


def load_rows(path: Path = DATA, root: str = "{root}") -> list[Row]:
    """The set's rows, `{root}` replaced by the filesystem server's folder."""
    rows: list[Row] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        raw = cast(dict[str, Any], _filled(json.loads(line), root))
        calls: list[Call] = []
        if raw.get("server"):
            main = Call(raw["server"], raw["tool"], raw.get("arguments") or {}, raw.get("accept") or {})
            calls.append(main)
            for other in cast(list[dict[str, Any]], raw.get("also") or []):
                calls.append(
                    Call(
                        other["server"],
                        other["tool"],
                        other.get("arguments", main.arguments),
                        other.get("accept", main.accept if "arguments" not in other else {}),
                    )
                )
        rows.append(Row(str(raw["id"]), str(raw["request"]), str(raw["expect"]), tuple(calls)))
    return rows


def expectations(rows: Sequence[Row]) -> dict[str, Expected]:
    """What the scripted LLM knows of each request."""
    return {
        r.request: Expected(tuple(c.qualified for c in r.calls), {c.qualified: dict(c.arguments) for c in r.calls})
        for r in rows
    }


# The servers


def stdio_servers(root: Path, scratch: Path) -> dict[str, Any]:
    """The npm reference servers (tools/npm's pinned Node) and mcp-server-time, as stdio servers."""
    env = {
        "PATH": f"{NPM_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "MEMORY_FILE_PATH": str(scratch / "memory.jsonl"),
    }

    def node(name: str, *args: str) -> dict[str, Any]:
        return {"command": str(NPM_BIN / name), "args": list(args), "env": env}

    return {
        "everything": node("mcp-server-everything", "stdio"),
        "filesystem": node("mcp-server-filesystem", str(root)),
        "memory": node("mcp-server-memory"),
        "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
    }


def upstream_specs(root: Path, scratch: Path) -> list[UpstreamSpec]:
    """Every server of the set: the demo servers in process, the others over stdio."""
    config = GatewayConfig.model_validate({"mcpServers": stdio_servers(root, scratch)})
    return [
        UpstreamSpec("notes", InProcessUpstream(notes.build_server())),
        UpstreamSpec("units", InProcessUpstream(units.build_server())),
        UpstreamSpec("text", InProcessUpstream(text.build_server())),
        UpstreamSpec("files", InProcessUpstream(files.build_server())),
        *(UpstreamSpec.from_config(name, server) for name, server in config.mcp_servers.items()),
    ]


def write_root(root: Path) -> None:
    """The filesystem server's folder as the set's requests expect it."""
    (root / "docs").mkdir(parents=True, exist_ok=True)
    for name, content in FILES.items():
        (root / name).write_text(content, encoding="utf-8")


class RecordingGateway(Gateway):
    """The gateway, noting every call it is asked to execute (what actually ran)."""

    executed: list[tuple[str, dict[str, Any]]]

    async def execute(
        self,
        server: str,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        max_output_chars: int | None = None,
        client: str | None = None,
        shape: ResultShape | None = None,
        confirm: Confirm | None = None,
    ) -> types.CallToolResult:
        self.executed.append((f"{server}/{name}", dict(arguments or {})))
        return await super().execute(
            server, name, arguments, max_output_chars=max_output_chars, client=client, shape=shape, confirm=confirm
        )


# One request


@dataclass(frozen=True)
class Outcome:
    """What the engine did with one request."""

    chosen: str | None
    """The tool it committed to (ran, held for confirmation, or stopped for its arguments); None: none."""
    planned: dict[str, Any]
    executed: list[tuple[str, dict[str, Any]]]
    status: str
    """ran, confirmation_required, arguments, not_found, failed, timeout."""
    confidence: float | None = None
    """The `confidence_score` of the tool it committed to."""


def outcome_of(result: types.CallToolResult | None, executed: list[tuple[str, dict[str, Any]]]) -> Outcome:
    if result is None:
        return Outcome(None, {}, executed, "timeout")
    data = cast(dict[str, Any], result.structured_content or {})
    chosen = data.get("tool_name")
    planned = cast(dict[str, Any], data.get("parameters") or {})
    if executed:
        status = "ran"
    elif data.get("status") in ("confirmation_required", "declined"):
        status = "confirmation_required"
    elif "parameter_extraction" in data:
        status = "arguments"
    elif chosen is None:
        status = "not_found"
    else:
        status = "failed"
    confidence = data.get("confidence_score")
    score = float(confidence) if isinstance(confidence, int | float) else None
    return Outcome(str(chosen) if chosen else None, planned, executed, status, score)


async def run_one(smart: SmartDiscovery, gateway: RecordingGateway, request: str) -> Outcome:
    gateway.executed = []
    result: types.CallToolResult | None = None
    with anyio.move_on_after(CALL_SECONDS):
        result = await smart.run(SmartArgs.model_validate({"request": request}))
    return outcome_of(result, list(gateway.executed))


async def run_mode(
    gateway: RecordingGateway, rows: Sequence[Row], selection: SelectionMode, llm: ScriptedLLM | None, model: str | None
) -> list[Outcome]:
    config = SmartConfig(tool_selection_mode=selection, cache=SmartCacheConfig(enabled=False), enable_learning=False)
    source = llm_source(LLMConfig(base_url=llm.url(model), model=model), config) if llm and model else None
    smart = SmartDiscovery(gateway, config, llm=source)
    return [await run_one(smart, gateway, row.request) for row in rows]


# Scoring


@dataclass
class Scores:
    """Per-request 0/1 figures of one mode, each over the requests it applies to."""

    right_tool: list[float] = field(default_factory=list[float])
    right_call: list[float] = field(default_factory=list[float])
    ran_right: list[float] = field(default_factory=list[float])
    held: list[float] = field(default_factory=list[float])
    wrong_runs: list[float] = field(default_factory=list[float])
    overrode: int = 0
    overrode_confident: int = 0
    statuses: dict[str, int] = field(default_factory=dict[str, int])


def score(rows: Sequence[Row], outcomes: Sequence[Outcome], baseline: Sequence[Outcome] | None) -> Scores:
    """Score one mode's outcomes; `baseline`: hybrid without the LLM on the same rows (for `overrode`)."""
    s = Scores()
    for index, (row, out) in enumerate(zip(rows, outcomes, strict=True)):
        s.statuses[out.status] = s.statuses.get(out.status, 0) + 1
        if row.calls:
            s.right_tool.append(float(row.right_tool(out.chosen)))
        if row.expect in ("run", "confirm"):
            s.right_call.append(float(row.right_call(out.chosen, out.planned)))
        wrong = any(not row.must_run or not row.right_call(q, a) for q, a in out.executed)
        s.wrong_runs.append(float(wrong))
        if row.must_run:
            right = len(out.executed) == 1 and row.right_call(*out.executed[0])
            s.ran_right.append(float(right))
        else:
            s.held.append(float(not out.executed))
        if wrong and baseline is not None and row.right_tool(baseline[index].chosen):
            s.overrode += 1
            s.overrode_confident += (baseline[index].confidence or 0.0) >= CONFIDENT_SEARCH
    return s


def _mean(values: Sequence[float]) -> str:
    if not values:
        return "—"
    low, high = bootstrap_interval(values)
    return f"{statistics.fmean(values):.3f} ({low:.3f}–{high:.3f})"


def report(rows: Sequence[Row], results: Mapping[str, Scores]) -> list[str]:
    counts = {kind: sum(1 for r in rows if r.expect == kind) for kind in ("run", *MUST_NOT_RUN)}
    lines = [
        f"{len(rows)} requests: " + ", ".join(f"{kind} {n}" for kind, n in counts.items()),
        "",
        "| mode | right tool | right tool and arguments | ran correctly | held back when it should "
        "| must-not-run requests that ran | wrong runs | wrong runs over the search's right pick (confident) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode, s in results.items():
        ran_anyway = sum(1 for h in s.held if not h)
        overrode = f"{s.overrode} ({s.overrode_confident})" if "LLM" in mode else "—"
        lines.append(
            f"| {mode} | {_mean(s.right_tool)} | {_mean(s.right_call)} | {_mean(s.ran_right)} | {_mean(s.held)} "
            f"| {ran_anyway} of {len(s.held)} | {int(sum(s.wrong_runs))} | {overrode} |"
        )
        harness.record(
            mode,
            {
                "right_tool": statistics.fmean(s.right_tool) if s.right_tool else None,
                "right_call": statistics.fmean(s.right_call) if s.right_call else None,
                "ran_right": statistics.fmean(s.ran_right) if s.ran_right else None,
                "held": statistics.fmean(s.held) if s.held else None,
                "must_not_run_ran": ran_anyway,
                "wrong_runs": int(sum(s.wrong_runs)),
                "overrode": s.overrode,
                "overrode_confident": s.overrode_confident,
                "statuses": s.statuses,
            },
        )
    lines += ["", "What the engine did with each request, per mode:", ""]
    for mode, s in results.items():
        lines.append(f"- {mode}: " + ", ".join(f"{k} {v}" for k, v in sorted(s.statuses.items())))
    return lines


def misses(rows: Sequence[Row], outcomes: Sequence[Outcome], limit: int = 12) -> list[str]:
    """The first requests a mode got wrong, for reading (the row id, what was expected, what happened)."""
    out: list[str] = []
    for row, o in zip(rows, outcomes, strict=True):
        ok = (row.must_run and len(o.executed) == 1 and row.right_call(*o.executed[0])) or (
            not row.must_run and not o.executed
        )
        if not ok:
            wanted = row.calls[0].qualified if row.calls else "nothing"
            out.append(f"- {row.id} {row.request!r}: {row.expect} {wanted}; got {o.status} {o.chosen} {o.planned}")
    return out[:limit]


async def measure(rows: Sequence[Row], modes: Sequence[str], show_misses: int) -> list[str]:
    # The folder's path is part of some requests, so it is the same in every run (a random one would
    # change what the search reads from run to run), and its words name no tool ("requests" would).
    root = Path(tempfile.gettempdir()) / ROOT_NAME
    shutil.rmtree(root, ignore_errors=True)
    write_root(root)
    try:
        return await _measure(rows, modes, show_misses, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def _measure(rows: Sequence[Row], modes: Sequence[str], show_misses: int, root: Path) -> list[str]:
    results: dict[str, Scores] = {}
    lines: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        filled = load_rows(DATA, str(root))
        by_id = {r.id: r for r in filled}
        rows = [by_id[r.id] for r in rows]
        gateway = RecordingGateway(upstream_specs(root, Path(scratch)))
        gateway.executed = []
        async with gateway, scripted_llm(expectations(rows)) as llm:
            with anyio.fail_after(120):
                await gateway.settle()
            down = [f"{u.name}: {u.error}" for u in gateway.upstreams if u.status.value != "connected"]
            if down:
                raise SystemExit(f"servers not connected: {down} (tools/npm installed? scripts/test installs it)")
            baseline: list[Outcome] | None = None
            for mode in modes:
                selection, model = MODES[mode]
                started = time.perf_counter()
                outcomes = await run_mode(gateway, rows, selection, llm, model)
                if mode == "hybrid":
                    baseline = outcomes
                if model is not None and baseline is None:
                    baseline = await run_mode(gateway, rows, "hybrid", None, None)
                results[mode] = score(rows, outcomes, baseline if model is not None else None)
                took = time.perf_counter() - started
                print(f"[{mode}: {len(rows)} requests in {took:.0f} s]", file=sys.stderr, flush=True)
                if show_misses:
                    lines += ["", f"First misses of {mode}:", "", *misses(rows, outcomes, show_misses)]
    return report(rows, results) + lines


def extraction(train_dir: Path) -> list[str]:
    """The extractor alone on the MIT and Apache-2.0 extraction rows: exact arguments, per source group."""
    rows = [r for r in smart_extraction.load_rows(train_dir) if train_data.group_of(str(r["source"])) is not None]
    exact: dict[str, list[float]] = {}
    for row in rows:
        scored = smart_extraction.score_row(row)
        for group in (smart_extraction.source_group(row), "all (MIT, Apache-2.0)"):
            exact.setdefault(group, []).append(float(scored.exact))
    lines = ["| source | rows | exact arguments (extractor, no LLM) |", "|---|---|---|"]
    lines += [f"| {group} | {len(values):,} | {_mean(values)} |" for group, values in sorted(exact.items())]
    return lines


def commit() -> str:
    try:
        found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    except OSError:
        return "unknown"
    return found.stdout.strip() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--limit", type=int, help="Only the first N requests of the set (a quick run).")
    parser.add_argument("--mode", action="append", choices=list(MODES), help="Only this mode (repeatable).")
    parser.add_argument("--misses", type=int, default=0, help="Show each mode's first N misses.")
    parser.add_argument("--train-dir", type=Path, default=train_data.DEFAULT_TRAIN_DIR)
    parser.add_argument("--skip-extraction", action="store_true")
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per scripted-LLM answer otherwise
    rows = load_rows()
    if args.limit is not None:
        rows = rows[: args.limit]
    modes = args.mode or list(MODES)
    load = os.getloadavg()[0]
    print(f"{harness.today()}, {harness.machine_line()}, load {load:.2f}, commit {commit()}", flush=True)
    started = time.perf_counter()
    lines = anyio.run(measure, rows, modes, args.misses)
    print("\n".join(["", "### The public request set", "", *lines]), flush=True)
    if not args.skip_extraction:
        print("\n".join(["", "### Extraction rows", "", *extraction(args.train_dir)]), flush=True)
    print(f"\n[{time.perf_counter() - started:.0f} s in all]", flush=True)
