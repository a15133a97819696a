"""Tokens of the discovery listings' text in each `listingFormat`, against the same data as compact JSON.

    python -m benchmarks listing_formats [--eval-dir ../shared/eval]

The LiveMCPTool catalog (527 tools, 70 servers) behind the gateway, served in process by
`toolscout.demo.catalog_server`, to an `mcp.Client` over the in-memory transport. For each listing
(list_mcp_servers; search_tools with limit 10 for a few tasks written for this benchmark; list_tools
of the largest server) it counts, with o200k_base, the text the model reads with `listingFormat:
text` and `toon`, and the `structuredContent` as compact JSON. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client

from benchmarks import harness
from benchmarks.search import DEFAULT_EVAL_DIR
from benchmarks.token_modes import catalog_gateway
from toolscout.config.models import ListingFormat
from toolscout.modes.base import SurfaceOptions
from toolscout.render.text import ENCODING, compact_json, count_tokens
from toolscout.search.evaluation import load_catalog_servers
from toolscout.serve.server import build_server

TASKS = ("send an email with an attachment", "convert a price between currencies", "summarise a pdf document")
FORMATS: tuple[ListingFormat, ...] = ("text", "toon")


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def measure(servers: dict[str, list[types.Tool]]) -> list[tuple[str, dict[str, int]]]:
    largest = max(servers, key=lambda name: len(servers[name]))
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("list_mcp_servers (70 servers)", "list_mcp_servers", {}),
        *((f"search_tools {task!r}", "search_tools", {"query": task, "limit": 10}) for task in TASKS),
        (f"list_tools ({len(servers[largest])} tools)", "list_tools", {"server": largest}),
    ]
    counts: dict[str, dict[str, int]] = {label: {} for label, _, _ in calls}
    async with catalog_gateway(servers) as gateway:
        with anyio.fail_after(600):
            await gateway.settle()
        for listing_format in FORMATS:
            server = build_server(gateway, "discovery", SurfaceOptions(listing_format=listing_format))
            async with Client(server, mode="legacy") as client:
                for label, name, arguments in calls:
                    result = await client.call_tool(name, arguments)
                    counts[label][listing_format] = count_tokens(_text(result))
                    counts[label]["json"] = count_tokens(compact_json(result.structured_content))
    return list(counts.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    args = parser.parse_args()
    live = load_catalog_servers(args.eval_dir / "catalog_livemcpbench.jsonl")
    print(f"## Listing text per format — {harness.today()}, {ENCODING}, LiveMCPTool (527 tools)")
    print()
    print("| listing | `text` | `toon` (TOON table or JSON) | structuredContent as compact JSON |")
    print("|---|---|---|---|")
    totals = dict.fromkeys(("text", "toon", "json"), 0)
    for label, counts in anyio.run(measure, live):
        for key in totals:
            totals[key] += counts[key]
        print(f"| {label} | {counts['text']} | {counts['toon']} | {counts['json']} |")
    print(f"| **all** | **{totals['text']}** | **{totals['toon']}** | **{totals['json']}** |")
