"""An endpoint that answers `tools/list` with nothing right after it starts (its tools
are still loading) is listed again, with backoff, when its spec says so
(`relist_empty`, which every registered server gets), until it lists some."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from toolscout.gateway.core import Gateway
from toolscout.upstream import InProcessUpstream, Status, UpstreamSpec

pytestmark = pytest.mark.anyio

TOOL = types.Tool(name="list_events", description="List CloudTrail events.", input_schema={"type": "object"})


def loading_server(empty_lists: int, asked: list[int]) -> Server[Any]:
    """A server whose first `empty_lists` tool lists are empty (it is still loading), then has one tool."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        asked.append(1)
        return types.ListToolsResult(tools=[] if len(asked) <= empty_lists else [TOOL])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text="3 events")])

    return Server("cloudtrail", on_list_tools=list_tools, on_call_tool=call_tool)


async def test_a_server_listing_nothing_at_first_is_listed_again_until_it_lists_its_tools() -> None:
    asked: list[int] = []
    spec = UpstreamSpec("cloudtrail", InProcessUpstream(loading_server(2, asked)), relist_empty=True)
    async with Gateway([spec]) as gateway:
        upstream = gateway.upstream("cloudtrail")
        with anyio.fail_after(20):
            while gateway.catalog.counts("cloudtrail")[0] == 0:
                await upstream.wait_changed()
        assert upstream.status is Status.CONNECTED
        assert len(asked) == 3
        hits = await gateway.search("cloudtrail events")
        assert [(hit.tool.server, hit.tool.name) for hit in hits] == [("cloudtrail", "list_events")]
        result = await gateway.execute("cloudtrail", "list_events", {})
        assert not result.is_error


async def test_a_server_that_lists_its_tools_at_once_is_not_asked_again() -> None:
    asked: list[int] = []
    spec = UpstreamSpec("cloudtrail", InProcessUpstream(loading_server(0, asked)), relist_empty=True)
    async with Gateway([spec]) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        # A call round-trip on the same session: anything listed meanwhile would have been asked by now.
        assert not (await gateway.execute("cloudtrail", "list_events", {})).is_error
        assert gateway.catalog.counts("cloudtrail")[0] == 1
    assert len(asked) == 1
