"""Serve a tool catalog (the JSON Lines format the search evaluation reads) as real MCP servers.

    python -m toolscout.demo.catalog_server --catalog catalog.jsonl --server NAME
    python -m toolscout.demo.catalog_server --catalog catalog.jsonl --http --port 8000

With `--server`, that one catalog server speaks MCP over stdio; with `--http`, every server of
the catalog is served by this one process over streamable HTTP at `/servers/<quoted name>/mcp`.
Each lists its tools as the catalog gives them and answers a call with a small deterministic
echo of its arguments, so tests and benchmarks can run the gateway against hundreds of real
servers (e.g. the LiveMCPTool catalog) without their backends.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import anyio
import mcp_types as types
from mcp.server import Server
from starlette.applications import Starlette
from starlette.routing import Mount

from toolscout.errors import ConfigurationError
from toolscout.search.evaluation import load_catalog_servers

HELP_DESCRIPTION = "Serve a tool catalog (the JSON Lines format of `../shared/eval`) as real MCP servers."
"""What `--help` says; kept word for word as it has always read (the module docstring's old first line)."""


def server_path(name: str) -> str:
    """Where a catalog server is mounted over HTTP (its name URL-quoted)."""
    return f"/servers/{quote(name, safe='')}/mcp"


def load_descriptions(path: Path | None) -> dict[str, str]:
    """Server descriptions from a `servers_<name>.jsonl` file (empty without one)."""
    if path is None:
        return {}
    try:
        rows: list[Any] = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"{path}: cannot read server descriptions ({exc}).") from None
    found: dict[str, str] = {}
    for row in rows:
        if isinstance(row, dict) and "server" in row:
            entry = cast(dict[str, Any], row)
            found[str(entry["server"])] = str(entry.get("description", ""))
    return found


def build_server(name: str, tools: Sequence[types.Tool], instructions: str | None = None) -> Server[Any]:
    """One catalog server: lists `tools`, echoes every call."""
    by_name = {tool.name: tool for tool in tools}

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(tools))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in by_name:
            known = ", ".join(by_name)
            return types.CallToolResult(
                content=[types.TextContent(text=f"Unknown tool {params.name!r} on {name!r}; it has: {known}.")],
                is_error=True,
            )
        arguments = dict(params.arguments or {})
        echoed = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return types.CallToolResult(
            content=[types.TextContent(text=f"{name}/{params.name} called with {echoed}")],
            structured_content={"server": name, "tool": params.name, "arguments": arguments},
        )

    return Server(name, instructions=instructions or None, on_list_tools=list_tools, on_call_tool=call_tool)


def http_app(servers: Mapping[str, Sequence[types.Tool]], descriptions: Mapping[str, str], host: str) -> Starlette:
    """Every catalog server under `/servers/<name>/mcp`, one Starlette app, their session managers run together."""
    apps = {
        name: build_server(name, tools, descriptions.get(name)).streamable_http_app(
            streamable_http_path="/mcp", host=host
        )
        for name, tools in servers.items()
    }

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncGenerator[None]:
        # Mounted apps' lifespans are not run by Starlette; each one's session manager must be.
        async with AsyncExitStack() as stack:
            for app in apps.values():
                await stack.enter_async_context(app.router.lifespan_context(app))
            yield

    # Starlette matches mounts against the decoded request path, so the mount uses the plain name
    # (clients send it quoted); a name with braces would read as a path parameter, so stays quoted.
    routes = [
        Mount(f"/servers/{quote(name, safe='') if '{' in name or '}' in name else name}", app=app)
        for name, app in apps.items()
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=HELP_DESCRIPTION)
    parser.add_argument("--catalog", type=Path, required=True, help="catalog JSON Lines file")
    parser.add_argument("--servers", type=Path, help="server descriptions (servers_<name>.jsonl), used as instructions")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--server", help="serve this one catalog server over stdio")
    mode.add_argument("--http", action="store_true", help="serve every catalog server over streamable HTTP")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    try:
        servers = load_catalog_servers(args.catalog)
        descriptions = load_descriptions(args.servers)
        if args.server is not None and args.server not in servers:
            raise ConfigurationError(f"{args.catalog} has no server {args.server!r}; it has: {', '.join(servers)}.")
    except ConfigurationError as exc:
        print(f"catalog_server: {exc.message}", file=sys.stderr)
        raise SystemExit(2) from None
    if args.server is not None:
        from mcp.server.stdio import stdio_server

        server = build_server(args.server, servers[args.server], descriptions.get(args.server))

        async def run_stdio() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run_stdio)
        return
    import uvicorn

    print(f"catalog_server: {len(servers)} servers at /servers/<name>/mcp", file=sys.stderr)
    # INFO for uvicorn's "running on" line, which says the port when --port 0 picked one.
    app = http_app(servers, descriptions, args.host)
    uvicorn.run(app, host=args.host, port=args.port, log_level="info", access_log=False)


if __name__ == "__main__":
    main()
