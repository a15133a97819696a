"""Discovery mode (the default): the five meta-tools an agent sees, their arguments and what they do.

Each handler takes validated arguments and returns a `CallToolResult` with `structuredContent`
plus a compact text rendering (render/text.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import mcp_types as types
from pydantic import Field, field_validator

from toolscout.config.models import ListingFormat
from toolscout.errors import AGENT_STEPS, Phrasing
from toolscout.gateway.core import Gateway
from toolscout.modes.client import SurfaceClient
from toolscout.modes.meta_tool import ArgsModel, MetaTool, forgive_arguments, run_meta_tool, tool_result
from toolscout.render.signatures import call_signature, is_flat, parameters
from toolscout.render.text import (
    INSTRUCTIONS_LIMIT,
    compact_json,
    cut_text,
    details_text,
    search_text,
    servers_text,
    tools_text,
)
from toolscout.upstream import Status


class ListServersArgs(ArgsModel):
    pass


class SearchToolsArgs(ArgsModel):
    query: str | list[str] = Field(description="The task in plain words, or its steps.")
    server: str | None = Field(None, description="Only this server.")
    # The bounds go unsaid to keep the meta-tools within 350 tokens: a call past them is refused
    # with a message that states them (`parse_arguments`).
    limit: int = Field(10, ge=1, le=50)
    # The name and the results' `relevance` say what it is; the default is the config's.
    min_relevance: float | None = Field(None, ge=0.0, le=1.0, alias="minRelevance")


class ListToolsArgs(ArgsModel):
    server: str
    include_disabled: bool = Field(False, alias="includeDisabled")


class ToolRefArgs(ArgsModel):
    server: str
    tool: str


class DetailsArgs(ToolRefArgs):
    # Only "json" is worth naming: the signature text is the default, and an enum of one costs fewer tokens.
    format: Literal["json"] | None = None


class ExecuteArgs(ToolRefArgs):
    arguments: dict[str, Any] = Field(default_factory=dict[str, Any])
    max_output_chars: int | None = Field(None, ge=0)

    _forgive = field_validator("arguments", mode="before")(forgive_arguments)


async def list_mcp_servers(gateway: Gateway, _: ListServersArgs) -> types.CallToolResult:
    await gateway.settle_startup()
    servers: list[dict[str, Any]] = []
    for up in gateway.upstreams:
        entry = gateway.server_status(up)
        if "instructions" in entry:
            entry["instructions"] = cut_text(entry["instructions"], INSTRUCTIONS_LIMIT)
        servers.append(entry)
    data = {
        "servers": servers,
        "totalTools": sum(s["toolCount"] for s in servers),
        "enabledTools": sum(s["enabledCount"] for s in servers),
    }
    return tool_result(data, servers_text(data))


async def search_tools(gateway: Gateway, args: SearchToolsArgs) -> types.CallToolResult:
    await gateway.settle_startup()
    hits = await gateway.search(args.query, server=args.server, limit=args.limit, min_relevance=args.min_relevance)
    data: dict[str, Any] = {
        "query": args.query,
        "results": [
            {
                "server": h.tool.server,
                "tool": h.tool.name,
                "summary": h.tool.summary,
                "relevance": h.relevance,
                "tags": list(h.tool.tags),
                # For a list of steps: which ones this tool answers, numbered from 1 like the list.
                **({"steps": [step + 1 for step in h.steps]} if isinstance(args.query, list) else {}),
                # Types only: often enough to call right away; get_tool_details adds the descriptions.
                "signature": call_signature(h.tool.name, h.tool.input_schema, max_description_len=0),
                # From the persistent catalog: the server is not connected (yet), its tools may have changed.
                **({"stale": True} if gateway.cached_at(h.tool.server) is not None else {}),
            }
            for h in hits
        ],
    }
    # Servers whose tools are missing from the ranking (those answering from the cache are in it).
    connecting = [
        u.name for u in gateway.upstreams if u.status is Status.CONNECTING and gateway.cached_at(u.name) is None
    ]
    if connecting:
        data["connecting"] = connecting
    floor = gateway.min_relevance if args.min_relevance is None else args.min_relevance
    if floor > 0:
        data["minRelevance"] = floor
        if not hits:
            # All below the floor, or no match at all: say which, and what the weaker match is.
            weaker = await gateway.search(args.query, server=args.server, limit=1, min_relevance=0.0)
            if weaker:
                data["closest"] = {
                    "server": weaker[0].tool.server,
                    "tool": weaker[0].tool.name,
                    "relevance": weaker[0].relevance,
                }
    return tool_result(data, search_text(data))


async def list_tools(gateway: Gateway, args: ListToolsArgs) -> types.CallToolResult:
    # A tool whose schema was refused is listed anyway, saying why: the agent learns why it cannot call it.
    tools = await gateway.tools(args.server, include_disabled=True)
    shown = [t for t in tools if args.include_disabled or t.enabled or t.unusable]
    data: dict[str, Any] = {
        "server": args.server,
        "tools": [
            {"name": t.name, "summary": t.summary, "enabled": t.enabled, "tags": list(t.tags)}
            | ({"unusable": t.unusable} if t.unusable else {})
            for t in shown
        ],
    }
    if gateway.cached_at(args.server) is not None:
        data["stale"] = True
    return tool_result(data, tools_text(data))


async def get_tool_details(gateway: Gateway, args: DetailsArgs) -> types.CallToolResult:
    entry = await gateway.tool(args.server, args.tool)
    data: dict[str, Any] = {
        "server": entry.server,
        "tool": entry.name,
        "description": entry.description,
        "signature": call_signature(entry.name, entry.input_schema),
        "parameters": parameters(entry.input_schema),
        "inputSchema": entry.input_schema,
        "enabled": entry.enabled,
        "tags": list(entry.tags),
    }
    if entry.title:
        data["title"] = entry.title
    if gateway.cached_at(entry.server) is not None:
        data["stale"] = True
    if entry.output_schema is not None:
        data["outputSchema"] = entry.output_schema
    if entry.tool.annotations is not None:
        data["annotations"] = entry.tool.annotations.model_dump(by_alias=True, exclude_none=True)
    if args.format == "json":
        return tool_result(data, compact_json(data))
    return tool_result(data, details_text(data, include_schema=not is_flat(entry.input_schema)))


async def execute_tool(gateway: Gateway, args: ExecuteArgs) -> types.CallToolResult:
    return await gateway.execute(args.server, args.tool, args.arguments, max_output_chars=args.max_output_chars)


META_TOOLS: tuple[MetaTool, ...] = (
    MetaTool(
        "list_mcp_servers",
        "MCP servers: status, tool count, purpose.",
        ListServersArgs,
        handler=list_mcp_servers,
    ),
    MetaTool(
        "search_tools",
        "Find tools for a task across all servers, ranked. Start here.",
        SearchToolsArgs,
        handler=search_tools,
    ),
    MetaTool(
        "list_tools",
        "Every tool of one server, one line each.",
        ListToolsArgs,
        handler=list_tools,
    ),
    MetaTool(
        "get_tool_details",
        "A tool's description and parameters; call before execute_tool.",
        DetailsArgs,
        handler=get_tool_details,
    ),
    MetaTool(
        "execute_tool",
        "Run a tool with its arguments; returns its own result.",
        ExecuteArgs,
        handler=execute_tool,
        read_only=False,
    ),
)
BY_NAME = {t.name: t for t in META_TOOLS}


class DiscoverySurface:
    """The five meta-tools: list servers, search, list a server's tools, details, execute."""

    per_client = False
    next_steps: Phrasing = AGENT_STEPS

    instructions = (
        "toolscout fronts many MCP servers. To use one of their tools: search_tools with what you want to do, "
        "get_tool_details for its parameters, then execute_tool. list_mcp_servers shows what is connected."
    )

    def __init__(
        self, gateway: Gateway, *, listing_format: ListingFormat = "text", extra: Sequence[MetaTool] = ()
    ) -> None:
        """Offer the five meta-tools, then the `extra` ones (`smart_tool_discovery` with `smartTool: true`)."""
        self.gateway = gateway
        self.listing_format: ListingFormat = listing_format
        self._tools = {**BY_NAME, **{tool.name: tool for tool in extra}}
        self._definitions = [tool.definition() for tool in self._tools.values()]

    async def tools(self, client: SurfaceClient) -> list[types.Tool]:
        return self._definitions

    async def call(self, client: SurfaceClient, name: str, arguments: dict[str, Any]) -> types.CallToolResult | None:
        return await run_meta_tool(self._tools, self.gateway, name, arguments, listing_format=self.listing_format)

    def native(self, name: str) -> bool:
        return False
