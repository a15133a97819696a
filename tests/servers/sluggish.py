"""A stdio upstream that is slow to start, or that completes the handshake and then never lists its tools.

python -m tests.servers.sluggish --start-after 10    # sleeps 10 s before reading stdin, then serves
python -m tests.servers.sluggish --hang-listing      # answers `initialize`, never answers `tools/list`
python -m tests.servers.sluggish --fail-first FILE   # the first start (no FILE yet) exits at once; later ones hang
python -m tests.servers.sluggish --start-when FILE   # serves once FILE exists (the test decides when it is up)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server

TOOLS = [types.Tool(name="hello", description="Says it is up.", input_schema={"type": "object", "properties": {}})]


def build_server(hang_listing: bool) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if hang_listing:
            await anyio.sleep_forever()
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text="up")])

    return Server("sluggish", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(hang_listing: bool) -> None:
    server = build_server(hang_listing)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--start-after", type=float, default=0, help="seconds to sleep before serving")
    parser.add_argument("--hang-listing", action="store_true", help="never answer tools/list")
    parser.add_argument("--fail-first", type=Path, help="exit at once when FILE is missing (creating it), else hang")
    parser.add_argument("--start-when", type=Path, help="sleep until FILE exists, then serve")
    args = parser.parse_args()
    while args.start_when is not None and not args.start_when.exists():
        time.sleep(0.05)
    if args.fail_first is not None:
        if not args.fail_first.exists():
            args.fail_first.touch()
            raise SystemExit(1)
        time.sleep(3600)  # a retry that never finishes connecting
    # The slow start is the point of this server: it is the upstream that sleeps, not the test.
    time.sleep(args.start_after)
    anyio.run(serve, args.hang_listing)


if __name__ == "__main__":
    main()
