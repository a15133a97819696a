"""The one entry point of the benchmark suite: `python -m benchmarks NAME [ARGS...]`.

    python -m benchmarks --list                 # one line per benchmark: what it measures
    python -m benchmarks NAME --help            # the benchmark's own options
    python -m benchmarks NAME [--json PATH] [ARGS...]

The benchmark prints its figures as prose and Markdown, as docs/BENCHMARKS.md quotes them. With
`--json PATH` (anywhere after NAME) the entry point also writes them to PATH as JSON once the
benchmark is done: `benchmark`, `command`, `machine` (date, commit, cores, load, architecture,
Python), `seconds` (the run's wall time), `figures` (what the benchmark recorded through
`harness.record`), `tables` (each Markdown table it printed, rows keyed by the header) and `output`
(the whole printed text). A benchmark that stops with an error (`SystemExit` with a message or a
non-zero code, as `lean` does when one of its children failed) still gets its record, with `exit`
saying how it stopped. Nothing is written without `--json`, so the child processes some benchmarks
start from themselves never overwrite a record.
"""

from __future__ import annotations

import importlib
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO, cast

from benchmarks import harness

BENCHMARKS: dict[str, str] = {
    "answer_tokens": "tokens the model reads in search_tools and get_tool_details answers, short and long queries",
    "auth_overhead": "added latency of bearer-token authentication and scopes per search and tool call",
    "call_profile": "what the gateway itself spends on one tool call, with a cProfile of the gateway",
    "cli_latency": "wall time of `toolscout` commands run as a person runs them, one process each",
    "cold_start": "launch to first search answered with 100 configured servers, one of them hanging",
    "code_mode": "tokens, round trips and time of 22 multi-step tasks: meta-tools, code mode, FastMCP's CodeMode",
    "compact_answers": "tokens of compact mode's inspect and exec answers in each compactFormat, against before",
    "conformance": "the official MCP conformance suite against each upstream directly and through the gateway",
    "dashboard_overhead": "/mcp tool-call latency with the dashboard off, on, and its Activity tail followed",
    "dashboard_pages": "how long the dashboard's Tools and Servers pages take with a catalog of 10,000 tools",
    "dense_compare": "dense-only retrieval on the dev sets: all-MiniLM-L6-v2 against the static embedders",
    "hardening_load": "other clients' latency while one client attacks `serve --transport http`",
    "lean": (
        "every row of issue 37's table in one run: memory, start-up, CLI latency, answer tokens, CPU per call, "
        "added latency, search at 50,000 tools"
    ),
    "latency": "round-trip latency of the meta-tools through the full MCP stack, 527 tools behind them",
    "listing_formats": "tokens of the discovery listings' text in each listingFormat against compact JSON",
    "loop_stalls": "how long the gateway's own work holds its event loop, 10,000 tools and oversized input",
    "metrics_overhead": "added latency of recording metrics per /mcp call, metrics on against off side by side",
    "memory": "resident memory of the gateway: idle, with the four demo servers, and 527 and 10,000 tools indexed",
    "oauth_overhead": "what an upstream's OAuth client adds to each HTTP request the gateway sends it, in process",
    "nothing_fits": "how often search still offers a tool for requests no server can do, and flags answerable ones",
    "poisoning": "false positives of the tool-poisoning check on real tools, and the written attacks it catches",
    "proxy_latency": "added latency of a tool call through the gateway against direct, a bare SDK proxy and FastMCP",
    "query_load": "other clients' search latency while oversized searches hit a running gateway",
    "replica_fanout": "how soon one replica sees a change made through another (target: within 1 s)",
    "replicas": "throughput and latency of replicas sharing one registry in Redis, alone and behind nginx",
    "scoped_search": "search within a token's scope against search over the whole catalog",
    "search": "search quality (recall, nDCG, MRR, with intervals) and speed on every dev set, beside plain bm25s",
    "search_expansion": "tools' documents expanded with query words learned from the training pairs (not shipped)",
    "search_scale": "hybrid search at 10,000 and 50,000 tools: build time, latency, and the index's memory",
    "search_loso": "leave one source out: search fitted without each training group, measured on it",
    "search_train": "search quality on the training pairs, the set search settings are tuned on",
    "smart": "smart mode: tool selection, parameter mapping and the latency of one smart_tool_discovery call",
    "smart_requests": "smart mode end to end on the public request set, per mode, with and without a scripted LLM",
    "smart_extraction": "parameter mapping without an LLM: the extractor on the argument-extraction rows",
    "smart_selection": "smart mode's fair hybrid: calibration, the LLM's candidates' recall, scripted LLMs",
    "token_cost": "tokens a catalog costs an agent exposed directly, against toolscout's five meta-tools",
    "token_modes": "tokens an agent reads in each exposure mode: tools/list and a flow that runs one tool",
}
"""Every benchmark by name, with what it measures. The other modules of the package are the harness,
the helpers the benchmarks share and the anchors they start as child processes (`bare_proxy`,
`byte_relay`, `message_relay`), which run as `python -m benchmarks.bare_proxy ...`."""

USAGE = "usage: python -m benchmarks --list | NAME [--json PATH] [ARGS...]"


class _Tee(io.StringIO):
    """A text stream that writes through to the real stdout and keeps a copy for the JSON record."""

    def __init__(self, out: TextIO) -> None:
        super().__init__()
        self.out = out

    def write(self, s: str, /) -> int:
        super().write(s)
        return self.out.write(s)

    def flush(self) -> None:
        self.out.flush()

    def isatty(self) -> bool:
        return self.out.isatty()


def listing() -> str:
    """Return the `--list` text: one line per benchmark, its name and what it measures."""
    width = max(len(name) for name in BENCHMARKS)
    return "\n".join(f"{name:<{width}}  {what}" for name, what in BENCHMARKS.items())


def _json_path(args: list[str]) -> tuple[Path | None, list[str]]:
    """Take `--json PATH` (or `--json=PATH`) out of the benchmark's arguments; no benchmark has its own."""
    rest: list[str] = []
    path: Path | None = None
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--json" and index + 1 < len(args):
            path = Path(args[index + 1])
            index += 2
            continue
        if arg.startswith("--json="):
            path = Path(arg.removeprefix("--json="))
        else:
            rest.append(arg)
        index += 1
    return path, rest


def run(name: str, args: list[str]) -> None:
    """Run the benchmark `name` with `args` as its command line, and write its JSON record if asked."""
    path, rest = _json_path(args)
    module = importlib.import_module(f"benchmarks.{name}")
    main = cast(Callable[[], Any], module.main)
    sys.argv = [f"python -m benchmarks {name}", *rest]
    if path is None:
        main()
        return
    tee = _Tee(sys.stdout)
    real = sys.stdout
    sys.stdout = tee
    stopped: SystemExit | None = None
    try:
        with harness.Stopwatch() as watch:
            try:
                main()
            except SystemExit as stop:
                if stop.code in (None, 0):
                    raise
                stopped = stop
    finally:
        sys.stdout = real
    output = tee.getvalue()
    document = {
        "benchmark": name,
        "command": " ".join(["python -m benchmarks", name, *rest]),
        "machine": harness.machine(),
        "seconds": round(watch.seconds, 3),
        "figures": harness.figures(),
        "tables": harness.markdown_tables(output),
        "output": output,
    }
    if stopped is not None:
        document["exit"] = str(stopped.code)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if stopped is not None:
        raise stopped


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        print()
        print((__doc__ or "").strip().splitlines()[0])
        print()
        print(listing())
        return 0 if argv else 2
    if argv[0] == "--list":
        print(listing())
        return 0
    name = argv[0]
    if name not in BENCHMARKS:
        print(f"no benchmark named {name!r}; `python -m benchmarks --list` lists them", file=sys.stderr)
        return 2
    run(name, argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
