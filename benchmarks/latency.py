"""Round-trip latency of the meta-tools through the full MCP stack, with 527 real tool definitions behind it.

    python -m benchmarks latency [--rounds 300] [--eval-dir ../shared/eval]

An `mcp.Client` talks to the gateway's MCP face over the SDK's in-memory
transport (legacy era); behind the gateway, one in-process upstream per
LiveMCPBench server lists that server's captured tools and echoes calls. The
figures are the gateway's own overhead plus the SDK's, without process or
network hops.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.server import Server

from benchmarks import harness
from benchmarks.search import DEFAULT_EVAL_DIR
from toolscout.gateway.core import Gateway
from toolscout.search.evaluation import load_catalog
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec


def echo_server(name: str, tools: list[types.Tool]) -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text="ok")], structured_content={"ok": True})

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


async def measure(rounds: int, eval_dir: Path) -> None:
    catalog = load_catalog(eval_dir / "catalog_livemcpbench.jsonl")
    servers = sorted({t.server for t in catalog.tools()})
    specs = [UpstreamSpec(s, InProcessUpstream(echo_server(s, [t.tool for t in catalog.tools(s)]))) for s in servers]
    rng = random.Random(7)
    entries = catalog.tools()
    queries = ["search the web", "read a file", "create a chart", "send an email", "weather forecast", "git commit"]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(60):
            await gateway.settle()
        async with Client(build_server(gateway), mode="legacy") as client:
            cases: dict[str, Callable[[], Awaitable[types.CallToolResult]]] = {
                "list_mcp_servers": lambda: client.call_tool("list_mcp_servers", {}),
                "search_tools": lambda: client.call_tool("search_tools", {"query": rng.choice(queries)}),
                "get_tool_details": lambda: client.call_tool(
                    "get_tool_details", {"server": (e := rng.choice(entries)).server, "tool": e.name}
                ),
                "execute_tool (invalid args)": lambda: client.call_tool(
                    "execute_tool", {"server": (e := rng.choice(entries)).server, "tool": e.name, "arguments": {"x": 1}}
                ),
                "execute_tool (no-arg echo)": lambda: client.call_tool(
                    "execute_tool", {"server": servers[0], "tool": catalog.tools(servers[0])[0].name}
                ),
            }
            print(
                f"meta-tool latency, {harness.today()}, {platform.machine()}, Python {platform.python_version()}, "
                f"{len(entries)} tools on {len(servers)} in-process servers, {rounds} rounds each"
            )
            print("| call | p50 ms | p95 ms | max ms |")
            print("|---|---|---|---|")
            for name, call in cases.items():
                await call()  # warm caches (search index, validators)
                samples: list[float] = []
                for _ in range(rounds):
                    with harness.Stopwatch() as watch:
                        await call()
                    samples.append(watch.seconds * 1000)
                p50, p95, worst = statistics.median(samples), harness.percentile(samples, 0.95), max(samples)
                harness.record(name, {"p50_ms": p50, "p95_ms": p95, "max_ms": worst})
                print(f"| {name} | {p50:.2f} | {p95:.2f} | {worst:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    args = parser.parse_args()
    anyio.run(measure, args.rounds, args.eval_dir)
