"""What the gateway itself spends on one tool call: medians against the direct call, and a cProfile of the gateway.

    python -m benchmarks call_profile [--calls 3000] [--rounds 3] [--era legacy|auto]
        [--mode discovery|passthrough] [--log-level info] [--profile FILE.prof] [--top 30] [--compare SRC]
    python -m benchmarks call_profile --inprocess [--calls 3000] [--era legacy|auto] [--profile FILE.prof]

The upstream is the bundled demo server `units` (`convert_units`, next to no work of its own), as in
`benchmarks/proxy_latency.py`, whose constants this reuses; everything runs over stdio.

Default (`toolscout serve`): one `mcp.Client` in this process talks to `units` directly (a child of
its own) and to `toolscout serve` (a child, default settings: INFO log to a file, audit log on, in
discovery mode calling `execute_tool`, or in passthrough mode calling `convert_units` by its own name),
which talks to its own `units` child. Both are warmed up, then measured alternately in batches of
100 calls; each round prints the median (and p90) of both, the difference, and the CPU time each
child spent per call (user + system, from /proc: Linux only; on 2 shared cores the gateway's CPU
time is most of what it adds, and is steadier than the medians), so the before/after of a change
can be compared on a noisy machine round by round. With `--profile FILE`, the gateway
runs under `python -m cProfile -o FILE`; once it has exited, the functions that took the most time
are printed, per measured call (the start-up and warm-up are in the file too, and are small next to
thousands of calls).

`--compare SRC`: a second `toolscout serve` runs from another copy of the source tree (`SRC` holds the
`toolscout` package, e.g. a copy of `src/` taken before a change; it goes first on `PYTHONPATH`),
measured in the same alternation, so a change's before and after share the machine's noise.

`--client-asks`: the client declares sampling and elicitation (it is never asked: `units` asks
nothing), so a 2026-07-28 call goes the way of a call that may take rounds (rounds.py).

`--inprocess`: the gateway runs in this process, served to the client over the SDK's in-memory
transport, with its `units` upstream a stdio child as usual, and logging set up as `serve` does
(to a file). `--profile` then covers only the measured calls, the client's side included (the SDK's
client and the in-memory streams show up as such), and needs no child process to exit.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import logging
import os
import pstats
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TextIO

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from benchmarks import harness
from benchmarks.processes import cpu_seconds
from benchmarks.proxy_latency import ARGUMENTS, ERAS, EXPECTED, PYTHON, ROOT, TOOL, UPSTREAM

BATCH = 100
WARMUP = 200


def gateway_config(scratch: Path, protocol: str = "auto") -> Path:
    """A config with `units` over stdio (`protocol`: its era), the audit log and persistent catalog in `scratch`."""
    path = scratch / f"toolscout-{protocol}.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {"units": {"command": UPSTREAM[0], "args": UPSTREAM[1:], "protocol": protocol}},
                "audit": {"path": str(scratch / "audit.jsonl")},
                "catalogCache": {"path": str(scratch / "catalog.sqlite3")},
            }
        ),
        encoding="utf-8",
    )
    return path


def call_of(mode: str) -> tuple[str, dict[str, Any]]:
    """The tool the client calls on the gateway in `mode`, and its arguments."""
    if mode == "passthrough":  # in front of one server, its tools keep their own names
        return TOOL, ARGUMENTS
    return "execute_tool", {"server": "units", "tool": TOOL, "arguments": ARGUMENTS}


async def _sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(text="unused"), model="none")


async def _elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


def callbacks(args: argparse.Namespace) -> dict[str, Any]:
    """With `--client-asks`, the client declares sampling and elicitation (never used by `units`)."""
    return {"sampling_callback": _sample, "elicitation_callback": _elicit} if args.client_asks else {}


async def timed(client: Client, tool: str, arguments: dict[str, Any]) -> float:
    started = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    elapsed = (time.perf_counter() - started) * 1000
    content: dict[str, Any] = result.structured_content or {}
    if result.is_error or content.get("result") != EXPECTED:
        raise SystemExit(f"{tool}: unexpected result {result}")
    return elapsed


def children() -> dict[int, tuple[str, str]]:
    """This process's children: pid → (command line, environment), from /proc."""
    found: dict[int, tuple[str, str]] = {}
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) != me:
                continue
            found[int(entry.name)] = (
                (entry / "cmdline").read_bytes().decode(errors="replace"),
                (entry / "environ").read_bytes().decode(errors="replace"),
            )
        except (OSError, ValueError, IndexError):
            continue
    return found


def print_profile(path: Path, calls: int, top: int) -> None:
    """The functions with the most own time and the most cumulative time, in µs per measured call."""
    for key, title in (("tottime", "own time"), ("cumulative", "cumulative time")):
        out = io.StringIO()
        stats = pstats.Stats(str(path), stream=out)
        stats.strip_dirs().sort_stats(key).print_stats(top)
        print(f"\n### top {top} by {title} ({calls} measured calls; µs/call = seconds × {1e6 / calls:.0f})\n")
        lines = out.getvalue().splitlines()
        start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")), 0)
        print("    µs/call(own)  µs/call(cum)  ncalls/call  function")
        for line in lines[start + 1 :]:
            parts = line.split(None, 5)
            if len(parts) < 6:
                continue
            ncalls, tottime, _, cumtime, _, where = parts
            n = int(ncalls.split("/")[0])
            own, cum = float(tottime) * 1e6 / calls, float(cumtime) * 1e6 / calls
            print(f"    {own:12.1f}  {cum:12.1f}  {n / calls:11.2f}  {where}")


async def measure_serve(args: argparse.Namespace) -> None:
    tool, arguments = call_of(args.mode)
    async with AsyncExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="toolscout-call-profile-")))
        errlog: TextIO = stack.enter_context((scratch / "stderr.log").open("w"))

        def serve(profile: Path | None, protocol: str = args.upstream_protocol) -> list[str]:
            prefix = [PYTHON] if profile is None else [PYTHON, "-m", "cProfile", "-o", str(profile)]
            command = ["-m", "toolscout", "serve", "--config", str(gateway_config(scratch, protocol))]
            return [*prefix, *command, "--mode", args.mode, "--log-level", args.log_level]

        commands: dict[str, tuple[list[str], dict[str, str] | None]] = {
            "direct": (UPSTREAM, None),
            "gateway": (serve(args.profile), None),
        }
        if args.compare is not None:
            commands["compare"] = (serve(None), {"PYTHONPATH": str(args.compare)})
        elif args.compare_upstream_protocol is not None:
            commands["compare"] = (serve(None, args.compare_upstream_protocol), {"TOOLSCOUT_COMPARE": "1"})
        async with AsyncExitStack() as clients:
            connected: dict[str, Client] = {}
            for label, (command, env) in commands.items():
                params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(ROOT), env=env)
                connected[label] = await clients.enter_async_context(
                    Client(stdio_client(params, errlog=errlog), mode=args.era, **callbacks(args))
                )
            calls = {label: (TOOL, ARGUMENTS) if label == "direct" else (tool, arguments) for label in connected}
            pids: dict[str, int] = {}
            for pid, (cmdline, environ) in children().items():
                if "toolscout.demo.units" in cmdline:
                    pids["direct"] = pid
                elif (args.compare is not None and f"PYTHONPATH={args.compare}" in environ) or (
                    "TOOLSCOUT_COMPARE=1" in environ
                ):
                    pids["compare"] = pid
                else:
                    pids["gateway"] = pid
            print(
                f"era {connected['gateway'].protocol_version}, mode {args.mode}, log level {args.log_level}, "
                f"{args.rounds} rounds × {args.calls} calls each to {', '.join(connected)}, "
                f"alternating batches of {BATCH}; upstream protocol {args.upstream_protocol}"
                + (f"; compare: {args.compare}" if args.compare else "")
                + (
                    f"; compare: upstream protocol {args.compare_upstream_protocol}"
                    if args.compare_upstream_protocol
                    else ""
                )
            )
            for _ in range(WARMUP):
                for label, client in connected.items():
                    await timed(client, *calls[label])
            gateways = [label for label in connected if label != "direct"]
            print(
                "| round | direct median ms | "
                + " | ".join(f"{g} median ms | {g} added ms" for g in gateways)
                + " | direct p90 | "
                + " | ".join(f"{g} p90" for g in gateways)
                + " | "
                + " | ".join(f"{label} CPU ms/call" for label in connected)
                + " |"
            )
            print("|---" * (3 + 4 * len(gateways) + 1) + "|")
            added: dict[str, list[float]] = {g: [] for g in gateways}
            for number in range(1, args.rounds + 1):
                samples: dict[str, list[float]] = {label: [] for label in connected}
                cpu = {label: cpu_seconds(pid) for label, pid in pids.items()}
                while len(samples["direct"]) < args.calls:
                    batch = min(BATCH, args.calls - len(samples["direct"]))
                    for label, client in connected.items():
                        for _ in range(batch):
                            samples[label].append(await timed(client, *calls[label]))
                direct = statistics.median(samples["direct"])
                cells = [f"{direct:.3f}"]
                for g in gateways:
                    median = statistics.median(samples[g])
                    added[g].append(median - direct)
                    cells += [f"{median:.3f}", f"{median - direct:+.3f}"]
                cells += [f"{harness.percentile(samples[label], 0.9):.3f}" for label in connected]
                cells += [
                    f"{(cpu_seconds(pids[label]) - cpu[label]) * 1000 / args.calls:.3f}" if label in pids else "?"
                    for label in connected
                ]
                print(f"| {number} | " + " | ".join(cells) + " |")
            print()
            for g in gateways:
                print(
                    f"{g}: added ms per round {', '.join(f'{a:.3f}' for a in added[g])}; "
                    f"median of rounds {statistics.median(added[g]):.3f}"
                )
        # The gateway has exited (stdin closed): its profile is written.
        if args.profile is not None:
            print_profile(args.profile, args.rounds * args.calls + WARMUP, args.top)


async def measure_inprocess(args: argparse.Namespace) -> None:
    from toolscout.cli.serve import LogLevel, setup_logging
    from toolscout.config import load_config
    from toolscout.gateway.core import Gateway
    from toolscout.modes.base import SurfaceOptions
    from toolscout.serve.server import build_server

    tool, arguments = call_of(args.mode)
    with tempfile.TemporaryDirectory(prefix="toolscout-call-profile-") as tmp:
        scratch = Path(tmp)
        config = load_config(gateway_config(scratch, args.upstream_protocol))
        setup_logging(LogLevel(args.log_level), background=True)
        log = logging.FileHandler(scratch / "gateway.log")
        log.setFormatter(logging.getLogger().handlers[0].formatter)
        logging.getLogger().handlers[:] = [log]
        async with Gateway.from_config(config) as gw:
            with anyio.fail_after(60):
                await gw.settle()
            server = build_server(gw, args.mode, SurfaceOptions.from_config(config))
            async with Client(server, mode=args.era, **callbacks(args)) as client:
                print(
                    f"in process, era {client.protocol_version}, mode {args.mode}, log level {args.log_level}, "
                    f"{args.rounds} rounds × {args.calls} calls"
                )
                for _ in range(WARMUP):
                    await timed(client, tool, arguments)
                profiler = cProfile.Profile() if args.profile is not None else None
                medians: list[float] = []
                for number in range(1, args.rounds + 1):
                    if profiler is not None:
                        profiler.enable()
                    samples = [await timed(client, tool, arguments) for _ in range(args.calls)]
                    if profiler is not None:
                        profiler.disable()
                    medians.append(statistics.median(samples))
                    print(f"round {number}: median {medians[-1]:.3f} ms, p90 {harness.percentile(samples, 0.9):.3f} ms")
                print(f"median of rounds {statistics.median(medians):.3f} ms")
                if profiler is not None:
                    profiler.dump_stats(str(args.profile))
        if args.profile is not None:
            print_profile(args.profile, args.rounds * args.calls, args.top)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000, help="measured calls per round (each way)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--era", choices=sorted(ERAS), default="legacy", help="legacy: 2025-11-25, auto: 2026-07-28")
    parser.add_argument("--mode", choices=["discovery", "passthrough"], default="discovery")
    parser.add_argument("--log-level", choices=["debug", "info", "warning", "error"], default="info")
    parser.add_argument("--inprocess", action="store_true", help="the gateway in this process (in-memory transport)")
    parser.add_argument(
        "--client-asks", action="store_true", help="the client declares sampling and elicitation (2026-07-28: rounds)"
    )
    parser.add_argument("--profile", type=Path, default=None, help="write the gateway's cProfile here and summarise it")
    parser.add_argument("--top", type=int, default=30, help="functions shown from the profile")
    parser.add_argument("--compare", type=Path, default=None, help="also measure a gateway run from this source tree")
    parser.add_argument(
        "--upstream-protocol", choices=["auto", "legacy"], default="auto", help="the gateway's era to `units`"
    )
    parser.add_argument(
        "--compare-upstream-protocol",
        choices=["auto", "legacy"],
        default=None,
        help="also measure a gateway (this source) speaking this era to `units`",
    )
    args = parser.parse_args()
    if args.profile is not None:
        args.profile = args.profile.resolve()
    if args.compare is not None:
        args.compare = args.compare.resolve()
        if not (args.compare / "toolscout" / "__init__.py").exists():
            parser.error(f"{args.compare} holds no toolscout package")
    anyio.run(measure_inprocess if args.inprocess else measure_serve, args)
    sys.stdout.flush()
