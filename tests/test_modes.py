"""Exposure modes other than discovery, through a real SDK client over the in-memory transport."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
import toon_format
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client
from mcp.server import Server
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from tests.helpers.gateway_client import ERAS, META_TOOL_NAMES, connected, error_of, notes_server, structured, text
from tests.servers.conformance import build_server as conformance_upstream
from tests.servers.kitchen import TINY_PNG, TOOLS, WEATHER_OUTPUT_SCHEMA, Kitchen
from toolscout.config import GatewayConfig, ToolRule
from toolscout.config.models import ModeName, ToolNaming
from toolscout.config.rules import RuleSet
from toolscout.gateway.core import Gateway
from toolscout.modes.base import SurfaceOptions
from toolscout.naming import native_names
from toolscout.render.text import count_tokens, tabular, tool_tokens
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def surface(mode: ModeName, era: str) -> AsyncGenerator[tuple[Client, Gateway]]:
    specs = [
        UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server)),
        UpstreamSpec("notes", InProcessUpstream(notes_server()), description="Personal notes"),
    ]
    rules = RuleSet([ToolRule(pattern=["protocol_error"], enabled=False)])
    async with Gateway(specs, rules=rules) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        async with Client(build_server(gateway, mode), mode=era) as client:
            yield client, gateway


@pytest.mark.parametrize("era", ERAS)
async def test_compact_mode_lists_inspect_and_exec_with_the_catalog_in_the_description(era: str) -> None:
    async with surface("compact", era) as (client, _):
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == ["inspect", "exec"]
        inspect, run = listed.tools
        assert client.instructions and "inspect" in client.instructions
        description = inspect.description or ""
        lines = description.splitlines()
        # The compact mode's documented layout: server instructions (or the configured description) on the server line.
        assert lines[:3] == ["Inspect available MCP tools and their schemas.", "", "Available tools:"]
        assert "  Server: kitchen - Kitchen-sink test server: weather, charts and failures." in lines
        assert "  Server: notes - Personal notes" in lines
        assert "    - get_weather: Get the current weather for a city." in lines
        assert "    - create_note: Create a note with a title and body." in lines
        assert "protocol_error" not in description  # disabled by rules
        assert inspect.input_schema["required"] == ["server_name"]
        assert run.input_schema["required"] == ["server_name", "tool_name"]
        # exec reaches the kitchen's tools, some of which write: what the riskiest of them may do.
        assert run.annotations == types.ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True
        )


@pytest.mark.parametrize("era", ERAS)
async def test_compact_inspect_returns_schemas_and_exec_runs_tools(era: str) -> None:
    async with surface("compact", era) as (client, _):
        one = await client.call_tool("inspect", {"server_name": "kitchen", "tool_name": "get_weather"})
        data = structured(one)
        assert data["name"] == "get_weather" and data["server"] == "kitchen"
        assert data["input_schema"]["required"] == ["city"]
        assert data["output_schema"]["required"] == ["city", "celsius"]
        assert "name: get_weather" in text(one)  # TOON (tests/test_compact_toon.py)

        every = structured(await client.call_tool("inspect", {"server_name": "notes"}))
        assert [t["name"] for t in every["tools"]] == ["create_note", "get_weather"]

        weather = await client.call_tool(
            "exec", {"server_name": "kitchen", "tool_name": "get_weather", "arguments": {"city": "Paris"}}
        )
        assert not weather.is_error
        assert weather.structured_content == {"city": "Paris", "celsius": 21.5}

        chart = await client.call_tool(
            "exec", {"server_name": "kitchen", "tool_name": "render_chart", "arguments": '{"values": [1, 2]}'}
        )
        assert any(isinstance(b, types.ImageContent) and b.data == TINY_PNG for b in chart.content)


@pytest.mark.parametrize("era", ERAS)
async def test_compact_mode_errors_say_what_to_do(era: str) -> None:
    async with surface("compact", era) as (client, _):
        unknown = error_of(await client.call_tool("inspect", {"server_name": "kitchn"}))
        assert unknown["code"] == "SERVER_NOT_FOUND" and "kitchen" in unknown["message"]
        bad = error_of(await client.call_tool("exec", {"server_name": "kitchen", "tool_name": "get_weather"}))
        assert bad["code"] == "VALIDATION_ERROR" and "city" in bad["message"]
        disabled = error_of(await client.call_tool("exec", {"server_name": "kitchen", "tool_name": "protocol_error"}))
        assert disabled["code"] == "TOOL_DISABLED"
        missing = error_of(await client.call_tool("inspect", {"tool_name": "x"}))
        assert "server_name" in missing["message"]
        with pytest.raises(MCPError, match="offers inspect, exec"):
            await client.call_tool("search_tools", {"query": "weather"})


async def test_compact_description_follows_the_catalog() -> None:
    async with surface("compact", "legacy") as (client, gateway):
        before = (await client.list_tools()).tools[0].description or ""
        gateway.catalog.set_server_tools(
            "notes", [types.Tool(name="archive_note", description="Archive a note.", input_schema={"type": "object"})]
        )
        after = (await client.list_tools()).tools[0].description or ""
        assert "create_note" in before and "create_note" not in after
        assert "    - archive_note: Archive a note." in after


def instructed_server(name: str, instructions: str) -> Server[Any]:
    """A one-tool server that sends `instructions` when a client connects."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="post_entry", input_schema={"type": "object"})])

    return Server(name, instructions=instructions, on_list_tools=list_tools)


async def test_compact_description_cuts_long_server_instructions_and_keeps_short_ones_whole() -> None:
    long = "Use this server for the ledger. " * 12  # 384 characters, over INSTRUCTIONS_LIMIT (300)
    specs = [
        UpstreamSpec("ledger", InProcessUpstream(instructed_server("ledger", long))),
        UpstreamSpec("memo", InProcessUpstream(instructed_server("memo", "Short memos, kept whole."))),
    ]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        async with Client(build_server(gateway, "compact"), mode="legacy") as client:
            lines = ((await client.list_tools()).tools[0].description or "").splitlines()
    ledger = next(line for line in lines if line.startswith("  Server: ledger - "))
    # Cut to 300 characters at most (297 and the `...`), the space before the cut dropped.
    assert ledger == "  Server: ledger - " + "Use this server for the ledger. " * 9 + "Use this..."
    assert len(ledger.removeprefix("  Server: ledger - ")) <= 300
    assert "  Server: memo - Short memos, kept whole." in lines


@pytest.mark.parametrize("era", ERAS)
async def test_default_surface_costs_at_most_450_tokens_whatever_the_catalog(era: str) -> None:
    async with connected(era) as (client, _):
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == META_TOOL_NAMES
        # Counted as `toolscout tokens` counts: the tool definitions as a client receives them, o200k_base.
        # The definitions themselves stay within 350; `alwaysLoad` on each and execute_tool's annotations
        # (modes/hints.py) cost the rest.
        assert tool_tokens(listed.tools) <= 450
        bare = [t.model_copy(update={"meta": None, "annotations": None}) for t in listed.tools]
        assert tool_tokens(bare) <= 350


NAME_RULE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_native_names_are_valid_unique_and_deterministic() -> None:
    pairs = [
        ("github", "create_issue"),
        ("My Server", "read.file"),
        ("My_Server", "read_file"),  # the same as the one above once sanitised
        ("ünïcödé", "ツール"),
        ("s" * 50, "t" * 50),
        ("", ""),
    ]
    names = native_names(pairs)
    assert names[("github", "create_issue")] == "github__create_issue"
    assert all(NAME_RULE.match(n) for n in names.values()), names
    assert len(set(names.values())) == len(pairs)
    assert names[("My Server", "read.file")] != names[("My_Server", "read_file")]
    assert names[("My Server", "read.file")].startswith("My_Server__read_file_")
    assert len(names[("s" * 50, "t" * 50)]) == 64
    assert native_names(reversed(pairs)) == names


@given(st.lists(st.tuples(st.text(max_size=40), st.text(max_size=80)), max_size=30))
def test_native_names_hold_for_any_names(pairs: list[tuple[str, str]]) -> None:
    names = native_names(pairs)
    assert set(names) == set(pairs)
    assert all(NAME_RULE.match(n) for n in names.values())
    assert len(set(names.values())) == len(names)


@pytest.mark.parametrize("era", ERAS)
async def test_passthrough_exposes_every_enabled_tool_natively(era: str) -> None:
    async with surface("passthrough", era) as (client, _):
        listed = {t.name: t for t in (await client.list_tools()).tools}
        kitchen = {f"kitchen__{t.name}" for t in TOOLS if t.name != "protocol_error"}  # disabled by rules
        assert set(listed) == kitchen | {"notes__create_note", "notes__get_weather"}
        weather = listed["kitchen__get_weather"]
        assert weather.title == "Weather" and weather.output_schema == WEATHER_OUTPUT_SCHEMA
        assert weather.annotations is not None and weather.annotations.read_only_hint is True
        assert weather.input_schema["required"] == ["city"]

        result = await client.call_tool("kitchen__get_weather", {"city": "Paris"})
        assert result.structured_content == {"city": "Paris", "celsius": 21.5}
        assert text(await client.call_tool("notes__create_note", {"title": "x"})) == "noted"
        invalid = error_of(await client.call_tool("kitchen__get_weather", {}))
        assert invalid["code"] == "VALIDATION_ERROR"
        with pytest.raises(MCPError, match="Unknown tool 'kitchen__nope'"):
            await client.call_tool("kitchen__nope", {})


@pytest.mark.parametrize("mode", ["discovery", "dynamic"])
async def test_listing_format_toon_writes_listings_as_toon_or_json_whichever_is_smaller(mode: ModeName) -> None:
    specs = [UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server))]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        server = build_server(gateway, mode, SurfaceOptions(listing_format="toon"))
        async with Client(server, mode="legacy") as client:
            calls: list[tuple[str, dict[str, Any], str]] = [
                ("list_mcp_servers", {}, "toon"),
                ("search_tools", {"query": "weather in a city"}, "toon"),
                ("list_tools", {"server": "kitchen"}, "toon"),
            ]
            for name, arguments, form in calls:
                result = await client.call_tool(name, arguments)
                table = tabular(structured(result))
                written = text(result)
                as_json = json.dumps(table, ensure_ascii=False, separators=(",", ":"))
                as_toon = toon_format.encode(table)
                assert written == (as_json if form == "json" else as_toon), name
                # Counted here from the encoders themselves: the smaller of the two.
                assert count_tokens(written) <= min(count_tokens(as_json), count_tokens(as_toon)), name
            # Uniform rows are where TOON wins; tags are a list in the data and "a, b" in the table.
            tools = text(await client.call_tool("list_tools", {"server": "kitchen"}))
            assert tools.startswith("server: kitchen\ntools[8]{name,summary,enabled,tags}:"), tools
            # Not a listing: details keep their own rendering.
            details = await client.call_tool("get_tool_details", {"server": "kitchen", "tool": "get_weather"})
            assert text(details).startswith("kitchen / get_weather")


def test_surface_options_come_from_the_config() -> None:
    config = GatewayConfig.model_validate({"listingFormat": "toon", "maxLoadedTools": 3, "mode": "dynamic"})
    assert SurfaceOptions.from_config(config) == SurfaceOptions(max_loaded_tools=3, listing_format="toon")
    assert SurfaceOptions.from_config(GatewayConfig()) == SurfaceOptions()
    with pytest.raises(ValidationError, match="listingFormat"):
        GatewayConfig.model_validate({"listingFormat": "yaml"})


def test_bare_names_are_the_tools_own_unless_two_servers_share_one() -> None:
    pairs = [
        ("github", "create_issue"),
        ("gitlab", "create_issue"),  # a namesake: both prefixed
        ("github", "search"),
        ("files", "read.file"),  # made valid, and still its own
        ("files", "x" * 80),  # too long for a bare name: shortened with a hash
        ("a", "b__c"),  # bare, it reads like the prefixed name of b's `c`...
        ("b", "c"),  # ...which is bare itself, so there is no clash
    ]
    names = native_names(pairs, bare=True)
    assert names[("github", "create_issue")] == "github__create_issue"
    assert names[("gitlab", "create_issue")] == "gitlab__create_issue"
    assert names[("github", "search")] == "search"
    assert names[("files", "read.file")] == "read_file"
    assert (names[("a", "b__c")], names[("b", "c")]) == ("b__c", "c")
    assert len(names[("files", "x" * 80)]) == 64 and names[("files", "x" * 80)].startswith("xxxx")
    assert all(NAME_RULE.match(n) for n in names.values()) and len(set(names.values())) == len(pairs)
    # A prefixed name that a bare one happens to equal: both get a hash, so neither is taken from the other.
    clash = native_names([("a", "b__c"), ("b", "c"), ("z", "c")], bare=True)
    assert len(set(clash.values())) == 3 and all(NAME_RULE.match(n) for n in clash.values())


@given(st.lists(st.tuples(st.text(max_size=40), st.text(max_size=80)), max_size=30))
def test_bare_names_hold_for_any_names(pairs: list[tuple[str, str]]) -> None:
    names = native_names(pairs, bare=True)
    assert set(names) == set(pairs)
    assert all(NAME_RULE.match(n) for n in names.values())
    assert len(set(names.values())) == len(names)


@asynccontextmanager
async def passthrough(
    era: str, naming: ToolNaming, *, servers: tuple[str, ...] = ("kitchen", "notes")
) -> AsyncGenerator[tuple[Client, Gateway]]:
    """Passthrough in front of `servers` (the kitchen and the notes server), tools named by `naming`, no rules."""
    upstreams = {"kitchen": lambda: Kitchen().server, "notes": notes_server}
    specs = [UpstreamSpec(name, InProcessUpstream(upstreams[name]())) for name in servers]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        server = build_server(gateway, "passthrough", SurfaceOptions(tool_names=naming))
        async with Client(server, mode=era) as client:
            yield client, gateway


@pytest.mark.parametrize("era", ERAS)
async def test_passthrough_in_front_of_one_server_lists_its_tools_under_their_own_names(era: str) -> None:
    """`toolNames: auto` (the default): nothing to tell apart, so nothing renamed (a client
    looking for the upstream's own tool name must not find `server__tool` instead)."""
    async with passthrough(era, "auto", servers=("kitchen",)) as (client, _):
        listed = [t.name for t in (await client.list_tools()).tools]
        assert listed == sorted(t.name for t in TOOLS)  # by name: the order modes/hints.py keeps
        assert client.instructions is not None and "keeps its own name" in client.instructions
        weather = await client.call_tool("get_weather", {"city": "Oslo"})
        assert weather.structured_content == {"city": "Oslo", "celsius": 21.5}
        # The prefixed name still reaches it, for a client written against it.
        again = await client.call_tool("kitchen__get_weather", {"city": "Oslo"})
        assert again.structured_content == weather.structured_content
    async with passthrough(era, "prefixed", servers=("kitchen",)) as (client, _):
        assert [t.name for t in (await client.list_tools()).tools] == sorted(f"kitchen__{t.name}" for t in TOOLS)


@pytest.mark.parametrize("era", ERAS)
async def test_bare_when_unique_prefixes_only_the_names_two_servers_share(era: str) -> None:
    async with passthrough(era, "bare-when-unique") as (client, _):
        listed = {t.name for t in (await client.list_tools()).tools}
        kitchen_only = {t.name for t in TOOLS} - {"get_weather"}
        assert listed == kitchen_only | {"kitchen__get_weather", "notes__get_weather", "create_note"}
        assert text(await client.call_tool("create_note", {"title": "x"})) == "noted"
        notes_weather = await client.call_tool("notes__get_weather", {})
        assert text(notes_weather) == "noted"
        # The shared name alone is ambiguous: the answer names what to call instead.
        ambiguous = error_of(await client.call_tool("get_weather", {"city": "Oslo"}))
        assert ambiguous["code"] == "AMBIGUOUS_NAME"
        assert "kitchen__get_weather" in ambiguous["message"] and "notes__get_weather" in ambiguous["message"]
    async with passthrough(era, "auto") as (client, _):  # several servers: `server__tool`, the gateway's prefix rule
        listed = {t.name for t in (await client.list_tools()).tools}
        assert listed == {f"kitchen__{t.name}" for t in TOOLS} | {"notes__create_note", "notes__get_weather"}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("mode", ["passthrough", "dynamic"])
async def test_an_upstream_protocol_error_on_its_own_tool_reaches_the_client_as_that_error(
    era: str, mode: ModeName
) -> None:
    """A native tool answers as it would without the gateway: the upstream's JSON-RPC error, not an
    `isError` result (`-32602 Unknown tool` must not come back as a tool result)."""
    async with Gateway([UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server))]) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        async with Client(build_server(gateway, mode), mode=era) as client:
            if mode == "dynamic" and era == "legacy":  # (at 2026-07-28 nothing loads; native names still work)
                loaded = await client.call_tool(
                    "load_tools", {"tools": [{"server": "kitchen", "tool": "protocol_error"}]}
                )
                assert not loaded.is_error, text(loaded)
            name = "protocol_error" if mode == "passthrough" else "kitchen__protocol_error"
            with pytest.raises(MCPError) as raised:
                await client.call_tool(name, {})
            assert (raised.value.error.code, raised.value.error.message) == (types.INTERNAL_ERROR, "kitchen on fire")
            if mode == "dynamic":  # toolscout's own execute_tool reports it as its failure, with the upstream's code
                error = error_of(
                    await client.call_tool("execute_tool", {"server": "kitchen", "tool": "protocol_error"})
                )
                assert (error["code"], error["upstreamCode"]) == ("TOOL_EXECUTION_ERROR", types.INTERNAL_ERROR)
                assert "kitchen on fire" in error["message"]


@pytest.mark.parametrize("era", ERAS)
async def test_passthrough_in_front_of_the_conformance_upstream_is_the_upstream(era: str) -> None:
    """The two scenarios of the conformance suite's `--suite all` that passthrough once failed in front of one
    server: json-schema-2020-12 looks the tool up by its own name, and server-sse-polling
    calls a tool the server does not have and expects -32602, which the gateway now answers itself:
    a name the server did not list is never forwarded."""
    upstream = UpstreamSpec("conformance", InProcessUpstream(conformance_upstream()))
    async with Gateway([upstream]) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        async with Client(build_server(gateway, "passthrough"), mode=era) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            schema = listed["json_schema_2020_12_tool"].input_schema
            assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema" and "$defs" in schema
            with pytest.raises(MCPError) as raised:
                await client.call_tool("test_reconnection", {})
            error = raised.value.error
            assert error.code == types.INVALID_PARAMS
            assert error.message.startswith("Unknown tool 'test_reconnection'.")


def test_tool_names_come_from_the_config() -> None:
    config = GatewayConfig.model_validate({"toolNames": "bare-when-unique"})
    assert SurfaceOptions.from_config(config).tool_names == "bare-when-unique"
    assert GatewayConfig().tool_names == "auto"
    with pytest.raises(ValidationError, match="toolNames"):
        GatewayConfig.model_validate({"toolNames": "bare"})
