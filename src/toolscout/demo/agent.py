"""A scripted demo agent: connects to a gateway over streamable HTTP with a bearer token, and shows
what it sees and what its calls answer. An LLM would choose the calls; here the command line does.

``python -m toolscout.demo.agent http://127.0.0.1:8765/mcp --token ts_... --search "miles to km"
--execute run-1.units-demo convert_units '{"value": 5, "from_unit": "mi", "to_unit": "km"}'``
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def _text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def run(url: str, token: str | None, search: list[str], execute: list[tuple[str, str, str]]) -> int:
    """Print the servers the token sees, each search's hits and each call's result; 1 if any failed."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    failed = False
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        servers = await client.call_tool("list_mcp_servers", {})
        print("# list_mcp_servers\n" + _text(servers))
        for query in search:
            hits = await client.call_tool("search_tools", {"query": query, "limit": 3})
            print(f"# search_tools {query!r}\n" + _text(hits))
            failed |= bool(hits.is_error)
        for server, tool, arguments in execute:
            parsed: Any = json.loads(arguments)
            result = await client.call_tool("execute_tool", {"server": server, "tool": tool, "arguments": parsed})
            print(f"# execute_tool {server} {tool}\n" + _text(result))
            failed |= bool(result.is_error)
    return 1 if failed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description="A scripted MCP agent for the demo.")
    parser.add_argument("url", help="the gateway's /mcp URL")
    parser.add_argument("--token", help="the bearer token (default: none)")
    parser.add_argument("--search", action="append", default=[], metavar="QUERY")
    parser.add_argument("--execute", action="append", nargs=3, default=[], metavar=("SERVER", "TOOL", "JSON"))
    args = parser.parse_args()
    execute = [(server, tool, arguments) for server, tool, arguments in args.execute]
    sys.exit(anyio.run(run, args.url, args.token, list(args.search), execute))


if __name__ == "__main__":
    main()
