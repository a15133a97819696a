"""Cold start with 100 configured servers, one of them hanging: from launch to the first search answered.

    python -m benchmarks cold_start [--runs 5] [--eval-dir ../shared/eval] [--compare SRC]

100 real upstreams: 99 LiveMCPTool catalog servers (its 70, then copies under new names) served over
streamable HTTP by one `toolscout.demo.catalog_server` process, and one stdio server that starts and
never answers. `toolscout serve` (stdio, default settings, `TOOLSCOUT_CACHE_DIR` in a temporary
directory, so the persistent catalog and the embedding cache start empty) is launched by an
`mcp.Client` (2025-11-25 era), which times from the launch: the handshake (`initialize`), the first
`tools/list`, and the first successful `search_tools` answer (the call is repeated until one is not
an error). Scenarios, each `--runs` times:

* empty cache: a fresh cache directory every run;
* warm cache: one run first to fill it (stopped once every server but the hanging one is connected),
  then every run starts from it; the hanging server never answered, so it has no stored catalog;
* warm cache, the hanging server cached: the same, but the hanging server answered in the run that
  filled the cache (the same command, told by a flag file to serve then and to hang afterwards).

A baseline (the gateway with only the hanging server, stopped after `tools/list`) shows what
process start and imports cost. Prints Markdown: median and worst per scenario, what the first
search saw, how long the gateway took to exit once the client closed its stdin (the SDK's client
sends SIGTERM after 2 s), and the target (first search ≤ 1 s from the persistent catalog whatever
the upstreams do), counted from launch and from the end of the handshake.

`--compare SRC`: every launch is made twice in a row, by this tree's gateway and by one run from
another copy of the source tree (`SRC` holds the `toolscout` package, e.g. a checkout's `src/`; it
goes first on `PYTHONPATH`), so that a change's before and after share the machine's noise. The
caches are filled by this tree's gateway; the other must read the same catalog file format.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from benchmarks import harness
from benchmarks.search import DEFAULT_EVAL_DIR
from benchmarks.upstreams import HANG, PYTHON, ROOT, catalog_over_http, copies, http_servers, reap, write_catalog
from toolscout.gateway.store import DEFAULT_FILE_NAME, CatalogStore
from toolscout.search.evaluation import load_catalog_servers

SERVERS = 100
QUERY = "search the web for recent news"
# Serves one catalog server over stdio, or, once the flag file exists, starts and never answers.
FLAKY = """
import os, sys, time
flag, catalog, server, _marker = sys.argv[1:]
if os.path.exists(flag):
    time.sleep(3600)
from toolscout.demo.catalog_server import main
main(["--catalog", catalog, "--server", server])
"""


@dataclass(frozen=True)
class Start:
    handshake: float
    listed: float
    searched: float | None
    stopped: float
    saw: str
    leaked: int = 0


async def start(
    config: Path,
    cache: Path,
    log: Path,
    marker: str,
    *,
    search: bool = True,
    wait_connected: int = 0,
    source: Path | None = None,
) -> Start:
    """Launch the gateway on `config` with `cache` as its cache directory; time it to the first search.

    With `wait_connected`, keep it running after the search until that many servers are connected;
    without `search`, stop after the first `tools/list`. Upstreams still running once the gateway has
    exited (their command line holds `marker`) are counted and stopped. `source`: run the gateway
    from that copy of the source tree instead.
    """
    env = {"TOOLSCOUT_CACHE_DIR": str(cache)}
    if source is not None:
        env["PYTHONPATH"] = str(source)
    params = StdioServerParameters(
        command=PYTHON, args=["-m", "toolscout", "serve", "--config", str(config)], env=env, cwd=str(ROOT)
    )
    with log.open("a", encoding="utf-8") as errlog:
        began = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            handshake = time.perf_counter() - began
            await client.list_tools()
            listed = time.perf_counter() - began
            searched, saw = (await _search(client, began, wait_connected)) if search else (None, "—")
            stopping = time.perf_counter()
        stopped = time.perf_counter() - stopping
    return Start(handshake, listed, searched, stopped, saw, reap(marker))


async def _search(client: Client, began: float, wait_connected: int) -> tuple[float, str]:
    """Seconds from `began` to the first successful search, and what it saw."""
    while True:
        found = await client.call_tool("search_tools", {"query": QUERY})
        if not found.is_error:
            break
    searched = time.perf_counter() - began
    results = _structured(found)["results"]
    stale = sum(1 for r in results if r.get("stale"))
    servers = await _servers(client)
    while wait_connected and sum(s["status"] == "connected" for s in servers) < wait_connected:
        await anyio.sleep(0.2)
        servers = await _servers(client)
    connected = sum(s["status"] == "connected" for s in servers)
    cached = sum("cachedAt" in s for s in servers)
    return searched, f"{len(results)} hits ({stale} stale); then {connected} connected, {cached} from cache"


async def _servers(client: Client) -> list[dict[str, Any]]:
    return _structured(await client.call_tool("list_mcp_servers", {}))["servers"]


def _structured(result: types.CallToolResult) -> dict[str, list[dict[str, Any]]]:
    return cast(dict[str, list[dict[str, Any]]], result.structured_content)


def _row(label: str, starts: list[Start]) -> str:
    def cell(values: list[float]) -> str:
        return f"{statistics.median(values):.2f} / {max(values):.2f}" if values else "—"

    searched = [s.searched for s in starts if s.searched is not None]
    after = [s.searched - s.handshake for s in starts if s.searched is not None]
    return (
        f"| {label} | {len(starts)} | {cell([s.handshake for s in starts])} | {cell([s.listed for s in starts])} "
        f"| {cell(searched)} | {cell(after)} | {cell([s.stopped for s in starts])} | {starts[0].saw} |"
    )


async def measure(runs: int, eval_dir: Path, compare: Path | None = None) -> None:
    live = load_catalog_servers(eval_dir / "catalog_livemcpbench.jsonl")
    upstreams = copies(live, SERVERS - 1)
    async with AsyncExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="toolscout-cold-")))
        catalog = write_catalog(upstreams, scratch / "catalog.jsonl")
        base = await stack.enter_async_context(catalog_over_http(catalog))
        flag = scratch / "hang-now"
        served = next(iter(live))
        marker = str(scratch / "hanging-upstream")  # on the hanging servers' command lines, to find leftovers
        hanging = {"command": PYTHON, "args": ["-c", HANG, marker]}
        flaky = {"command": PYTHON, "args": ["-c", FLAKY, str(flag), str(catalog), served, marker], "cwd": str(ROOT)}
        configs: dict[str, Path] = {}
        for name, last in (("alone", hanging), ("hanging", hanging), ("flaky", flaky)):
            entries = {"hanging": last} if name == "alone" else {**http_servers(base, list(upstreams)), "hanging": last}
            configs[name] = scratch / f"{name}.json"
            configs[name].write_text(
                json.dumps({"mcpServers": entries, "audit": {"path": str(scratch / "audit.jsonl")}}),
                encoding="utf-8",
            )
        log = scratch / "gateway.log"
        rows: list[tuple[str, list[Start]]] = []
        trees: list[tuple[str, Path | None]] = [("", None)]
        if compare is not None:
            trees = [(" — this tree", None), (f" — {compare}", compare)]

        every: list[Start] = []

        async def launch(
            config: str, cache: Path, *, search: bool = True, wait_connected: int = 0, source: Path | None = None
        ) -> Start:
            started = await start(
                configs[config], cache, log, marker, search=search, wait_connected=wait_connected, source=source
            )
            every.append(started)
            return started

        async def scenario(label: str, config: str, cache: Callable[[int, int], Path], *, search: bool = True) -> None:
            """`runs` launches per tree, the trees alternating launch by launch."""
            starts: list[list[Start]] = [[] for _ in trees]
            for i in range(runs):
                for k, (_, source) in enumerate(trees):
                    starts[k].append(await launch(config, cache(i, k), search=search, source=source))
            rows.extend((label + suffix, found) for (suffix, _), found in zip(trees, starts, strict=True))

        await scenario(
            "baseline: the hanging server alone, no search",
            "alone",
            lambda i, k: scratch / f"alone-{i}-{k}",
            search=False,
        )
        await scenario("empty cache", "hanging", lambda i, k: scratch / f"cold-{i}-{k}")

        warm = scratch / "warm"
        await launch("hanging", warm, wait_connected=SERVERS - 1)
        stored = len(CatalogStore(warm / DEFAULT_FILE_NAME).entries())
        await scenario("warm cache (hanging server never listed)", "hanging", lambda i, k: warm)

        cached = scratch / "warm-all"
        await launch("flaky", cached, wait_connected=SERVERS)
        stored_all = len(CatalogStore(cached / DEFAULT_FILE_NAME).entries())
        flag.touch()
        await scenario("warm cache (hanging server cached)", "flaky", lambda i, k: cached)
        logged = log.read_text(encoding="utf-8")

    print(f"## Cold start — {harness.today()}")
    print()
    print(
        f"{harness.machine_line()}; {SERVERS} servers "
        f"({SERVERS - 1} over HTTP from one catalog_server process, {sum(len(t) for t in upstreams.values())} tools, "
        f"+ 1 hanging stdio server); stdio gateway, 2025-11-25 client; {runs} runs per scenario; "
        f"cache entries after filling: {stored} (hanging never listed), {stored_all} (hanging cached). "
        "Seconds from launch, median / worst:"
    )
    print()
    print(
        "| scenario | runs | handshake | first tools/list | first search answered | first search − handshake "
        "| stdin closed → exited | first search saw (first run) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, starts in rows:
        print(_row(label, starts))
    print()
    for label, starts in rows[2 * len(trees) :]:
        for since, values in (
            ("from launch", [s.searched or 0.0 for s in starts]),
            ("after the handshake", [(s.searched or 0.0) - s.handshake for s in starts]),
        ):
            worst = max(values)
            verdict = "met" if worst <= 1.0 else "missed"
            print(f"- {label}: first search ≤ 1 s {since} — {verdict} (worst {worst:.2f} s)")
    hung = sum(s.leaked for s in every)
    print(
        f"- the hanging upstream was still running after the gateway had exited in {hung} of the {len(every)} "
        "gateway runs (this benchmark stopped it)"
    )
    if "Traceback" in logged:
        print(f"the gateway logged a traceback:\n{logged}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    parser.add_argument("--compare", type=Path, default=None, help="also launch a gateway run from this source tree")
    args = parser.parse_args()
    anyio.run(measure, args.runs, args.eval_dir, args.compare)
