"""An MCP server over streamable HTTP whose tools are still loading when it starts: its first
`--empty` tool lists are empty, later ones have its tool (an endpoint can be registered before its tools are loaded).

python tests/servers/late_tools.py --port PORT [--empty N]
"""

from __future__ import annotations

import argparse
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server import Server
from mcp.server.context import ServerRequestContext

TOOL = types.Tool(
    name="list_trails",
    description="List the CloudTrail trails of the account.",
    input_schema={"type": "object", "properties": {}},
)


def build_server(empty: int) -> Server[Any]:
    listed = 0

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        nonlocal listed
        listed += 1
        return types.ListToolsResult(tools=[] if listed <= empty else [TOOL])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text="trail-1, trail-2")])

    return Server("late-tools", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--empty", type=int, default=2, help="how many tool lists are empty at first")
    args = parser.parse_args()
    app = build_server(args.empty).streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="info")


if __name__ == "__main__":
    main()
