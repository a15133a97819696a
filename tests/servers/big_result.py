"""A stdio upstream whose `blob` tool returns as much text as asked for.

python -m tests.servers.big_result                  # serves one client on stdin/stdout
python -m tests.servers.big_result --http --port 0  # streamable HTTP at /mcp (uvicorn prints the port)

The text is a run of SHA-256 hex digests of `seed:n`: nothing repeats, so a lost, doubled or
reordered piece changes the checksum, and the test rebuilds the same text with `expected_text`.
"""

from __future__ import annotations

import argparse
import hashlib
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server

TOOLS = [
    types.Tool(
        name="blob",
        description="Returns `size` characters of text made from `seed`.",
        input_schema={
            "type": "object",
            "properties": {"size": {"type": "integer", "minimum": 0}, "seed": {"type": "string"}},
            "required": ["size", "seed"],
        },
    ),
]


def expected_text(size: int, seed: str) -> str:
    """`size` characters: the hex digests of `seed:0`, `seed:1`, ... one after the other."""
    blocks = -(-size // 64)
    return "".join(hashlib.sha256(f"{seed}:{n}".encode()).hexdigest() for n in range(blocks))[:size]


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    text = expected_text(int(args["size"]), str(args["seed"]))
    return types.CallToolResult(content=[types.TextContent(text=text)])


def build_server() -> Server[Any]:
    return Server("big-result", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio() -> None:
    server = build_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    if not args.http:
        anyio.run(serve_stdio)
        return
    import uvicorn

    app = build_server().streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="info", access_log=False)


if __name__ == "__main__":
    main()
