"""An in-process upstream that lists the tools it is given, exactly as given, and answers any call to
one of them with its name: for tests of what the gateway adds to (and keeps of) an upstream's tools."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.shared.exceptions import MCPError


def tool(name: str, description: str = "", **fields: Any) -> types.Tool:
    """A tool of no arguments (or the `inputSchema` given) with any other field of `types.Tool`."""
    schema: dict[str, Any] = fields.pop("input_schema", {"type": "object", "properties": {}})
    return types.Tool.model_validate({"name": name, "description": description, "inputSchema": schema, **fields})


def shelf_server(
    name: str,
    tools: Sequence[types.Tool],
    *,
    description: str | None = None,
    title: str | None = None,
    instructions: str | None = None,
) -> Server[Any]:
    """A server called `name` listing `tools` (and saying `description`, `title`, `instructions` of itself)."""
    listed = list(tools)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in {t.name for t in listed}:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool {params.name!r}")
        return types.CallToolResult(content=[types.TextContent(text=f"ran {params.name}")])

    return Server(
        name,
        version="1.0.0",
        title=title,
        description=description,
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
