"""The five meta-tools an agent sees: their definitions and what they do.

Each handler takes validated arguments and returns a `CallToolResult` with
`structuredContent` plus a compact text rendering. Handlers raise
`ToolscoutError`s; `server.py` turns those into error results at the edge.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

import mcp_types as types
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from toolscout import render
from toolscout.errors import InvalidRequest
from toolscout.gateway import Gateway
from toolscout.schemas import is_flat, parameters
from toolscout.upstream import Status

INSTRUCTIONS_LIMIT = 300


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ListServersArgs(_Args):
    pass


class SearchToolsArgs(_Args):
    query: str | list[str] = Field(
        description="What you want to do, in plain words; a list searches each step of a task at once."
    )
    server: str | None = Field(None, description="Only search this server.")
    limit: int = Field(10, ge=1, le=50, description="Max results.")


class ListToolsArgs(_Args):
    server: str
    include_disabled: bool = Field(False, alias="includeDisabled")


class ToolRefArgs(_Args):
    server: str
    tool: str


class ExecuteArgs(ToolRefArgs):
    arguments: dict[str, Any] = Field(default_factory=dict[str, Any], description="The tool's own arguments.")

    @field_validator("arguments", mode="before")
    @classmethod
    def _forgive_null_and_json_text(cls, value: Any) -> Any:
        # Models often send `null` for "no arguments", or the object serialised as a JSON string.
        if value is None:
            return {}
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                decoded = json.loads(value)
                if isinstance(decoded, dict):
                    return cast(dict[str, Any], decoded)
        return value


Handler = Callable[[Gateway, Any], Awaitable[types.CallToolResult]]


@dataclass(frozen=True)
class MetaTool:
    name: str
    description: str
    args: type[_Args]
    handler: Handler
    read_only: bool = True

    def definition(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            description=self.description,
            input_schema=_compact_schema(self.args.model_json_schema(by_alias=True)),
            annotations=types.ToolAnnotations(read_only_hint=self.read_only, open_world_hint=not self.read_only),
        )


def _clean(node: Any) -> Any:
    if isinstance(node, list):
        return [_clean(v) for v in cast(list[Any], node)]
    if not isinstance(node, dict):
        return node
    d = {k: _clean(v) for k, v in cast(dict[str, Any], node).items() if k != "title"}
    options = d.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in cast(list[Any], options) if o != {"type": "null"}]
        if len(kept) == 1:
            d.pop("anyOf")
            d.update(cast(dict[str, Any], kept[0]))
        if d.get("default", ...) is None:
            d.pop("default")
    if d.get("type") == "object" and d.get("additionalProperties") is True:
        d.pop("additionalProperties")  # "any object" is what `type: object` already says
    return d


def _compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Pydantic's schema without titles and `null` unions: fewer tokens, same meaning for the model."""
    cleaned = cast(dict[str, Any], _clean(schema))
    cleaned.setdefault("properties", {})
    return cleaned


def _result(data: dict[str, Any], text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data)


def _cut(text: str | None, limit: int) -> str | None:
    if not text:
        return None
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


async def list_mcp_servers(gateway: Gateway, _: ListServersArgs) -> types.CallToolResult:
    await gateway.settle_startup()
    servers: list[dict[str, Any]] = []
    for up in gateway.upstreams:
        entry = gateway.server_status(up)
        if "instructions" in entry:
            entry["instructions"] = _cut(entry["instructions"], INSTRUCTIONS_LIMIT)
        servers.append(entry)
    data = {
        "servers": servers,
        "totalTools": sum(s["toolCount"] for s in servers),
        "enabledTools": sum(s["enabledCount"] for s in servers),
    }
    return _result(data, render.servers_text(data))


async def search_tools(gateway: Gateway, args: SearchToolsArgs) -> types.CallToolResult:
    await gateway.settle_startup()
    hits = gateway.search(args.query, server=args.server, limit=args.limit)
    data: dict[str, Any] = {
        "query": args.query,
        "results": [
            {
                "server": h.tool.server,
                "tool": h.tool.name,
                "summary": h.tool.summary,
                "relevance": h.relevance,
                "tags": list(h.tool.tags),
            }
            for h in hits
        ],
    }
    connecting = [u.name for u in gateway.upstreams if u.status is Status.CONNECTING]
    if connecting:
        data["connecting"] = connecting
    return _result(data, render.search_text(data))


async def list_tools(gateway: Gateway, args: ListToolsArgs) -> types.CallToolResult:
    tools = await gateway.tools(args.server, include_disabled=args.include_disabled)
    data = {
        "server": args.server,
        "tools": [{"name": t.name, "summary": t.summary, "enabled": t.enabled, "tags": list(t.tags)} for t in tools],
    }
    return _result(data, render.tools_text(data))


async def get_tool_details(gateway: Gateway, args: ToolRefArgs) -> types.CallToolResult:
    entry = await gateway.tool(args.server, args.tool)
    data: dict[str, Any] = {
        "server": entry.server,
        "tool": entry.name,
        "description": entry.description,
        "parameters": parameters(entry.input_schema),
        "inputSchema": entry.input_schema,
        "enabled": entry.enabled,
        "tags": list(entry.tags),
    }
    if entry.title:
        data["title"] = entry.title
    if entry.output_schema is not None:
        data["outputSchema"] = entry.output_schema
    if entry.tool.annotations is not None:
        data["annotations"] = entry.tool.annotations.model_dump(by_alias=True, exclude_none=True)
    return _result(data, render.details_text(data, include_schema=not is_flat(entry.input_schema)))


async def execute_tool(gateway: Gateway, args: ExecuteArgs) -> types.CallToolResult:
    return await gateway.execute(args.server, args.tool, args.arguments)


META_TOOLS: tuple[MetaTool, ...] = (
    MetaTool(
        "list_mcp_servers",
        "List the connected MCP servers with their status, tool counts and what they are for.",
        ListServersArgs,
        list_mcp_servers,
    ),
    MetaTool(
        "search_tools",
        "Find tools for a task across all servers. Returns ranked server/tool pairs with a summary. "
        "Start here when you need a capability.",
        SearchToolsArgs,
        search_tools,
    ),
    MetaTool(
        "list_tools",
        "List every tool of one server with a one-line summary.",
        ListToolsArgs,
        list_tools,
    ),
    MetaTool(
        "get_tool_details",
        "Get a tool's full description and parameters. Call before execute_tool.",
        ToolRefArgs,
        get_tool_details,
    ),
    MetaTool(
        "execute_tool",
        "Run a tool on its server with arguments matching its parameters; returns the tool's own result.",
        ExecuteArgs,
        execute_tool,
        read_only=False,
    ),
)
BY_NAME = {t.name: t for t in META_TOOLS}


def parse_arguments(tool: MetaTool, arguments: dict[str, Any] | None) -> _Args:
    """Validate a meta-tool's arguments; a mistake becomes an `InvalidRequest` that says how to fix it."""
    try:
        return tool.args.model_validate(arguments or {})
    except ValidationError as exc:
        problems: list[str] = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "arguments"
            if err["type"] == "extra_forbidden":
                known = ", ".join(f.alias or n for n, f in tool.args.model_fields.items()) or "none"
                problems.append(f"unknown argument {where!r} (expected: {known})")
            elif err["type"] == "missing":
                problems.append(f"missing required argument {where!r}")
            else:
                problems.append(f"{where}: {err['msg']}")
        raise InvalidRequest(f"Invalid arguments for {tool.name}: {'; '.join(problems)}.") from None
