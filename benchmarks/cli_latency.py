"""Wall time of `toolscout` commands run as a person runs them: a process per command, to its exit.

    python -m benchmarks cli_latency [--runs 7] [--compare SRC] [--importtime]

The config holds the four bundled demo servers over stdio (notes, units, text, files). Scenarios,
each `--runs` times, `toolscout search "convert miles to kilometers"` unless said otherwise:

* warm catalog: the persistent catalog filled first by one `toolscout list --refresh`;
* warm catalog + a hanging server: the same config plus a stdio server that starts and never
  answers (as `sleep 1000` would; default connect timeout, 30 s), the catalog filled the same way
  (the hanging server's failure with it, where remembered);
* `tools units`, `execute units convert_units`, `tokens`, `smart "convert 26.2 miles to km"
  --suggestions 3` and the same request run (`smart` chooses and runs the tool) with the warm catalog;
* `config validate`, which reads the config file alone;
* via a running serve: `catalogCache: false` (nothing stored: the command needs live lists) and a
  `toolscout serve --transport http` of the same config file running;
* cold: nothing stored, no serve (a fresh cache directory every run).

`--compare SRC`: every command is run twice in a row, by this tree and by another source tree
(`SRC` holds the `toolscout` package, e.g. a checkout's `src/`; it goes first on `PYTHONPATH`), so
that a change's before and after share the machine's noise; the serve of "via a running serve" is
this tree's. `--importtime`: also what a warm search's imports cost (`python -X importtime`), by
package. Prints Markdown: median, best and worst wall time and the median CPU time (user + system)
per command, with the load average (the machine may be shared) and the targets (warm search median
≤ 0.5 s, and no slower with a hanging server configured).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks import harness
from benchmarks.upstreams import HANG, PYTHON, reap

QUERY = "convert miles to kilometers"
SMART_REQUEST = "convert 26.2 miles to km"
DEMOS = ("notes", "units", "text", "files")
SERVE_READY = re.compile(r"serving streamable HTTP at (http://\S+/mcp)")
TARGET_SECONDS = 0.5


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float
    code: int


@dataclass
class Bench:
    root: Path
    marker: str
    compare: Path | None
    commands: int = 0
    leaked: int = 0
    """Commands after which a hanging server of theirs was still running (stopped here)."""

    def env(self, cache: Path, source: Path | None) -> dict[str, str]:
        env = {**os.environ, "TOOLSCOUT_CACHE_DIR": str(cache), "XDG_RUNTIME_DIR": str(self.root / "run")}
        env.pop("PYTHONPATH", None)
        if source is not None:
            env["PYTHONPATH"] = str(source)
        return env

    def write_config(self, name: str, *, hang: bool = False, cache: bool = True) -> Path:
        servers: dict[str, object] = {d: {"command": PYTHON, "args": ["-m", f"toolscout.demo.{d}"]} for d in DEMOS}
        if hang:
            # The marker (an argument it ignores) finds the process, should it outlive the command.
            servers["hang"] = {"command": PYTHON, "args": ["-c", HANG, self.marker]}
        path = self.root / f"{name}.json"
        path.write_text(json.dumps({"mcpServers": servers, "catalogCache": cache}), encoding="utf-8")
        path.chmod(0o600)
        return path

    def run(self, args: Sequence[str], config: Path, cache: Path, source: Path | None = None) -> Run:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(
            [PYTHON, "-m", "toolscout", *args, "--config", str(config)],
            env=self.env(cache, source),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=600,
            check=False,
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        self.commands += 1
        self.leaked += reap(self.marker) > 0
        return Run(wall, cpu, done.returncode)


def _cell(runs: Sequence[Run]) -> str:
    walls = [r.wall for r in runs]
    codes = sorted({r.code for r in runs})
    return (
        f"{statistics.median(walls):.2f} / {min(walls):.2f} / {max(walls):.2f} / "
        f"{statistics.median(r.cpu for r in runs):.2f} (exit {', '.join(map(str, codes))})"
    )


def import_costs(bench: Bench, config: Path, cache: Path) -> list[tuple[str, float]]:
    """What a warm search's imports cost (ms, each module's own time), by package (toolscout's by
    module), largest first."""
    done = subprocess.run(
        [PYTHON, "-X", "importtime", "-m", "toolscout", "search", QUERY, "--config", str(config)],
        env=bench.env(cache, None),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    totals: dict[str, float] = {}
    for line in done.stderr.splitlines():
        found = re.match(r"import time:\s+(\d+) \|\s+\d+ \| *(\S+)$", line)
        if found:
            parts = found.group(2).split(".")
            package = ".".join(parts[:2]) if parts[0] == "toolscout" else parts[0]
            totals[package] = totals.get(package, 0.0) + int(found.group(1)) / 1000
    return sorted(totals.items(), key=lambda kv: -kv[1])


def measure(runs: int, compare: Path | None, importtime: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="ts-cli-") as scratch:
        bench = Bench(Path(scratch), f"toolscout-cli-latency-{uuid.uuid4().hex[:8]}", compare)
        (bench.root / "run").mkdir(mode=0o700)
        trees: list[tuple[str, Path | None]] = [("", None)]
        if compare is not None:
            trees.append((f" ({compare})", compare))
        rows: list[tuple[str, str, list[Run]]] = []
        load_before = os.getloadavg()

        def scenario(label: str, args: Sequence[str], config: Path, cache: Path | None = None) -> None:
            found: list[list[Run]] = [[] for _ in trees]
            for i in range(runs):
                for k, (_, source) in enumerate(trees):
                    where = cache if cache is not None else bench.root / f"cold-{label}-{i}-{k}"
                    found[k].append(bench.run(args, config, where, source))
            for (suffix, _), measured in zip(trees, found, strict=True):
                rows.append((label + suffix, " ".join(args[:1]), measured))

        search = ["search", QUERY]
        plain, hanging = bench.write_config("demos"), bench.write_config("hang", hang=True)
        warm, warm_hang = bench.root / "warm", bench.root / "warm-hang"
        fill = bench.run(["list", "--refresh"], plain, warm)
        fill_hang = bench.run(["list", "--refresh"], hanging, warm_hang)
        scenario("warm catalog", search, plain, warm)
        scenario("warm catalog + hanging server", search, hanging, warm_hang)
        scenario("warm catalog: tools units", ["tools", "units"], plain, warm)
        scenario("the config file alone: config validate", ["config", "validate"], plain, warm)
        execute = ["execute", "units", "convert_units", "--args", '{"value": 26.2, "from_unit": "mi", "to_unit": "km"}']
        scenario("warm catalog: execute units", execute, plain, warm)
        scenario("warm catalog: tokens", ["tokens"], plain, warm)
        scenario("warm catalog: smart --suggestions 3", ["smart", SMART_REQUEST, "--suggestions", "3"], plain, warm)
        scenario("warm catalog: smart (runs the tool)", ["smart", SMART_REQUEST], plain, warm)
        uncached = bench.write_config("serve", cache=False)
        serve = subprocess.Popen(
            [PYTHON, "-m", "toolscout", "serve", "--config", str(uncached), "--transport", "http", "--port", "0"],
            env=bench.env(bench.root / "serve-cache", None),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert serve.stderr is not None
            for line in serve.stderr:
                if SERVE_READY.search(line):
                    break
            bench.run(execute, uncached, bench.root / "serve-warmup")  # (waits for the serve's servers to connect)
            scenario("via a running serve (nothing stored)", search, uncached, bench.root / "via-serve")
        finally:
            serve.terminate()
            serve.wait(timeout=60)
        scenario("cold: nothing stored, no serve", search, plain)
        costs = import_costs(bench, plain, warm) if importtime else []
        load_after = os.getloadavg()

    print(f"## CLI latency — {harness.today()}")
    print()
    print(
        f"`python -m benchmarks cli_latency --runs {runs}"
        + (f" --compare {compare}" if compare else "")
        + (" --importtime" if importtime else "")
        + f"`; {harness.machine_line()}; "
        f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after (the machine is shared). "
        f"The four demo servers over stdio; `search {QUERY!r}` unless said otherwise; {runs} runs each"
        + (", the two trees alternating" if compare else "")
        + f". Filling the catalogs took {fill.wall:.1f} s and {fill_hang.wall:.1f} s (with the hanging server). "
        "Seconds, median / best / worst wall time, and median CPU time (user + system, the command and its "
        "children: on an idle machine a command waiting on nothing takes about that long):"
    )
    print()
    print("| scenario | command | wall median / best / worst / CPU |")
    print("|---|---|---|")
    for label, command, measured in rows:
        print(f"| {label} | {command} | {_cell(measured)} |")
        harness.record(f"wall s/{label}", statistics.median(r.wall for r in measured))
    print()
    by_label = {label: measured for label, _, measured in rows}
    warm_median = statistics.median(r.wall for r in by_label["warm catalog"])
    hang_median = statistics.median(r.wall for r in by_label["warm catalog + hanging server"])
    print(
        f"- warm catalog: median ≤ {TARGET_SECONDS} s — {'met' if warm_median <= TARGET_SECONDS else 'missed'} "
        f"({warm_median:.2f} s)"
    )
    print(
        f"- with a hanging server configured, no slower: {hang_median:.2f} s against {warm_median:.2f} s "
        f"({hang_median / warm_median:.2f}x)"
    )
    print(
        f"- commands after which a hanging server was still running: {bench.leaked} of {bench.commands} "
        "(this benchmark stopped them)"
    )
    if costs:
        shown = ", ".join(f"{name} {ms:.0f}" for name, ms in costs[:14])
        total = sum(ms for _, ms in costs)
        print(f"- a warm search's imports (`-X importtime`, ms of their own, by package): {total:.0f} in all; {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--compare", type=Path, default=None, help="also run every command from this source tree")
    parser.add_argument("--importtime", action="store_true", help="also break a warm search's imports down")
    args = parser.parse_args()
    measure(args.runs, args.compare, args.importtime)
