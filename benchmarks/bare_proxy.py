"""The least an MCP proxy built on the SDK can do: the floor under toolscout's added latency.

    python -m benchmarks.bare_proxy stdio <upstream command...>
    python -m benchmarks.bare_proxy http <upstream URL>

A low-level `mcp.server.Server` whose `tools/list` and `tools/call` are forwarded as they are to one
upstream through one `mcp.Client` (the SDK pieces toolscout is built on, and nothing of toolscout's:
no validation, rules, audit, log line, progress or cancellation relay), served on stdio or on
streamable HTTP (printing `bare proxy at URL` on stderr once listening). The SDK's stdio server and
client are used as they are. `benchmarks.proxy_latency` measures it next to toolscout, so what
toolscout adds above this floor is its own.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.server import Server
from mcp.server.stdio import stdio_server

from toolscout.serve.http import bind


async def main(transport: str, target: list[str]) -> None:
    upstream: Any = (
        target[0]
        if target[0].startswith("http")
        else stdio_client(StdioServerParameters(command=target[0], args=target[1:]))
    )
    async with Client(upstream, mode="legacy") as client:

        async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
            return await client.list_tools()

        async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            result = await client.call_tool(params.name, params.arguments)
            assert isinstance(result, types.CallToolResult)
            return result

        server: Server[Any] = Server("bare-proxy", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
        if transport == "stdio":
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            return
        # toolscout's own listening socket: made through getaddrinfo, so its proto says TCP and asyncio
        # sets TCP_NODELAY (socket.socket()'s proto 0 left responses waiting for a delayed ACK, 40 ms).
        sock = bind("127.0.0.1", 0)
        print(f"bare proxy at http://127.0.0.1:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
        app = server.streamable_http_app()
        await uvicorn.Server(uvicorn.Config(app, log_level="warning")).serve(sockets=[sock])


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2:])
