"""A test upstream whose one tool, `show_meta`, answers with the `_meta` of the request it received:
what a trace's `traceparent` looks like when it reaches a real server.

python -m tests.servers.trace_meta    # serves one client on stdin/stdout
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server


async def _list(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
    tool = types.Tool(
        name="show_meta", description="Answer with the _meta of this request.", input_schema={"type": "object"}
    )
    return types.ListToolsResult(tools=[tool])


async def _call(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    meta = dict(params.meta or {})
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(meta, default=str))])


async def main() -> None:
    server: Server[Any] = Server("trace-meta", on_list_tools=_list, on_call_tool=_call)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
