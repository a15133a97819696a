"""How long the gateway's own work holds its event loop, for 10,000 tools and oversized input.

    python -m benchmarks loop_stalls [--repeat 5] [--only WORDS]
    PYTHONPATH=OTHER/src python -m benchmarks loop_stalls   # the code before a change

The hardening target: no request may hold the event loop (every other client waits meanwhile). Each
operation below runs in the gateway's own process while a ticker task wakes every millisecond;
the longest gap between two of its wake-ups is how long the loop was held. 10,000 tools (LiveMCPBench's
catalog copied under new names) on 100 in-process servers (the SDK's memory transport), the
shipped search backend, an audit log in a temporary directory. Not over a transport: the SDK's
own request parsing is not counted (docs/BENCHMARKS.md has its cost for 4 MB of JSON, measured separately).
Prints the median over `--repeat` runs of each operation's time and the loop's longest stall.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server

from benchmarks import harness
from toolscout.errors import ArgumentValidationError
from toolscout.gateway.audit import AuditLog
from toolscout.gateway.core import Gateway
from toolscout.modes import client as digests
from toolscout.modes.base import make_surface
from toolscout.search.evaluation import load_catalog_servers
from toolscout.serve.sessions import ClientState
from toolscout.upstream import InProcessUpstream, UpstreamSpec

EVAL_DIR = Path(os.environ.get("TOOLSCOUT_EVAL_DIR") or Path(__file__).resolve().parents[2] / "shared" / "eval")
TOOLS = 10_000
SERVERS = 100


def upstream(name: str, tools: list[types.Tool]) -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text="ok")])

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


ECHO = types.Tool(
    name="store_text",
    description="Store a text.",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string"}, "code": {"type": "string", "pattern": "^(a|a)+$"}},
    },
)


async def stall(operation: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """(the operation's time, the longest gap between the ticker's wake-ups), in ms."""
    done = anyio.Event()
    longest = 0.0

    async def ticker() -> None:
        nonlocal longest
        last = time.perf_counter()
        while not done.is_set():
            await anyio.sleep(0.001)
            now = time.perf_counter()
            longest = max(longest, now - last)
            last = now

    took: list[float] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        await anyio.sleep(0.01)
        started = time.perf_counter()
        await operation()
        took.append(time.perf_counter() - started)
        done.set()
    return took[0] * 1000, longest * 1000


async def digest_as_served(items: list[types.Tool]) -> str:
    """What server.py does with a tool list (before this change: `digest` on the loop)."""
    off_loop = getattr(digests, "digest_off_loop", None)
    return await off_loop(items) if off_loop is not None else digests.digest(items)


async def measure(repeat: int, only: str = "") -> dict[str, dict[str, float]]:
    catalog = load_catalog_servers(EVAL_DIR / "catalog_livemcpbench.jsonl")
    base = [t for tools in catalog.values() for t in tools]
    tools = [t.model_copy(update={"name": f"{t.name}_{k}"}) for k in range(TOOLS // len(base) + 1) for t in base][
        :TOOLS
    ]
    per = TOOLS // SERVERS
    specs = [
        UpstreamSpec(f"s{i}", InProcessUpstream(upstream(f"s{i}", tools[i * per : (i + 1) * per])))
        for i in range(SERVERS)
    ]
    specs.append(UpstreamSpec("echo", InProcessUpstream(upstream("echo", [ECHO]))))
    results: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        audit = AuditLog(Path(tmp) / "audit.jsonl")
        async with Gateway(specs, audit=audit) as gateway:
            with anyio.fail_after(300):
                await gateway.settle()
                await gateway.search("warm up the index")
            passthrough = make_surface("passthrough", gateway)
            compact = make_surface("compact", gateway)
            state = ClientState()
            exposed = await passthrough.tools(state)
            await compact.tools(state)
            at_cap = ("find a tool that converts a spreadsheet to a chart and emails it " * 40)[:2000]
            operations: dict[str, Callable[[], Awaitable[Any]]] = {
                "search, 2,000-character query": lambda: gateway.search(at_cap),
                "search, 16 steps": lambda: gateway.search(["convert a file to pdf"] * 16, limit=50),
                "search after a catalog change (index rebuilt)": lambda: _after_a_change(gateway, tools[:per]),
                "passthrough tools/list (unchanged catalog)": lambda: passthrough.tools(state),
                "compact tools/list (unchanged catalog)": lambda: compact.tools(state),
                "digest of the 10,000-tool list": lambda: digest_as_served(exposed),
                "execute, 4 MB argument (audited)": lambda: gateway.execute(
                    "echo", "store_text", {"text": "x " * 2_000_000}
                ),
                "execute, schema pattern ^(a|a)+$ on 22 a's": lambda: _refused(gateway, "a" * 22 + "!"),
            }
            with anyio.fail_after(600):
                for name, operation in operations.items():
                    if only not in name:
                        continue
                    results[name] = [await stall(operation) for _ in range(repeat)]
    return {
        name: {
            "took_ms": round(statistics.median(r[0] for r in runs), 1),
            "loop_stall_ms": round(statistics.median(r[1] for r in runs), 1),
        }
        for name, runs in results.items()
    }


_CHANGES = [0]


async def _after_a_change(gateway: Gateway, tools: list[types.Tool]) -> None:
    # One server's tools renamed (a new version every time): the next search rebuilds the index.
    _CHANGES[0] += 1
    suffix = f"_v{_CHANGES[0]}"
    gateway.catalog.set_server_tools("s0", [t.model_copy(update={"name": t.name + suffix}) for t in tools])
    await gateway.search("convert a file to pdf")


async def _refused(gateway: Gateway, code: str) -> None:
    try:
        await gateway.execute("echo", "store_text", {"code": code})
    except ArgumentValidationError:  # the violation is the expected answer
        return
    raise AssertionError("the argument was accepted")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default="", help="only the operations whose name contains this")
    args = parser.parse_args()
    result = anyio.run(measure, args.repeat, args.only)
    harness.record("operations", result)
    print(json.dumps(result, indent=2))
    width = max(len(n) for n in result)
    for name, row in result.items():
        print(f"{name:<{width}}  {row['took_ms']:>8.1f} ms  loop held {row['loop_stall_ms']:>8.1f} ms")
