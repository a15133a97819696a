"""Resident memory of the gateway process: idle, with the four demo servers, and with 527 and 10,000 tools indexed.

    python -m benchmarks memory [--tools 10000] [--eval-dir ../shared/eval]

`toolscout serve --transport http` runs as a child process (default settings; `TOOLSCOUT_CACHE_DIR`,
the audit log and so the persistent catalog and embedding cache in a temporary directory) in front of
real upstreams: the LiveMCPTool catalog (527 tools, 70 servers); 10,000 tools as the same servers
copied under new names (as in benchmarks/token_modes.py: 1,327 servers); the same 10,000 tools on
100 servers of 100 tools (to tell the cost of a tool from the cost of a connection), each catalog
served over streamable HTTP by one `toolscout.demo.catalog_server` process; the four bundled demo
servers over stdio (notes, units, text, files, as `cli_latency` configures them: a gateway as a
person first runs it); and, for the baseline, no servers at all. An `mcp.Client`
connects (2025-11-25 era) and polls `list_mcp_servers` until every server is connected; then one
`search_tools` call builds the search index (timed: "took"). When that search ranks by words alone
(`rankedByWords`: the gateway embeds a catalog of many new tools in the background), the same search
is asked again until the full index answers ("full index ready after", from the first search; 0
when it answered at once). VmRSS of the gateway process (from /proc/<pid>/status) is read after the
handshake, once everything is connected, and once the full index answers; VmHWM is its peak.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
from mcp import Client

from benchmarks import harness
from benchmarks.cli_latency import DEMOS
from benchmarks.processes import running
from benchmarks.search import DEFAULT_EVAL_DIR
from benchmarks.token_modes import renamed
from benchmarks.upstreams import PYTHON, catalog_over_http, http_servers, rss_kib, write_catalog
from toolscout.search.evaluation import load_catalog_servers

SERVE_READY = r"serving streamable HTTP at (http://\S+/mcp)"
QUERY = "search the web for recent news"
CONNECT_DEADLINE = 900.0
PACKED_SERVERS = 100


def packed(servers: Mapping[str, list[types.Tool]], count: int) -> dict[str, list[types.Tool]]:
    """The same tools on `count` servers of equal size (a name taken on a server gets a `_<k>` suffix)."""
    tools = [tool for server_tools in servers.values() for tool in server_tools]
    per = -(-len(tools) // count)
    out: dict[str, list[types.Tool]] = {}
    for index in range(count):
        names: set[str] = set()
        chosen: list[types.Tool] = []
        for tool in tools[index * per : (index + 1) * per]:
            name, k = tool.name, 1
            while name in names:
                name, k = f"{tool.name}_{k}", k + 1
            names.add(name)
            chosen.append(tool.model_copy(update={"name": name}))
        out[f"bulk {index:03d}"] = chosen
    return out


@dataclass(frozen=True)
class Reading:
    label: str
    servers: int
    tools: int
    handshake_s: float
    handshake_kib: int
    connect_s: float
    timeouts: int
    connected_kib: int
    searched_kib: int
    search_s: float
    peak_kib: int
    embedded_s: float
    """From the first search until a search no longer ranks by words alone (0: it never did)."""


DEMOS_CASE = "four demo servers (stdio)"
"""The label of the case with the bundled demo servers, which are configured rather than served from a catalog."""


async def measure_one(
    label: str, upstreams: Mapping[str, list[types.Tool]], scratch: Path, stack: AsyncExitStack, *, demos: bool = False
) -> Reading:
    entries: dict[str, Any] = {}
    if demos:
        entries = {name: {"command": PYTHON, "args": ["-m", f"toolscout.demo.{name}"]} for name in DEMOS}
    elif upstreams:
        catalog = write_catalog(upstreams, scratch / f"{label}.jsonl")
        base = await stack.enter_async_context(catalog_over_http(catalog))
        entries = http_servers(base, list(upstreams))
    config = scratch / f"{label}.json"
    audit = {"path": str(scratch / f"{label}-audit.jsonl")}
    config.write_text(json.dumps({"mcpServers": entries, "audit": audit}), encoding="utf-8")
    env = {**os.environ, "TOOLSCOUT_CACHE_DIR": str(scratch / f"{label}-cache")}
    command = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--transport", "http", "--port", "0"]
    launched = time.perf_counter()
    async with (
        running(command, ready=SERVE_READY, env=env) as gateway,
        Client(gateway.match.group(1), mode="legacy") as client,
    ):
        pid = gateway.process.pid
        await client.list_tools()
        handshake_s = time.perf_counter() - launched
        handshake = rss_kib(pid)["VmRSS"]
        while True:
            listed = cast(dict[str, Any], (await client.call_tool("list_mcp_servers", {})).structured_content)
            if all(s["status"] == "connected" for s in listed["servers"]):
                break
            if time.perf_counter() - launched > CONNECT_DEADLINE:
                statuses = Counter(str(s["status"]) for s in listed["servers"])
                raise SystemExit(f"{label}: not all connected after {CONNECT_DEADLINE} s: {dict(statuses)}")
            await anyio.sleep(0.5)
        connect_s = time.perf_counter() - launched
        connected = rss_kib(pid)["VmRSS"]
        timeouts = sum("did not finish connecting" in line for line in gateway.stderr)
        began = time.perf_counter()
        found = await client.call_tool("search_tools", {"query": QUERY})
        search_s = time.perf_counter() - began
        if found.is_error:
            raise SystemExit(f"{label}: search failed: {found.content}")
        # A catalog of many new tools is embedded in the background, searches ranking by words
        # meanwhile: the memory is read once the full index answers.
        embedded_s = 0.0
        while cast(dict[str, Any], found.structured_content).get("rankedByWords"):
            if time.perf_counter() - began > CONNECT_DEADLINE:
                raise SystemExit(f"{label}: still ranking by words {CONNECT_DEADLINE} s after the first search")
            await anyio.sleep(0.1)
            found = await client.call_tool("search_tools", {"query": QUERY})
            embedded_s = time.perf_counter() - began
        after = rss_kib(pid)
    return Reading(
        label,
        len(listed["servers"]),
        int(listed["totalTools"]),
        handshake_s,
        handshake,
        connect_s,
        timeouts,
        connected,
        after["VmRSS"],
        search_s,
        after["VmHWM"],
        embedded_s,
    )


async def measure(size: int, eval_dir: Path) -> None:
    live = load_catalog_servers(eval_dir / "catalog_livemcpbench.jsonl")
    copied = renamed(live, size)
    cases: list[tuple[str, dict[str, list[types.Tool]]]] = [
        ("idle, no servers", {}),
        (DEMOS_CASE, {}),
        ("LiveMCPTool", live),
        (f"{size:,} tools, LiveMCPTool copied", copied),
        (f"{size:,} tools, {PACKED_SERVERS} servers", packed(copied, PACKED_SERVERS)),
    ]
    readings: list[Reading] = []
    for label, upstreams in cases:
        async with AsyncExitStack() as stack:
            scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="toolscout-memory-")))
            demos = label == DEMOS_CASE
            readings.append(await measure_one(f"case-{len(readings)}", upstreams, scratch, stack, demos=demos))
    print(f"## Gateway memory — {harness.today()}")
    print()
    print(
        f"{harness.machine_line()}; `toolscout serve "
        "--transport http` with default settings, upstreams over streamable HTTP from one catalog_server process "
        "(the demo servers over stdio, children of the gateway); "
        "seconds from launch; VmRSS of the gateway process, MiB:"
    )
    print()
    print(
        "| upstreams | servers | tools | handshake | all connected (connect timeouts) | after handshake "
        "| all connected | after first search (took; full index ready after) | peak (VmHWM) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    idle = readings[0].searched_kib
    for (label, _), r in zip(cases, readings, strict=True):
        print(
            f"| {label} | {r.servers} | {r.tools} | {r.handshake_s:.1f} s | {r.connect_s:.1f} s ({r.timeouts}) "
            f"| {r.handshake_kib / 1024:.1f} | {r.connected_kib / 1024:.1f} "
            f"| {r.searched_kib / 1024:.1f} ({r.search_s:.2f} s; {r.embedded_s:.2f} s) | {r.peak_kib / 1024:.1f} |"
        )
        harness.record(
            label,
            {
                "servers": r.servers,
                "tools": r.tools,
                "connected_mib": r.connected_kib / 1024,
                "searched_mib": r.searched_kib / 1024,
                "peak_mib": r.peak_kib / 1024,
                "first_search_s": r.search_s,
                "full_index_after_s": r.embedded_s,
            },
        )
    for (label, _), r in list(zip(cases, readings, strict=True))[1:]:
        extra = (r.searched_kib - idle) / 1024
        # A handful of demo tools would make "a tool" the cost of the search machinery itself.
        per_tool = "" if label == DEMOS_CASE else f", {extra * 1024 / r.tools:.1f} KiB a tool"
        print(f"\n{label}: +{extra:.1f} MiB over the idle gateway after the first search{per_tool}.")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    args = parser.parse_args()
    anyio.run(measure, args.tools, args.eval_dir)
