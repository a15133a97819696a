"""Added latency of a tool call through the gateway, against the same call made directly and through FastMCP's proxy.

    python -m benchmarks proxy_latency --install-fastmcp   # once: FastMCP in benchmarks/.venv-fastmcp
    python -m benchmarks proxy_latency [--calls 1500] [--calls-2026 400] [--eras legacy,auto]

One upstream, the bundled demo server `units` (`convert_units`, a cheap pure function), run as a real
process. For each transport, stdio and streamable HTTP, and each protocol era of the client (`legacy`:
2025-11-25; `auto`: 2026-07-28), one `mcp.Client` in this process calls `convert_units`:

* directly: to the upstream (over stdio, a child of its own; over HTTP, the one shared upstream process);
* through `toolscout serve` (a child process, default settings, audit log and persistent catalog in a
  temporary directory) in discovery mode, calling `execute_tool`, and in passthrough mode, calling
  the native `convert_units` (the like-for-like proxy call; in front of one server passthrough keeps
  its tools' own names); and in discovery mode speaking the other protocol era to `units` than by
  default ("the other upstream era": `protocol: auto`, 2026-07-28 instead of the handshake era's
  2025-11-25, on either transport);
* through `benchmarks/bare_proxy.py`, the least a proxy built on the same SDK pieces can do (a
  low-level `Server` forwarding `tools/call` to one `mcp.Client`, at 2025-11-25 upstream, and
  nothing else): the floor under toolscout's added time;
* through `benchmarks/byte_relay.py`, one more process that copies bytes without reading a message
  (stdio lines; TCP connections): the floor of any proxy, MCP handling left out;
* through `benchmarks/message_relay.py`, one more process that parses and re-serialises every
  message without the SDK (stdio: request ids mapped; HTTP: uvicorn in front, httpx2 behind, as in
  toolscout): the floor of any proxy that reads the messages, in Python with this project's HTTP stack;
* through a FastMCP proxy (`fastmcp` from PyPI, in its own venv, run as a child process): the
  documented `create_proxy(target)`, and `create_proxy(connected_client)`, which reuses one backend
  session for every request (FastMCP logs that this may mix request contexts; over HTTP it is much faster).

Every proxy talks to the upstream over the same transport as its client talks to it (stdio → stdio:
each proxy starts its own `units` child; HTTP → HTTP: all front the one `units` process). All
connections are opened first, each is warmed up, then the configurations are measured round-robin in
batches (in a shuffled order each round), so machine noise falls on all of them alike. Prints Markdown:
median and p99 per configuration, ratio to the direct call's median, added time (median − direct
median), and the targets set for the proxy: execute_tool ≤ 1.3× the direct median, and toolscout's added time
at most half of FastMCP's (also round by round: the ratio of each round's medians, whose spread
shows whether the run's verdict stands clear of the machine's drift). Last, the CPU time each HTTP
front (one process serving both eras) spent per call made to it, warm-up included, read from /proc.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from benchmarks import harness
from benchmarks.processes import cpu_seconds, running

ROOT = Path(__file__).resolve().parent.parent
FASTMCP_VENV = ROOT / "benchmarks" / ".venv-fastmcp"
FASTMCP_VERSION = "4.1.6"
PYTHON = sys.executable
UPSTREAM = [PYTHON, "-m", "toolscout.demo.units"]
TOOL = "convert_units"
ARGUMENTS: dict[str, Any] = {"value": 26.2, "from_unit": "mi", "to_unit": "km"}
EXPECTED = 42.1648128
UVICORN_READY = r"Uvicorn running on http://127\.0\.0\.1:(\d+)"
SERVE_READY = r"serving streamable HTTP at (http://\S+/mcp)"
FASTMCP_READY = r"fastmcp proxy at (http://\S+/mcp)"
BARE_READY = r"bare proxy at (http://\S+/mcp)"
RELAY_READY = r"byte relay at (http://\S+/mcp)"
MESSAGE_RELAY_READY = r"message relay at (http://\S+/mcp)"
HTTP_ANY_PORT = ["--transport", "http", "--port", "0"]
ERAS = {"legacy": "2025-11-25", "auto": "2026-07-28"}
STDIO_ENV = {key: os.environ[key] for key in ("PYTHONPATH",) if key in os.environ}
"""What the stdio children get beyond the few variables the SDK's stdio client passes on (HOME, PATH, ...):
PYTHONPATH, so that a run with another tree first on it (`lean --compare`) starts that tree's gateway
over stdio as it does over HTTP."""

# Run by the FastMCP venv's Python: `-c FASTMCP_PROXY <stdio|http> <default|reused> <upstream URL or command...>`.
FASTMCP_PROXY = """
import socket, sys
import anyio
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy

transport, variant, *upstream = sys.argv[1:]
target = upstream[0] if upstream[0].startswith("http") else StdioTransport(command=upstream[0], args=upstream[1:])

async def serve(proxy):
    if transport == "stdio":
        await proxy.run_async(transport="stdio", show_banner=False)
        return
    # IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets whose proto says TCP (toolscout.serve.http.bind's way).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    print(f"fastmcp proxy at http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    await proxy.run_async(transport="http", show_banner=False, host="127.0.0.1", port=port, sockets=[sock])

async def main():
    if variant == "reused":
        async with Client(target) as client:
            await serve(create_proxy(client, name="fastmcp-proxy"))
    else:
        await serve(create_proxy(target, name="fastmcp-proxy"))

anyio.run(main)
"""

# What fastmcp-slim's `client` and `server` extras require, as the venv's own `packaging` reads its metadata.
FASTMCP_REQUIREMENTS = """
import importlib.metadata
from packaging.requirements import Requirement

for line in importlib.metadata.requires("fastmcp-slim") or []:
    req = Requirement(line)
    if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in ("client", "server")):
        print(req.name if req.name == "certifi" else str(req).split(";")[0])
"""


@dataclass
class Route:
    """One measured configuration: a connected client and the call it makes."""

    era: str
    transport: str
    label: str
    client: Client
    tool: str
    arguments: dict[str, Any]
    samples: list[float] = field(default_factory=list[float])
    rounds: list[list[float]] = field(default_factory=list[list[float]])
    """The samples again, one list per round: every route's batch of a round ran within seconds of the others'."""


def install_fastmcp(venv: Path, version: str) -> None:
    """Create `venv` with fastmcp `version` (the same mcp SDK as toolscout's, in a venv of its own)."""
    subprocess.run([PYTHON, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "packaging"], check=True)
    if subprocess.run([*pip, f"fastmcp=={version}"], check=False).returncode == 0:
        return
    # fastmcp-slim 4.1.x's server extra pins certifi>=2026.10.19; a registry that does not have it yet
    # (this machine's) gets fastmcp's own wheels as released and every other requirement as declared.
    print("fastmcp: installing its requirements with certifi unpinned", file=sys.stderr)
    subprocess.run([*pip, "--no-deps", f"fastmcp=={version}", f"fastmcp-slim=={version}"], check=True)
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-c", FASTMCP_REQUIREMENTS], check=True, capture_output=True, text=True
    )
    subprocess.run([*pip, *listed.stdout.split("\n")[:-1]], check=True)


def fastmcp_version(python: Path) -> str:
    done = subprocess.run(
        [
            str(python),
            "-c",
            "import fastmcp, mcp, importlib.metadata as m; print(fastmcp.__version__, m.version('mcp'))",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"no FastMCP at {python}: run `python -m benchmarks proxy_latency --install-fastmcp` first\n{done.stderr}"
        )
    fm, sdk = done.stdout.split()
    return f"fastmcp {fm} (mcp {sdk})"


def _round_ratios(ours: Route, peer: Route, direct: Route) -> list[float]:
    """Our added time over the peer's, round by round (each from the medians of that round's batches).

    The machine's speed drifts over a run; within one round the three batches ran back to back, so the
    spread of these ratios shows how firmly the ratio of the whole run's medians stands.
    """
    ratios: list[float] = []
    for mine, theirs, base in zip(ours.rounds, peer.rounds, direct.rounds, strict=True):
        reference = statistics.median(base)
        peer_added = statistics.median(theirs) - reference
        if peer_added > 0:
            ratios.append((statistics.median(mine) - reference) / peer_added)
    return ratios


async def measure(calls: dict[str, int], batch: int, warmup: int, eras: list[str], fastmcp_python: Path) -> None:
    peer = fastmcp_version(fastmcp_python)
    fm = str(fastmcp_python)
    async with AsyncExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="toolscout-proxy-")))
        errlog: TextIO = stack.enter_context((scratch / "stdio-children.log").open("w"))
        upstream = await stack.enter_async_context(running([*UPSTREAM, *HTTP_ANY_PORT], ready=UVICORN_READY))
        upstream_url = f"http://127.0.0.1:{upstream.match.group(1)}/mcp"
        configs: dict[tuple[str, str], Path] = {}
        for transport, server in (
            ("stdio", {"command": UPSTREAM[0], "args": UPSTREAM[1:]}),
            ("http", {"url": upstream_url}),
        ):
            for protocol in ("default", "auto"):
                configs[transport, protocol] = scratch / f"toolscout-{transport}-{protocol}.json"
                entry = server if protocol == "default" else {**server, "protocol": protocol}
                configs[transport, protocol].write_text(
                    json.dumps(
                        {
                            "mcpServers": {"units": entry},
                            "audit": {"path": str(scratch / f"audit-{transport}-{protocol}.jsonl")},
                            "catalogCache": {"path": str(scratch / f"catalog-{transport}-{protocol}.sqlite3")},
                        }
                    ),
                    encoding="utf-8",
                )

        def gateway(transport: str, mode: str, protocol: str = "default") -> list[str]:
            config = configs[transport, protocol]
            return [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--mode", mode]

        def bare(transport: str, target: list[str]) -> list[str]:
            return [PYTHON, "-m", "benchmarks.bare_proxy", transport, *target]

        def relay(transport: str, target: list[str], kind: str = "byte") -> list[str]:
            return [PYTHON, "-m", f"benchmarks.{kind}_relay", transport, *target]

        def fastmcp(transport: str, variant: str, target: list[str]) -> list[str]:
            return [fm, "-c", FASTMCP_PROXY, transport, variant, *target]

        # The HTTP fronts, one process each, shared by both eras.
        fronts: dict[str, str] = {"direct": upstream_url}
        front_pids: dict[str, int] = {}
        for label, command, ready in (
            (
                "toolscout execute_tool",
                [*gateway("http", "discovery"), *HTTP_ANY_PORT],
                SERVE_READY,
            ),
            (
                "toolscout execute_tool, the other upstream era",
                [*gateway("http", "discovery", "auto"), *HTTP_ANY_PORT],
                SERVE_READY,
            ),
            (
                "toolscout passthrough",
                [*gateway("http", "passthrough"), *HTTP_ANY_PORT],
                SERVE_READY,
            ),
            ("bare SDK proxy", bare("http", [upstream_url]), BARE_READY),
            ("byte relay (no MCP)", relay("http", [upstream_url]), RELAY_READY),
            ("message relay (no SDK)", relay("http", [upstream_url], "message"), MESSAGE_RELAY_READY),
            ("fastmcp create_proxy", fastmcp("http", "default", [upstream_url]), FASTMCP_READY),
            ("fastmcp reused session", fastmcp("http", "reused", [upstream_url]), FASTMCP_READY),
        ):
            front = await stack.enter_async_context(running(command, ready=ready))
            fronts[label], front_pids[label] = front.match.group(1), front.process.pid

        stdio_commands = {
            "direct": UPSTREAM,
            "toolscout execute_tool": gateway("stdio", "discovery"),
            "toolscout execute_tool, the other upstream era": gateway("stdio", "discovery", "auto"),
            "toolscout passthrough": gateway("stdio", "passthrough"),
            "bare SDK proxy": bare("stdio", UPSTREAM),
            "byte relay (no MCP)": relay("stdio", UPSTREAM),
            "message relay (no SDK)": relay("stdio", UPSTREAM, "message"),
            "fastmcp create_proxy": fastmcp("stdio", "default", UPSTREAM),
            "fastmcp reused session": fastmcp("stdio", "reused", UPSTREAM),
        }
        routes: list[Route] = []
        for era in eras:
            for transport in ("stdio", "http"):
                for label in stdio_commands:
                    if transport == "stdio":
                        command = stdio_commands[label]
                        params = StdioServerParameters(
                            command=command[0], args=command[1:], cwd=str(ROOT), env=STDIO_ENV or None
                        )
                        target: Any = stdio_client(params, errlog=errlog)
                    else:
                        target = fronts[label]
                    client = await stack.enter_async_context(Client(target, mode=era))
                    if client.protocol_version != ERAS[era]:
                        raise SystemExit(f"{transport} {label}: negotiated {client.protocol_version}, not {ERAS[era]}")
                    if label.startswith("toolscout execute_tool"):
                        tool, arguments = "execute_tool", {"server": "units", "tool": TOOL, "arguments": ARGUMENTS}
                    else:  # passthrough in front of one server: the tool's own name
                        tool, arguments = TOOL, ARGUMENTS
                    routes.append(Route(ERAS[era], transport, label, client, tool, arguments))

        async def call(route: Route) -> float:
            started = time.perf_counter()
            result = await route.client.call_tool(route.tool, route.arguments)
            elapsed = (time.perf_counter() - started) * 1000
            content: dict[str, Any] = result.structured_content or {}
            if result.is_error or content.get("result") != EXPECTED:
                raise SystemExit(f"{route.transport} {route.label}: unexpected result {result}")
            return elapsed

        # Each HTTP front is one process serving both eras: its CPU time over every call made to it
        # (warm-up included) is what one proxied call costs it, whatever the machine's noise does to
        # the latencies.
        cpu_before = {label: cpu_seconds(pid) for label, pid in front_pids.items()}
        for route in routes:
            for _ in range(warmup):
                await call(route)
        rng = random.Random(7)
        started = time.perf_counter()
        for _ in range(math.ceil(max(calls[ERAS[e]] for e in eras) / batch)):
            order = routes[:]
            rng.shuffle(order)
            for route in order:
                taken = [await call(route) for _ in range(min(batch, calls[route.era] - len(route.samples)))]
                if taken:
                    route.samples += taken
                    route.rounds.append(taken)
        took = time.perf_counter() - started
        front_calls = {
            label: sum(warmup + len(r.samples) for r in routes if r.transport == "http" and r.label == label)
            for label in front_pids
        }
        cpu_per_call = {
            label: (cpu_seconds(pid) - cpu_before[label]) * 1000 / front_calls[label]
            for label, pid in front_pids.items()
        }

    print(f"## Proxy latency — {harness.today()}")
    print()
    print(
        f"{harness.machine_line()}; peer: {peer}; "
        f"upstream `units` `{TOOL}`; "
        + ", ".join(f"{calls[ERAS[e]]} calls per configuration at {ERAS[e]}" for e in eras)
        + f" after {warmup} warm-up calls each, "
        f"round-robin in batches of {batch} ({took:.0f} s)."
    )
    print()
    print("| era | transport | path | median ms | p99 ms | × direct median | added ms (median) |")
    print("|---|---|---|---|---|---|---|")
    groups: dict[tuple[str, str], dict[str, Route]] = {}
    for route in routes:
        groups.setdefault((route.era, route.transport), {})[route.label] = route
    for (era, transport), by_label in groups.items():
        direct = statistics.median(by_label["direct"].samples)
        for label, route in by_label.items():
            median = statistics.median(route.samples)
            ratio = "1" if label == "direct" else f"{median / direct:.2f}"
            added = "—" if label == "direct" else f"{median - direct:+.2f}"
            p99 = harness.percentile(route.samples, 0.99, rank="ceil")
            print(f"| {era} | {transport} | {label} | {median:.2f} | {p99:.2f} | {ratio} | {added} |")
            if label != "direct":
                harness.record(f"added ms/{era}/{transport}/{label}", round(median - direct, 3))
    print()
    print(
        "| era | transport | execute_tool ≤ 1.3× direct median | execute_tool added ≤ ½ FastMCP create_proxy's "
        "| … ≤ ½ FastMCP reused session's | the SDK's floor: bare proxy × direct | execute_tool − bare proxy "
        "| the hop's floor: byte relay × direct | reading every message: message relay × direct |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for (era, transport), by_label in groups.items():
        direct = statistics.median(by_label["direct"].samples)
        ours = statistics.median(by_label["toolscout execute_tool"].samples)
        added = ours - direct
        cells = [f"{ours / direct:.2f}× — {'met' if ours <= 1.3 * direct else 'missed'}"]
        for peer_label in ("fastmcp create_proxy", "fastmcp reused session"):
            theirs = statistics.median(by_label[peer_label].samples) - direct
            verdict = "met" if added <= theirs / 2 else "missed"
            rounds = _round_ratios(by_label["toolscout execute_tool"], by_label[peer_label], by_label["direct"])
            low, middle, high = harness.quartiles(rounds)
            cells.append(
                f"{added:.2f} vs {theirs:.2f} ms ({added / theirs:.2f}) — {verdict}; "
                f"{len(rounds)} rounds: median {middle:.2f}, middle half {low:.2f}–{high:.2f}, "
                f"≤ 0.5 in {sum(r <= 0.5 for r in rounds)}"
            )
        floor = statistics.median(by_label["bare SDK proxy"].samples)
        hop = statistics.median(by_label["byte relay (no MCP)"].samples)
        reading = statistics.median(by_label["message relay (no SDK)"].samples)
        cells += [
            f"{floor / direct:.2f}×",
            f"{ours - floor:+.2f} ms",
            f"{hop / direct:.2f}×",
            f"{reading / direct:.2f}×",
        ]
        print(f"| {era} | {transport} | " + " | ".join(cells) + " |")
    print()
    print("CPU time of each HTTP front per proxied call, both eras, from /proc (ms):")
    print()
    print("| front | calls | CPU ms a call |")
    print("|---|---|---|")
    for label, ms in cpu_per_call.items():
        print(f"| {label} | {front_calls[label]} | {ms:.2f} |")
        harness.record(f"cpu ms a call/http/{label}", round(ms, 3))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=1500, help="measured calls per configuration, legacy era")
    parser.add_argument("--calls-2026", type=int, default=400, help="measured calls per configuration, 2026-07-28")
    parser.add_argument("--batch", type=int, default=50, help="calls in a row to one configuration")
    parser.add_argument("--warmup", type=int, default=50, help="unmeasured calls per configuration first")
    parser.add_argument("--eras", default="legacy,auto", help="client modes: legacy (2025-11-25), auto (2026-07-28)")
    parser.add_argument("--fastmcp-python", type=Path, default=FASTMCP_VENV / "bin" / "python")
    parser.add_argument(
        "--install-fastmcp",
        action="store_true",
        help=f"create {FASTMCP_VENV.relative_to(ROOT)} with fastmcp {FASTMCP_VERSION} and stop",
    )
    args = parser.parse_args()
    if args.install_fastmcp:
        install_fastmcp(FASTMCP_VENV, FASTMCP_VERSION)
        print(fastmcp_version(FASTMCP_VENV / "bin" / "python"))
        return
    eras = [e.strip() for e in str(args.eras).split(",") if e.strip()]
    calls = {ERAS["legacy"]: args.calls, ERAS["auto"]: args.calls_2026}
    anyio.run(measure, calls, args.batch, args.warmup, eras, args.fastmcp_python)
