"""Dynamic mode: tools a client loads join that client's own tool list, and the client is told.

Real SDK clients over the in-memory transport (one connection each) and over streamable HTTP
(sessions at 2025-11-25). Loading is for handshake-era clients only: at 2026-07-28 tools/list cannot
vary per connection, so a client of that era lists the meta-tools and is refused a load, with the
way to get tools of its own (a token's pinnedTools, tests/test_scoped_serving.py).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.helpers.gateway_client import ERAS, META_TOOL_NAMES, error_of, notes_server, structured, text
from tests.helpers.http_gateway import http_gateway
from tests.helpers.list_changes import ListWatcher, watched_client
from tests.servers.kitchen import WEATHER_OUTPUT_SCHEMA, Kitchen
from toolscout.config import ToolRule
from toolscout.config.rules import RuleSet
from toolscout.gateway.core import Gateway
from toolscout.modes.base import SurfaceOptions
from toolscout.render.text import tool_tokens
from toolscout.serve.server import build_server
from toolscout.serve.sessions import ClientSessions
from toolscout.upstream import InProcessUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio

DYNAMIC_TOOLS = [*META_TOOL_NAMES, "load_tools", "unload_tools"]
HANDSHAKE = [era for era in ERAS if era == "legacy"]
WEATHER = {"server": "kitchen", "tool": "get_weather"}
NOTE = {"server": "notes", "tool": "create_note"}


@asynccontextmanager
async def dynamic_gateway() -> AsyncGenerator[tuple[Gateway, Kitchen]]:
    kitchen = Kitchen()
    specs = [
        UpstreamSpec("kitchen", InProcessUpstream(kitchen.server)),
        UpstreamSpec("notes", InProcessUpstream(notes_server())),
    ]
    rules = RuleSet([ToolRule(pattern=["delete_*"], enabled=False)])
    async with Gateway(specs, rules=rules) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        yield gateway, kitchen


async def names(client: Client) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


@pytest.mark.parametrize("era", HANDSHAKE)
async def test_loaded_tools_join_the_list_with_full_schemas_and_run_natively(era: str) -> None:
    watcher = ListWatcher()
    async with dynamic_gateway() as (gateway, _):
        server = build_server(gateway, "dynamic")
        async with watched_client(server, era, watcher) as client:
            tools_capability = client.server_capabilities.tools
            assert tools_capability is not None and tools_capability.list_changed is True
            assert await names(client) == DYNAMIC_TOOLS
            loaded = await client.call_tool("load_tools", {"tools": [WEATHER, NOTE]})
            assert not loaded.is_error, text(loaded)
            assert structured(loaded)["loaded"] == [
                {**WEATHER, "name": "kitchen__get_weather"},
                {**NOTE, "name": "notes__create_note"},
            ]
            assert "kitchen__get_weather, notes__create_note" in text(loaded)
            await watcher.wait_for(1)

            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert list(listed) == [*DYNAMIC_TOOLS, "kitchen__get_weather", "notes__create_note"]
            weather = listed["kitchen__get_weather"]
            assert weather.input_schema["required"] == ["city"]
            assert weather.output_schema == WEATHER_OUTPUT_SCHEMA
            assert weather.annotations is not None and weather.annotations.read_only_hint is True

            result = await client.call_tool("kitchen__get_weather", {"city": "Paris"})
            assert not result.is_error and result.structured_content == {"city": "Paris", "celsius": 21.5}
            # Loaded tools are checked like execute_tool's: nothing bad reaches the upstream.
            bad = error_of(await client.call_tool("kitchen__get_weather", {}))
            assert bad["code"] == "VALIDATION_ERROR" and "city" in bad["message"]

            unloaded = await client.call_tool("unload_tools", {"names": ["notes__create_note"]})
            assert structured(unloaded)["unloaded"] == [{**NOTE, "name": "notes__create_note"}]
            await watcher.wait_for(2)
            assert await names(client) == [*DYNAMIC_TOOLS, "kitchen__get_weather"]

            await client.call_tool("unload_tools", {})
            await watcher.wait_for(3)
            assert await names(client) == DYNAMIC_TOOLS
            assert watcher.count == 3


@pytest.mark.parametrize("era", HANDSHAKE)
async def test_loading_is_all_or_nothing_capped_and_quiet_when_nothing_changes(era: str) -> None:
    watcher = ListWatcher()
    async with dynamic_gateway() as (gateway, _):
        server = build_server(gateway, "dynamic", SurfaceOptions(max_loaded_tools=2))
        async with watched_client(server, era, watcher) as client:
            typo = error_of(await client.call_tool("load_tools", {"tools": [WEATHER, {**NOTE, "tool": "creat"}]}))
            assert typo["code"] == "TOOL_NOT_FOUND" and "create_note" in typo["message"]
            disabled = error_of(await client.call_tool("load_tools", {"tools": [{**WEATHER, "tool": "delete_city"}]}))
            assert disabled["code"] == "TOOL_DISABLED"
            empty = error_of(await client.call_tool("load_tools", {"tools": []}))
            assert empty["code"] == "INVALID_ARGUMENTS"
            assert await names(client) == DYNAMIC_TOOLS  # the good half of a failed call was not loaded

            await client.call_tool("load_tools", {"tools": [WEATHER, WEATHER]})
            await watcher.wait_for(1)
            again = await client.call_tool("load_tools", {"tools": [WEATHER]})
            assert structured(again)["loadedCount"] == 1
            over = {"tools": [NOTE, {**WEATHER, "tool": "render_chart"}]}
            limit = error_of(await client.call_tool("load_tools", over))
            assert limit["code"] == "LOAD_LIMIT_REACHED" and limit["limit"] == 2
            assert "kitchen__get_weather" in limit["message"] and "unload_tools" in limit["message"]
            nothing = await client.call_tool("unload_tools", {"names": ["notes__create_note"]})
            assert "Nothing to unload" in text(nothing)
            # Loading what is loaded, a refused load and unloading what is not loaded change nothing.
            await client.call_tool("load_tools", {"tools": [NOTE]})
            await watcher.wait_for(2)
            assert watcher.count == 2


async def test_each_connection_has_its_own_loaded_tools() -> None:
    async with dynamic_gateway() as (gateway, _):
        server = build_server(gateway, "dynamic")
        async with Client(server, mode="legacy") as first, Client(server, mode="legacy") as second:
            await first.call_tool("load_tools", {"tools": [WEATHER]})
            await second.call_tool("load_tools", {"tools": [NOTE]})
            assert (await names(first))[-1:] == ["kitchen__get_weather"]
            assert (await names(second))[-1:] == ["notes__create_note"]
            # A native name works unloaded too: a client with a stale list still reaches its tool.
            stale = await second.call_tool("kitchen__get_weather", {"city": "Oslo"})
            assert not stale.is_error


async def test_loaded_tools_follow_the_catalog() -> None:
    async with dynamic_gateway() as (gateway, _), Client(build_server(gateway, "dynamic"), mode="legacy") as client:
        await client.call_tool("load_tools", {"tools": [NOTE]})
        gateway.catalog.set_server_tools("notes", [])
        assert await names(client) == DYNAMIC_TOOLS
        gone = error_of(await client.call_tool("notes__create_note", {"title": "x"}))
        assert gone["code"] == "TOOL_NOT_FOUND"
        note = types.Tool(name="create_note", description="Create a note.", input_schema={"type": "object"})
        gateway.catalog.set_server_tools("notes", [note])
        assert await names(client) == [*DYNAMIC_TOOLS, "notes__create_note"]


async def test_dynamic_surface_adds_little_to_the_default_one() -> None:
    async with dynamic_gateway() as (gateway, _):
        async with Client(build_server(gateway, "dynamic"), mode="legacy") as client:
            dynamic = tool_tokens((await client.list_tools()).tools)
        async with Client(build_server(gateway, "discovery"), mode="legacy") as client:
            discovery = tool_tokens((await client.list_tools()).tools)
    assert discovery <= 450 and dynamic - discovery <= 180, (discovery, dynamic)


async def test_over_http_each_client_is_notified_and_sees_only_its_own_tools() -> None:
    watcher = ListWatcher()
    async with dynamic_gateway() as (gateway, _), http_gateway(gateway) as url:
        async with watched_client(url, "legacy", watcher) as client:
            await client.call_tool("load_tools", {"tools": [WEATHER]})
            await watcher.wait_for(1)
            assert (await names(client))[-1] == "kitchen__get_weather"
            result = await client.call_tool("kitchen__get_weather", {"city": "Rome"})
            assert not result.is_error
        # Another session starts with nothing loaded.
        async with Client(url, mode="legacy") as other:
            assert await names(other) == DYNAMIC_TOOLS


@pytest.mark.parametrize("transport", ["memory", "http"])
async def test_at_2026_07_28_nothing_is_loaded_and_loading_points_to_pinned_tools(transport: str) -> None:
    async with dynamic_gateway() as (gateway, _), http_gateway(gateway, mode="dynamic") as url:
        target = build_server(gateway, "dynamic") if transport == "memory" else url
        async with Client(target, mode="auto") as client:
            assert client.protocol_version == "2026-07-28"
            assert await names(client) == META_TOOL_NAMES  # the same list for every connection
            for tool, arguments in (("load_tools", {"tools": [WEATHER]}), ("unload_tools", {})):
                refused = error_of(await client.call_tool(tool, arguments))
                assert refused["code"] == "NOT_IN_THIS_PROTOCOL", refused
                assert "2026-07-28" in refused["message"] and "pinnedTools" in refused["message"]
            assert await names(client) == META_TOOL_NAMES
            # The tools themselves stay reachable, by execute_tool or their native name.
            direct = await client.call_tool("kitchen__get_weather", {"city": "Rome"})
            assert not direct.is_error


async def test_http_client_states_are_bounded() -> None:
    async with (
        dynamic_gateway() as (gateway, _),
        http_gateway(gateway, ClientSessions(max_http_clients=1)) as url,
        Client(url, mode="legacy") as first,
    ):
        await first.call_tool("load_tools", {"tools": [WEATHER]})
        assert (await names(first))[-1] == "kitchen__get_weather"
        async with Client(url, mode="legacy") as second:
            await second.call_tool("load_tools", {"tools": [NOTE]})
        # The second session took the only slot: the first one starts afresh.
        assert await names(first) == DYNAMIC_TOOLS
