"""The in-process gateway many tests drive: an SDK client -> the gateway's MCP face -> upstreams over
the in-memory transport (the kitchen-sink server and a small notes server; two `Library` servers of
resources and prompts), and readers of results and errors."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from tests.servers.kitchen import Kitchen
from tests.servers.library import Library
from toolscout.config import ToolRule
from toolscout.config.rules import RuleSet
from toolscout.gateway.core import Gateway
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

ERAS = ["legacy", "auto"]  # "auto" probes server/discover and lands on 2026-07-28
META_TOOL_NAMES = ["list_mcp_servers", "search_tools", "list_tools", "get_tool_details", "execute_tool"]


def notes_server() -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name="create_note",
                    description="Create a note with a title and body.",
                    input_schema={"type": "object", "properties": {"title": {"type": "string"}}},
                ),
                types.Tool(
                    name="get_weather",
                    description="A notes server that also knows the weather.",
                    input_schema={"type": "object", "properties": {}},
                ),
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text="noted")])

    return Server("notes", on_list_tools=list_tools, on_call_tool=call_tool)


@asynccontextmanager
async def connected(
    era: str,
    *,
    rules: Sequence[ToolRule] = (),
    call_timeout: float = 30.0,
    extra: Sequence[UpstreamSpec] = (),
) -> AsyncGenerator[tuple[Client, Kitchen]]:
    kitchen = Kitchen()
    specs = [
        UpstreamSpec("kitchen", InProcessUpstream(kitchen.server), call_timeout=call_timeout),
        UpstreamSpec("notes", InProcessUpstream(notes_server()), description="Personal notes"),
        *extra,
    ]
    async with Gateway(specs, rules=RuleSet(rules)) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        async with Client(build_server(gateway), mode=era) as client:
            assert client.protocol_version == ("2025-11-25" if era == "legacy" else "2026-07-28")
            yield client, kitchen


@asynccontextmanager
async def libraries(
    *, rules: Sequence[ToolRule] = (), protocol: str = "auto", extra: Sequence[UpstreamSpec] = ()
) -> AsyncGenerator[tuple[Gateway, Library, Library]]:
    books, films = Library("books"), Library("films")
    specs = [
        UpstreamSpec("books", InProcessUpstream(books.server), protocol=protocol),
        UpstreamSpec("films", InProcessUpstream(films.server), protocol=protocol),
        UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server)),  # tools only: no resources, no prompts
        *extra,
    ]
    async with Gateway(specs, rules=RuleSet(rules)) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        yield gateway, books, films


def structured(result: types.CallToolResult) -> dict[str, Any]:
    content: Any = result.structured_content
    assert isinstance(content, dict)
    return cast(dict[str, Any], content)


def text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def error_of(result: types.CallToolResult) -> dict[str, Any]:
    assert result.is_error, text(result)
    data = structured(result)
    assert data["success"] is False
    return cast(dict[str, Any], data["error"])


def text_of(contents: types.TextResourceContents | types.BlobResourceContents) -> str:
    assert isinstance(contents, types.TextResourceContents)
    return contents.text


async def expect_error(call: Any, code: int, *fragments: str) -> MCPError:
    with pytest.raises(MCPError) as caught:
        await call
    error = caught.value
    assert error.code == code, error.message
    for fragment in fragments:
        assert fragment in error.message
    assert "Traceback" not in error.message
    return error
