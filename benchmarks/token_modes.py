"""Tokens an agent reads in each exposure mode: `tools/list`, and a discovery flow, on real catalogs.

    .venv/bin/python -m benchmarks.token_modes [--eval-dir ../shared/eval]

The LiveMCPTool catalog (527 tools, 70 servers) and a 10,000-tool catalog (the same servers
copied under new names) are served in process by `toolscout.demo.catalog_server`, behind the
gateway, to an `mcp.Client` over the SDK's in-memory transport (2025-11-25 era). Counted with
o200k_base (`quicktok-v1`): tool definitions as the client receives them, and the text blocks of
the results the model reads to run one tool: search → details → execute (discovery), inspect →
exec (compact), or the call alone (passthrough). Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import time
from datetime import date
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
from mcp import Client

from benchmarks.search import DEFAULT_EVAL_DIR
from toolscout.demo.catalog_server import build_server as catalog_server
from toolscout.gateway import Gateway
from toolscout.listing import compact_json
from toolscout.passthrough import native_names
from toolscout.schemas import example_arguments
from toolscout.search import make_backend
from toolscout.search.evaluation import load_catalog_servers
from toolscout.server import build_server
from toolscout.signature import signature
from toolscout.tokens import ENCODING, count_tokens, tool_tokens
from toolscout.upstream import InProcessUpstream, UpstreamSpec

MODES = ("discovery", "compact", "passthrough")
QUERY = "post a message to a chat channel"  # written for this benchmark, not taken from the eval queries


def _read(result: types.CallToolResult) -> int:
    return count_tokens("\n".join(b.text for b in result.content if isinstance(b, types.TextContent)))


def _raw(result: types.CallToolResult) -> int:
    return count_tokens(compact_json(result.structured_content)) if result.structured_content is not None else 0


async def _discovery_flow(client: Client) -> tuple[int, int, dict[str, Any]]:
    """Tokens read in search → details → execute, the same payloads as raw JSON, and the tool used."""
    found = await client.call_tool("search_tools", {"query": QUERY, "limit": 5})
    hit = cast(dict[str, Any], (found.structured_content or {})["results"][0])
    details = await client.call_tool("get_tool_details", {"server": hit["server"], "tool": hit["tool"]})
    schema = cast(dict[str, Any], (details.structured_content or {})["inputSchema"])
    call: dict[str, Any] = {"server": hit["server"], "tool": hit["tool"], "arguments": example_arguments(schema)}
    executed = await client.call_tool("execute_tool", call)
    results = (found, details, executed)
    return sum(_read(r) for r in results), sum(_raw(r) for r in results), call


async def _compact_flow(client: Client, call: dict[str, Any]) -> int:
    """Tokens read in inspect(server, tool) → exec for the tool the discovery flow found."""
    ref = {"server_name": call["server"], "tool_name": call["tool"]}
    inspected = await client.call_tool("inspect", ref)
    executed = await client.call_tool("exec", {**ref, "arguments": call["arguments"]})
    return _read(inspected) + _read(executed)


async def _passthrough_flow(client: Client, call: dict[str, Any]) -> int:
    """Tokens read calling the tool directly (its schema is already in tools/list)."""
    names = native_names([(call["server"], call["tool"])])
    return _read(await client.call_tool(names[(call["server"], call["tool"])], call["arguments"]))


async def measure(servers: dict[str, list[types.Tool]]) -> list[tuple[str, int, int, int]]:
    specs = [UpstreamSpec(name, InProcessUpstream(catalog_server(name, tools))) for name, tools in servers.items()]
    rows: list[tuple[str, int, int, int]] = []
    async with Gateway(specs, search=make_backend("hybrid", use_cache=False)) as gateway:
        with anyio.fail_after(600):
            await gateway.settle()
        call: dict[str, Any] = {}
        for mode in MODES:
            async with Client(build_server(gateway, mode), mode="legacy") as client:
                listed = (await client.list_tools()).tools
                if mode == "discovery":
                    read, raw, call = await _discovery_flow(client)
                    rows.append((mode, len(listed), tool_tokens(listed), read))
                    rows.append(("discovery flow as raw JSON", 0, 0, raw))
                elif mode == "compact":
                    rows.append((mode, len(listed), tool_tokens(listed), await _compact_flow(client, call)))
                else:
                    rows.append((mode, len(listed), tool_tokens(listed), await _passthrough_flow(client, call)))
    return rows


def renamed(servers: dict[str, list[types.Tool]], size: int) -> dict[str, list[types.Tool]]:
    """`size` tools: the catalog's servers copied as `<name> #<k>` until there are enough."""
    out: dict[str, list[types.Tool]] = {}
    count, copy = 0, 0
    while count < size:
        for name, tools in servers.items():
            take = tools[: size - count]
            if not take:
                break
            out[name if copy == 0 else f"{name} #{copy}"] = take
            count += len(take)
        copy += 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    args = parser.parse_args()
    live = load_catalog_servers(args.eval_dir / "catalog_livemcpbench.jsonl")
    print(f"## Tokens per mode — {date.today()}, {ENCODING}")
    print()
    print("| catalog | mode | tools listed | tools/list tokens | tokens read to run one tool |")
    print("|---|---|---|---|---|")
    for label, servers in (("LiveMCPTool, 527 tools", live), ("10,000 tools", renamed(live, 10_000))):
        started = time.perf_counter()
        for mode, listed, tokens, read in anyio.run(measure, servers):
            flow = str(read) if read else "—"
            print(f"| {label} | {mode} | {listed or '—'} | {tokens or '—'} | {flow} |", flush=True)
        print(f"<!-- {label}: {time.perf_counter() - started:.0f} s -->")
    print()
    print("| signature / raw input schema, tokens, 527 LiveMCPTool tools | median | p90 | worst |")
    print("|---|---|---|---|")
    schemas = [t.input_schema for tools in live.values() for t in tools]
    for label, length in (("with descriptions (get_tool_details)", 60), ("types only (search_tools)", 0)):
        ratios = sorted(
            count_tokens(signature(s, max_description_len=length)) / max(1, count_tokens(compact_json(s)))
            for s in schemas
        )
        worst = ratios[-1]
        print(f"| {label} | {ratios[len(ratios) // 2]:.2f} | {ratios[int(len(ratios) * 0.9)]:.2f} | {worst:.2f} |")


if __name__ == "__main__":
    main()
