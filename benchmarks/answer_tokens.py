"""Tokens the model reads in discovery mode's answers: `search_tools` with 5 and 10 results, and
`get_tool_details` for the hits it would open.

    python -m benchmarks answer_tokens [--eval-dir ../shared/eval] [--sizes 527,10000]

The LiveMCPBench catalog (527 real tools of 70 servers) behind a real gateway in process, and the
same catalog copied under renamed servers to 10,000 tools. Two kinds of query, because an answer
repeats what it was asked: short ones an agent writes (each fifth tool's name as words,
`get_historical_stock_prices` → "get historical stock prices", 106 of them), and the 37 long,
pasted LiveMCPBench dev tasks. For each query the text of one `search_tools` answer with `limit`
5 and 10 is counted, and the text of `get_tool_details` for its first two hits (o200k_base, as the
rest of the suite counts). It prints the median and the 90th percentile of each.

To compare with another tree, run it again with PYTHONPATH at that tree's `src`: the answers come
from the code imported, the queries and catalogs are the same.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
from mcp import Client

from benchmarks import harness
from benchmarks.search import DEFAULT_EVAL_DIR
from benchmarks.token_modes import catalog_gateway, renamed
from toolscout.render.text import count_tokens
from toolscout.search.evaluation import load_catalog
from toolscout.serve.server import build_server

SHORT_EVERY = 5
"""Every this-many-th tool of the catalog gives one short query."""


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def short_query(name: str) -> str:
    """A tool's name as the words an agent would search with: `getStockPrice` → "get stock price"."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return " ".join(w.lower() for w in re.split(r"[\s_\-./:]+", spaced) if w)


def _spread(values: list[int]) -> str:
    ordered = sorted(values)
    return f"{statistics.median(ordered):.0f} / {ordered[int(0.9 * (len(ordered) - 1))]}"


Counts = dict[str, dict[str, list[int]]]


async def measure(servers: dict[str, list[types.Tool]], queries: dict[str, list[str]]) -> Counts:
    """{query kind: {"search 5" | "search 10" | "details": token counts}}."""
    out: dict[str, dict[str, list[int]]] = {}
    async with catalog_gateway(servers) as gateway:
        with anyio.fail_after(600):
            await gateway.settle()
        async with Client(build_server(gateway, "discovery"), mode="legacy") as client:
            for kind, asked in queries.items():
                counts: dict[str, list[int]] = {"search 5": [], "search 10": [], "details": []}
                for query in asked:
                    for limit in (5, 10):
                        found = await client.call_tool("search_tools", {"query": query, "limit": limit})
                        counts[f"search {limit}"].append(count_tokens(_text(found)))
                        if limit != 5:
                            continue
                        content = cast(dict[str, Any], found.structured_content or {})
                        results = cast(list[dict[str, Any]], content.get("results") or [])
                        for hit in results[:2]:
                            details = await client.call_tool(
                                "get_tool_details", {"server": hit["server"], "tool": hit["tool"]}
                            )
                            counts["details"].append(count_tokens(_text(details)))
                out[kind] = counts
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    parser.add_argument("--sizes", default="527,10000", help="Catalog sizes (527: the catalog itself).")
    args = parser.parse_args()
    catalog = load_catalog(args.eval_dir / "catalog_livemcpbench.jsonl")
    servers: dict[str, list[types.Tool]] = {}
    for entry in catalog.tools():
        servers.setdefault(entry.server, []).append(entry.tool)
    names = [entry.name for entry in catalog.tools()]
    queries = {
        "short (tool names as words)": [short_query(n) for n in names[::SHORT_EVERY]],
        "long (LiveMCPBench dev tasks)": [
            str(json.loads(line)["query"])
            for line in (args.eval_dir / "queries_livemcpbench_dev.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()
        ],
    }
    print(f"answer tokens, {harness.today()}, commit {harness.commit()}, {harness.machine_line()}, o200k_base")
    print("Median / 90th percentile of the tokens of each answer's text:")
    print()
    print("| catalog | queries | n | search_tools, 5 results | search_tools, 10 results | get_tool_details |")
    print("|---|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",") if s.strip()):
        behind = servers if size <= len(names) else renamed(servers, size)
        found = anyio.run(measure, behind, queries)
        for kind, counts in found.items():
            label = f"{sum(len(t) for t in behind.values())} tools"
            print(
                f"| {label} | {kind} | {len(queries[kind])} | {_spread(counts['search 5'])} "
                f"| {_spread(counts['search 10'])} | {_spread(counts['details'])} |"
            )
            harness.record(f"{size}/{kind}", {k: statistics.median(v) for k, v in counts.items()})


if __name__ == "__main__":
    main()
