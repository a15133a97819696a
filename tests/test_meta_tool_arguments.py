"""Meta-tool arguments are checked strictly, in every mode and both eras.

A boolean is not a number, a number or a string not a boolean, a numeric string not a number;
each refusal says which argument, what was expected and what came. `null` for an optional
argument is the same as leaving it out; for a required one it is refused.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.servers.kitchen import Kitchen
from toolscout.config.models import ModeName
from toolscout.gateway.core import Gateway
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "auto"]  # "auto" lands on 2026-07-28
WEATHER = {"city": "Oslo"}


@asynccontextmanager
async def front(mode: ModeName, era: str) -> AsyncGenerator[tuple[Client, Kitchen]]:
    kitchen = Kitchen()
    async with Gateway([UpstreamSpec("kitchen", InProcessUpstream(kitchen.server))]) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        async with Client(build_server(gateway, mode), mode=era) as client:
            yield client, kitchen


def text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def refused(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    """The message of `tool`'s refusal of `arguments` (an INVALID_ARGUMENTS error result)."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, (tool, arguments, text(result))
    error = cast(dict[str, Any], result.structured_content)["error"]
    assert error["code"] == "INVALID_ARGUMENTS", error
    message = cast(str, error["message"])
    assert message.startswith(f"Invalid arguments for {tool}: ") and f"Call {tool} again" in message, message
    return message


async def ok(client: Client, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, (tool, arguments, text(result))
    return result


# (tool, arguments, what the refusal must say), for the five meta-tools of discovery and dynamic mode.
WRONG_TYPES: list[tuple[str, dict[str, Any], str]] = [
    (
        "search_tools",
        {"query": "weather", "limit": True},
        "limit: expected an integer from 1 to 50, got true (a boolean)",
    ),
    ("search_tools", {"query": "weather", "limit": "5"}, 'limit: expected an integer from 1 to 50, got "5" (a string)'),
    ("search_tools", {"query": "weather", "limit": 2.5}, "limit: expected an integer from 1 to 50, got 2.5 (a number)"),
    ("search_tools", {"query": 5}, "query: expected a string or an array of strings, got 5 (a number)"),
    ("search_tools", {"query": True}, "query: expected a string or an array of strings, got true (a boolean)"),
    ("search_tools", {"query": "w", "minRelevance": True}, "minRelevance: expected a number from 0 to 1, got true"),
    ("search_tools", {"query": "w", "server": 1}, "server: expected a string, got 1 (a number)"),
    ("list_tools", {"server": "kitchen", "includeDisabled": 0}, "includeDisabled: expected true or false, got 0"),
    ("list_tools", {"server": "kitchen", "includeDisabled": "false"}, 'expected true or false, got "false" (a string)'),
    ("list_tools", {"server": None}, "server: expected a string, got null"),
    ("get_tool_details", {"server": "kitchen", "tool": "get_weather", "format": True}, 'format: expected "json"'),
    ("get_tool_details", {"server": "kitchen", "tool": 7}, "tool: expected a string, got 7 (a number)"),
    (
        "execute_tool",
        {"server": "kitchen", "tool": "get_weather", "arguments": WEATHER, "max_output_chars": True},
        "max_output_chars: expected an integer of at least 0, got true (a boolean)",
    ),
    (
        "execute_tool",
        {"server": "kitchen", "tool": "get_weather", "arguments": WEATHER, "max_output_chars": "3"},
        'max_output_chars: expected an integer of at least 0, got "3" (a string)',
    ),
    ("execute_tool", {"server": "kitchen", "tool": "get_weather", "arguments": 5}, "arguments: expected an object"),
    ("execute_tool", {"server": None, "tool": "get_weather"}, "server: expected a string, got null"),
]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("mode", ["discovery", "dynamic"])
async def test_meta_tools_refuse_arguments_of_the_wrong_type(mode: ModeName, era: str) -> None:
    async with front(mode, era) as (client, kitchen):
        for tool, arguments, expected in WRONG_TYPES:
            message = await refused(client, tool, arguments)
            assert expected in message, (tool, arguments, message)
        assert kitchen.calls == []  # nothing refused reached the server


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("mode", ["discovery", "dynamic"])
async def test_null_for_an_optional_argument_is_the_same_as_leaving_it_out(mode: ModeName, era: str) -> None:
    async with front(mode, era) as (client, _):
        nulls = {"server": None, "limit": None, "minRelevance": None}
        plain = await ok(client, "search_tools", {"query": "weather"})
        assert (await ok(client, "search_tools", {"query": "weather", **nulls})).structured_content == (
            plain.structured_content
        )
        listed = await ok(client, "list_tools", {"server": "kitchen"})
        same = await ok(client, "list_tools", {"server": "kitchen", "includeDisabled": None})
        assert same.structured_content == listed.structured_content
        details = await ok(client, "get_tool_details", {"server": "kitchen", "tool": "get_weather", "format": None})
        assert "get_weather(" in text(details)  # the default format, as without `format`
        run = {"server": "kitchen", "tool": "get_weather"}
        uncut = await ok(client, "execute_tool", {**run, "arguments": WEATHER, "max_output_chars": None})
        assert text(uncut) == "21.5 °C in Oslo"  # no cap, as without max_output_chars
        cut = await ok(client, "execute_tool", {**run, "arguments": WEATHER, "max_output_chars": 4})
        assert text(cut).startswith("21.5") and "21.5 °C" not in text(cut)


# Handshake era only: at 2026-07-28 nothing loads (tests/test_dynamic.py, tests/test_scoped_serving.py).
@pytest.mark.parametrize("era", ["legacy"])
async def test_dynamic_load_and_unload_are_strict_too(era: str) -> None:
    async with front("dynamic", era) as (client, _):
        message = await refused(client, "load_tools", {"tools": [{"server": 1, "tool": "get_weather"}]})
        assert "tools.0.server: expected a string, got 1 (a number)" in message
        message = await refused(client, "load_tools", {"tools": [True]})
        assert "tools.0: expected an object, got true (a boolean)" in message
        message = await refused(client, "unload_tools", {"names": "kitchen__get_weather"})
        assert 'names: expected an array of strings, got "kitchen__get_weather" (a string)' in message
        await ok(client, "load_tools", {"tools": [{"server": "kitchen", "tool": "get_weather"}]})
        unloaded = await ok(client, "unload_tools", {"names": None})  # null: as if left out, every tool
        assert cast(dict[str, Any], unloaded.structured_content)["loadedCount"] == 0


@pytest.mark.parametrize("era", ERAS)
async def test_compact_inspect_and_exec_are_strict(era: str) -> None:
    async with front("compact", era) as (client, kitchen):
        message = await refused(client, "inspect", {"server_name": "kitchen", "tool_name": 5})
        assert "tool_name: expected a string, got 5 (a number)" in message
        message = await refused(client, "inspect", {"server_name": True})
        assert "server_name: expected a string, got true (a boolean)" in message
        run = {"server_name": "kitchen", "tool_name": "get_weather", "arguments": WEATHER}
        message = await refused(client, "exec", {**run, "max_output_chars": True})
        assert "max_output_chars: expected an integer of at least 0, got true (a boolean)" in message
        message = await refused(client, "exec", {**run, "max_output_chars": 1.0})
        assert "max_output_chars: expected an integer of at least 0, got 1.0 (a number)" in message
        assert kitchen.calls == []
        every = await ok(client, "inspect", {"server_name": "kitchen", "tool_name": None})
        assert len(cast(dict[str, Any], every.structured_content)["tools"]) > 1  # null: all its tools
        assert text(await ok(client, "exec", {**run, "max_output_chars": None})) == "21.5 °C in Oslo"
