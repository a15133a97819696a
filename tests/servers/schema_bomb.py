"""A stdio upstream whose tools/list carries input schemas that cannot be validated, beside normal tools.

python tests/servers/schema_bomb.py

`bomb`: 40 levels of `anyOf: [{$ref: next}, {$ref: next}]` ending in `{"type": "integer"}`, 2^40
evaluations for one wrong argument. `cycle`: a `$ref` that leads back to itself without reaching
into the arguments, so validating never ends. `echo` (a normal tool) and `tree` (a legitimate
recursive schema, each node's children through `items`) must keep working beside them. A call
answers with the tool's name and its arguments, so a test sees what reached the server.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server


def bomb_schema(levels: int = 40) -> dict[str, Any]:
    """`levels` of anyOf over two `$ref`s to the next level, ending in an integer: 2^levels work."""
    defs: dict[str, Any] = {
        f"l{i}": {"anyOf": [{"$ref": f"#/$defs/l{i + 1}"}, {"$ref": f"#/$defs/l{i + 1}"}]} for i in range(levels)
    }
    defs[f"l{levels}"] = {"type": "integer"}
    return {"type": "object", "properties": {"a": {"$ref": "#/$defs/l0"}}, "$defs": defs}


CYCLE_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}}
DEFS_CYCLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"$ref": "#/$defs/x"}},
    "$defs": {"x": {"$ref": "#/$defs/y"}, "y": {"$ref": "#/$defs/x"}},
}
TREE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"root": {"$ref": "#/$defs/node"}},
    "required": ["root"],
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
            "required": ["name"],
        }
    },
}
ECHO_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}

TOOLS = [
    types.Tool(name="bomb", description="Classify a number through nested alternatives.", input_schema=bomb_schema()),
    types.Tool(name="cycle", description="Resolve a self-referencing record.", input_schema=CYCLE_SCHEMA),
    types.Tool(name="echo", description="Echo the text back.", input_schema=ECHO_SCHEMA),
    types.Tool(name="tree", description="Count the nodes of a tree of names.", input_schema=TREE_SCHEMA),
]


def build_server() -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        text = json.dumps({"tool": params.name, "arguments": params.arguments or {}}, sort_keys=True)
        return types.CallToolResult(content=[types.TextContent(text=text)])

    return Server("schema-bomb", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve() -> None:
    server = build_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> None:
    anyio.run(serve)


if __name__ == "__main__":
    main()
