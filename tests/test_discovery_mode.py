"""End to end in one process: an SDK client -> the gateway's MCP face -> upstreams over the in-memory transport."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.helpers.gateway_client import ERAS, META_TOOL_NAMES, connected, error_of, notes_server, structured, text
from tests.servers.kitchen import TINY_PNG, Kitchen
from toolscout.config import ToolRule
from toolscout.config.models import SearchConfig
from toolscout.config.rules import RuleSet
from toolscout.config.scopes import Scope, scoped
from toolscout.demo import notes, units
from toolscout.demo import text as text_server
from toolscout.gateway.core import Gateway
from toolscout.search.hybrid import TAG_RELEVANCE
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("era", ERAS)
async def test_agent_sees_exactly_the_five_meta_tools(era: str) -> None:
    async with connected(era) as (client, _):
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == META_TOOL_NAMES
        assert client.instructions and "search_tools" in client.instructions
        for tool in listed.tools:
            assert tool.description and len(tool.description) < 200
            assert tool.input_schema["type"] == "object"
        execute = next(t for t in listed.tools if t.name == "execute_tool")
        assert execute.input_schema["required"] == ["server", "tool"]


@pytest.mark.parametrize("era", ERAS)
async def test_list_mcp_servers_reports_counts_status_and_instructions(era: str) -> None:
    rules = [ToolRule(pattern=["delete_*"], enabled=False, tags=["dangerous"])]
    async with connected(era, rules=rules) as (client, _):
        result = await client.call_tool("list_mcp_servers", {})
        data = structured(result)
        kitchen, notes = data["servers"]
        assert kitchen == {
            "name": "kitchen",
            # It says nothing of itself beyond its instructions: a description made from its tools.
            "description": kitchen["description"],
            "status": "connected",
            "toolCount": 8,
            "enabledCount": 7,
            "instructions": "Kitchen-sink test server: weather, charts and failures.",
            "serverInfo": {"name": "kitchen", "version": "1.2.3"},
            "protocolVersion": "2026-07-28",
        }
        assert kitchen["description"].startswith("Tools: fail_politely (Always fails")
        assert notes["description"] == "Personal notes"
        assert (data["totalTools"], data["enabledTools"]) == (10, 9)
        assert "kitchen [connected] 7 tools (+1 disabled)" in text(result)


@pytest.mark.parametrize("era", ERAS)
async def test_search_ranks_filters_and_limits(era: str) -> None:
    async with connected(era) as (client, _):
        data = structured(await client.call_tool("search_tools", {"query": "current weather temperature"}))
        first = data["results"][0]
        assert (first["server"], first["tool"]) == ("kitchen", "get_weather")
        assert first["summary"] == "Get the current weather for a city."
        assert 0 < first["relevance"] <= 1
        assert [r["relevance"] for r in data["results"]] == sorted(
            (r["relevance"] for r in data["results"]), reverse=True
        )

        only_notes = structured(await client.call_tool("search_tools", {"query": "weather", "server": "notes"}))
        assert [(r["server"], r["tool"]) for r in only_notes["results"]] == [("notes", "get_weather")]

        limited = structured(await client.call_tool("search_tools", {"query": "weather", "limit": 1}))
        assert len(limited["results"]) == 1

        nothing = await client.call_tool("search_tools", {"query": "zebra migration"})
        assert structured(nothing)["results"] == []
        assert "No tools match" in text(nothing)


async def test_search_tools_teaches_short_queries_one_per_step() -> None:
    async with connected(ERAS[-1]) as (client, _):
        listed = await client.list_tools()
        search = next(t for t in listed.tools if t.name == "search_tools")
        assert "one per step" in search.input_schema["properties"]["query"]["description"]
        # A pasted request is answered, and told how to ask better; a short query is not lectured.
        pasted = "hi, could you please look up for me what the weather is like right now over in Paris, thanks"
        long = await client.call_tool("search_tools", {"query": pasted})
        assert structured(long)["results"][0]["tool"] == "get_weather"
        assert "verb and an object" in structured(long)["hint"] and "verb and an object" in text(long)
        short = await client.call_tool("search_tools", {"query": "weather in a city"})
        assert "hint" not in structured(short) and "verb and an object" not in text(short)
        steps = await client.call_tool("search_tools", {"query": ["get the weather in Paris", "add a note about it"]})
        assert "hint" not in structured(steps)


@asynccontextmanager
async def demo_gateway(tmp_path: Path) -> AsyncGenerator[tuple[Gateway, Client]]:
    """The demo units, text and notes servers in process behind a gateway, and an SDK client of it."""
    specs = [
        UpstreamSpec("units", InProcessUpstream(units.build_server())),
        UpstreamSpec("text", InProcessUpstream(text_server.build_server())),
        UpstreamSpec("notes", InProcessUpstream(notes.build_server(tmp_path / "notes.json"))),
    ]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        async with Client(build_server(gateway), mode=ERAS[-1]) as client:
            yield gateway, client


async def test_search_tools_says_when_nothing_fits_and_still_shows_the_closest(tmp_path: Path) -> None:
    async with demo_gateway(tmp_path) as (gateway, client):
        flight = await client.call_tool("search_tools", {"query": "book me a flight to Lisbon"})
        assert structured(flight)["nothingFits"] is True and structured(flight)["results"]
        assert text(flight).startswith("Nothing fits 'book me a flight to Lisbon' well")
        convert = await client.call_tool("search_tools", {"query": "convert miles to kilometers"})
        assert "nothingFits" not in structured(convert) and "Nothing fits" not in text(convert)
        # `search.nothingFitsBelow: 0` never says so.
        await gateway.configure_search(SearchConfig(nothing_fits_below=0.0))
        again = await client.call_tool("search_tools", {"query": "book me a flight to Lisbon"})
        assert "nothingFits" not in structured(again)


async def test_a_long_request_is_read_as_its_steps_and_each_step_gets_its_tool(tmp_path: Path) -> None:
    async with demo_gateway(tmp_path) as (_, client):
        request = "Convert the marathon distance from miles to kilometres, then create a new note with the result."
        result = await client.call_tool("search_tools", {"query": request, "limit": 1})
    data = structured(result)
    assert data["steps"] == [
        "Convert the marathon distance from miles to kilometres",
        "create a new note with the result.",
    ]
    tools = {(r["server"], r["tool"]): r["steps"] for r in data["results"]}
    # The whole request's best, and each step's best even past `limit`, each saying its step.
    assert tools[("units", "convert_units")] == [1] and tools[("notes", "create_note")] == [2]
    assert "Steps read: 1. Convert the marathon distance" in text(result)


@pytest.mark.parametrize("era", ERAS)
async def test_disabled_tools_hidden_unless_asked_and_never_executed(era: str) -> None:
    rules = [ToolRule(pattern=["delete_*"], enabled=False, tags=["dangerous"])]
    async with connected(era, rules=rules) as (client, kitchen):
        default = structured(await client.call_tool("list_tools", {"server": "kitchen"}))
        assert "delete_city" not in [t["name"] for t in default["tools"]]
        everything = structured(await client.call_tool("list_tools", {"server": "kitchen", "includeDisabled": True}))
        delete = next(t for t in everything["tools"] if t["name"] == "delete_city")
        assert delete == {
            "name": "delete_city",
            "summary": "Delete a city from the weather database.",
            "enabled": False,
            "tags": ["dangerous"],
        }

        search = structured(await client.call_tool("search_tools", {"query": "delete city"}))
        assert "delete_city" not in [r["tool"] for r in search["results"]]

        result = await client.call_tool(
            "execute_tool", {"server": "kitchen", "tool": "delete_city", "arguments": {"city": "Paris"}}
        )
        assert error_of(result)["code"] == "TOOL_DISABLED"
        assert (
            error_of(await client.call_tool("get_tool_details", {"server": "kitchen", "tool": "delete_city"}))["code"]
            == "TOOL_DISABLED"
        )
        assert kitchen.calls == []


@pytest.mark.parametrize("era", ERAS)
async def test_search_finds_disabled_tools_only_when_asked_and_marks_them(era: str) -> None:
    rules = [ToolRule(pattern=["delete_*"], enabled=False, tags=["dangerous"])]
    async with connected(era, rules=rules) as (client, kitchen):
        before = structured(await client.call_tool("search_tools", {"query": "weather in a city"}))["results"]

        asked = {"query": "delete city", "includeDisabled": True}
        result = await client.call_tool("search_tools", asked)
        first, *_ = structured(result)["results"]
        assert (first["server"], first["tool"], first["enabled"]) == ("kitchen", "delete_city", False)
        assert "- delete_city({city: string}) (1.00, disabled) [dangerous]:" in text(result)
        weather = structured(await client.call_tool("search_tools", {**asked, "query": "weather"}))["results"]
        marked = {r["tool"]: r.get("enabled") for r in weather}  # (said of the disabled ones only)
        assert marked.pop("delete_city", False) is False and marked and set(marked.values()) == {None}

        # A tag of a disabled tool finds it too, at the tags' floor; another server's filter leaves it out.
        tagged = structured(await client.call_tool("search_tools", {"query": "dangerous", "includeDisabled": True}))
        assert (tagged["results"][0]["tool"], tagged["results"][0]["relevance"]) == ("delete_city", TAG_RELEVANCE)
        elsewhere = {**asked, "server": "notes"}
        assert {r["server"] for r in structured(await client.call_tool("search_tools", elsewhere))["results"]} <= {
            "notes"
        }

        # The default index, and what it answers, are as they were; the tool still cannot run.
        again = structured(await client.call_tool("search_tools", {"query": "delete city"}))["results"]
        assert "delete_city" not in [r["tool"] for r in again]
        after = structured(await client.call_tool("search_tools", {"query": "weather in a city"}))["results"]
        assert after == before
        run = await client.call_tool("execute_tool", {"server": "kitchen", "tool": "delete_city"})
        assert error_of(run)["code"] == "TOOL_DISABLED" and kitchen.calls == []


@pytest.mark.parametrize("era", ERAS)
async def test_whitelist_rules_enable_only_matching_tools_with_accumulated_tags(era: str) -> None:
    rules = [
        ToolRule(pattern=["*weather*"], enabled=True, tags=["weather"]),
        ToolRule(pattern=["get_*"], server="kitchen", tags=["read"]),
    ]
    async with connected(era, rules=rules) as (client, _):
        kitchen = structured(await client.call_tool("list_tools", {"server": "kitchen"}))
        assert [(t["name"], t["tags"]) for t in kitchen["tools"]] == [("get_weather", ["weather", "read"])]
        notes = structured(await client.call_tool("list_tools", {"server": "notes"}))
        assert [(t["name"], t["tags"]) for t in notes["tools"]] == [("get_weather", ["weather"])]


@pytest.mark.parametrize("era", ERAS)
async def test_tool_details_give_parameters_and_the_full_schema(era: str) -> None:
    async with connected(era) as (client, _):
        result = await client.call_tool("get_tool_details", {"server": "kitchen", "tool": "get_weather"})
        data = structured(result)
        assert data["title"] == "Weather"
        assert data["parameters"] == [
            {"name": "city", "type": "string", "required": True, "description": "City name, e.g. Paris"},
            {"name": "units", "type": '"metric" | "imperial"', "required": False, "default": "metric"},
        ]
        assert data["inputSchema"]["required"] == ["city"]
        assert data["outputSchema"]["required"] == ["city", "celsius"]
        assert data["annotations"] == {"readOnlyHint": True, "openWorldHint": True}
        rendered = text(result)
        assert "Hints: read-only, open-world" in rendered
        # A flat schema's call line says it all (types, required, defaults, short descriptions):
        # no parameter list repeats it.
        call = 'get_weather({city: string /* City name, e.g. Paris */, units?: "metric" | "imperial" = "metric"})'
        assert f"Call: {call}" in rendered
        assert "Parameters" not in rendered and "(string, required)" not in rendered

        # format: "json" puts the raw data, schemas included, in the text for clients that show only text.
        as_json = await client.call_tool(
            "get_tool_details", {"server": "kitchen", "tool": "get_weather", "format": "json"}
        )
        assert json.loads(text(as_json)) == structured(as_json) == data
        yaml = {"server": "kitchen", "tool": "get_weather", "format": "yaml"}
        wrong = error_of(await client.call_tool("get_tool_details", yaml))
        assert wrong["code"] == "INVALID_ARGUMENTS" and "format" in wrong["message"]


@pytest.mark.parametrize("era", ERAS)
async def test_execute_passes_structured_content_and_meta_through(era: str) -> None:
    async with connected(era) as (client, kitchen):
        result = await client.call_tool(
            "execute_tool", {"server": "kitchen", "tool": "get_weather", "arguments": {"city": "Paris"}}
        )
        assert not result.is_error
        assert result.structured_content == {"city": "Paris", "celsius": 21.5}
        assert text(result) == "21.5 °C in Paris"
        assert result.meta is not None and result.meta["example.com/source"] == "kitchen"
        if result.meta.get(types.SERVER_INFO_META_KEY) is not None:
            # On the stateless era the stamp names the hop the client talked to: the gateway.
            assert result.meta[types.SERVER_INFO_META_KEY]["name"] == "toolscout"
        assert kitchen.calls == [("get_weather", {"city": "Paris"})]


@pytest.mark.parametrize("era", ERAS)
async def test_execute_passes_every_content_kind_through_unchanged(era: str) -> None:
    async with connected(era) as (client, _):
        result = await client.call_tool("execute_tool", {"server": "kitchen", "tool": "render_chart", "arguments": {}})
        kinds = [block.type for block in result.content]
        assert kinds == ["text", "image", "audio", "resource", "resource_link"]
        image = result.content[1]
        assert isinstance(image, types.ImageContent) and image.data == TINY_PNG and image.mime_type == "image/png"
        resource = result.content[3]
        assert isinstance(resource, types.EmbeddedResource)
        assert isinstance(resource.resource, types.TextResourceContents) and resource.resource.text == "1,2,3"
        link = result.content[4]
        assert isinstance(link, types.ResourceLink) and str(link.uri) == "data://chart.png"


@pytest.mark.parametrize("era", ERAS)
async def test_upstream_errors_pass_through(era: str) -> None:
    async with connected(era) as (client, _):
        polite = await client.call_tool("execute_tool", {"server": "kitchen", "tool": "fail_politely"})
        assert polite.is_error and text(polite) == "the oven is off"
        assert polite.structured_content is None

        protocol = await client.call_tool("execute_tool", {"server": "kitchen", "tool": "protocol_error"})
        error = error_of(protocol)
        assert error["code"] == "TOOL_EXECUTION_ERROR" and error["upstreamCode"] == types.INTERNAL_ERROR
        assert "kitchen on fire" in error["message"]
        assert (error["server"], error["tool"]) == ("kitchen", "protocol_error")


@pytest.mark.parametrize("era", ERAS)
async def test_invalid_arguments_never_reach_the_upstream(era: str) -> None:
    async with connected(era) as (client, kitchen):
        result = await client.call_tool(
            "execute_tool",
            {"server": "kitchen", "tool": "get_weather", "arguments": {"units": "kelvin", "wind": True}},
        )
        error = error_of(result)
        assert error["code"] == "VALIDATION_ERROR"
        assert {(v["path"], v["message"]) for v in error["violations"]} == {
            ("$", "'city' is a required property"),
            ("$", "Additional properties are not allowed ('wind' was unexpected)"),
            ("$.units", "'kelvin' is not one of ['metric', 'imperial']"),
        }
        assert "get_tool_details" in text(result)
        assert kitchen.calls == []


@pytest.mark.parametrize("era", ERAS)
async def test_unknown_names_get_suggestions(era: str) -> None:
    async with connected(era) as (client, _):
        server = error_of(await client.call_tool("list_tools", {"server": "kitchn"}))
        assert server["code"] == "SERVER_NOT_FOUND" and server["suggestions"] == ["kitchen"]

        tool = error_of(await client.call_tool("execute_tool", {"server": "kitchen", "tool": "get_wether"}))
        assert tool["code"] == "TOOL_NOT_FOUND"
        assert tool["suggestions"][0] == {"server": "kitchen", "tool": "get_weather"}
        assert len(tool["suggestions"]) <= 3

        elsewhere = error_of(await client.call_tool("get_tool_details", {"server": "kitchen", "tool": "create_note"}))
        assert elsewhere["suggestions"][0] == {"server": "notes", "tool": "create_note"}


@pytest.mark.parametrize("era", ERAS)
async def test_meta_tool_argument_mistakes_are_explained(era: str) -> None:
    async with connected(era) as (client, _):
        wrong_key = error_of(await client.call_tool("execute_tool", {"server": "kitchen", "name": "get_weather"}))
        assert wrong_key["code"] == "INVALID_ARGUMENTS"
        assert "missing required argument 'tool'" in wrong_key["message"]
        assert "unknown argument 'name' (expected: server, tool, arguments, max_output_chars)" in wrong_key["message"]

        not_an_object = error_of(
            await client.call_tool("execute_tool", {"server": "kitchen", "tool": "get_weather", "arguments": [1]})
        )
        assert not_an_object["code"] == "INVALID_ARGUMENTS"
        assert "arguments: expected an object, got [1] (an array)" in not_an_object["message"]

        empty = error_of(await client.call_tool("search_tools", {"query": "   "}))
        assert empty["code"] == "INVALID_ARGUMENTS"

        with pytest.raises(MCPError, match="Unknown tool 'get_weather'"):
            await client.call_tool("get_weather", {"city": "Paris"})


@pytest.mark.parametrize("era", ERAS)
async def test_timeout_cancels_the_call_upstream(era: str) -> None:
    async with connected(era, call_timeout=0.5) as (client, kitchen):
        result = await client.call_tool("execute_tool", {"server": "kitchen", "tool": "wait_forever"})
        error = error_of(result)
        assert error["code"] == "TIMEOUT"
        assert error["timeoutSeconds"] == 0.5
        with anyio.fail_after(30):
            await kitchen.cancelled.wait()
        # The session survives: the next call works.
        ok = await client.call_tool(
            "execute_tool", {"server": "kitchen", "tool": "get_weather", "arguments": {"city": "Oslo"}}
        )
        assert not ok.is_error


@pytest.mark.parametrize("era", ERAS)
async def test_concurrent_calls_share_one_upstream_session(era: str) -> None:
    parties = 4
    async with connected(era) as (client, _):
        results: list[types.CallToolResult] = []

        async def call() -> None:
            results.append(
                await client.call_tool(
                    "execute_tool", {"server": "kitchen", "tool": "rendezvous", "arguments": {"parties": parties}}
                )
            )

        # rendezvous only answers once all calls are in flight together, so this
        # finishes only if the gateway forwards them concurrently.
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for _ in range(parties):
                    tg.start_soon(call)
        assert [text(r) for r in results] == ["met"] * parties


async def test_downstream_cancellation_reaches_the_upstream() -> None:
    async with connected("legacy") as (client, kitchen):
        with anyio.move_on_after(0.5):
            await client.call_tool("execute_tool", {"server": "kitchen", "tool": "wait_forever"})
        with anyio.fail_after(30):
            await kitchen.cancelled.wait()


@pytest.mark.parametrize("upstream_era", ["legacy", "auto"])
async def test_upstream_tool_list_changes_reach_the_catalog(upstream_era: str) -> None:
    kitchen = Kitchen()
    spec = UpstreamSpec("kitchen", InProcessUpstream(kitchen.server), protocol=upstream_era)
    async with Gateway([spec]) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        upstream = gateway.upstream("kitchen")
        before = gateway.catalog.counts("kitchen")[0]
        async with anyio.create_task_group() as tg:
            changed = anyio.Event()

            async def watch() -> None:
                await upstream.wait_changed()
                changed.set()

            tg.start_soon(watch)
            result = await gateway.execute("kitchen", "learn_trick", {"name": "juggle_oranges"})
            assert not result.is_error
            with anyio.fail_after(10):
                await changed.wait()
        assert gateway.catalog.counts("kitchen")[0] == before + 1
        assert [h.tool.name for h in await gateway.search("juggle oranges")][:1] == ["juggle_oranges"]


@pytest.mark.parametrize("era", ERAS)
async def test_a_search_after_the_catalog_changed_finds_the_new_tool_and_no_longer_the_old(era: str) -> None:
    """Search results are never cached: the same queries, asked again after an upstream changed its
    tools (and said so), are ranked on the new list."""
    kitchen = Kitchen()
    async with Gateway([UpstreamSpec("kitchen", InProcessUpstream(kitchen.server))]) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        async with Client(build_server(gateway), mode=era) as client:

            async def found(query: str) -> list[str]:
                answer = await client.call_tool("search_tools", {"query": query})
                return [hit["tool"] for hit in structured(answer)["results"]]

            assert (await found("current weather in a city"))[:1] == ["get_weather"]
            assert "juggle_oranges" not in await found("juggle oranges")

            # The kitchen drops get_weather and learns juggle_oranges; its list_changed brings both.
            kitchen.tools = [t for t in kitchen.tools if t.name != "get_weather"]
            learn = {"server": "kitchen", "tool": "learn_trick", "arguments": {"name": "juggle_oranges"}}
            assert not (await client.call_tool("execute_tool", learn)).is_error
            with anyio.fail_after(10):
                while gateway.catalog.get("kitchen", "juggle_oranges") is None:
                    await gateway.upstream("kitchen").wait_changed()

            assert (await found("juggle oranges"))[:1] == ["juggle_oranges"]
            assert "get_weather" not in await found("current weather in a city")


async def test_the_log_says_when_each_upstream_listed_its_tools_and_how_many(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="toolscout.upstream.connection")
    specs = [
        UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server)),
        UpstreamSpec("notes", InProcessUpstream(notes_server())),
    ]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        logged = [r.getMessage() for r in caplog.records if r.name == "toolscout.upstream.connection"]
        connected_at = r"{0}: connected \(in-process: {0}, protocol [0-9-]+\), {1} tools"
        assert any(re.fullmatch(connected_at.format("kitchen", 8), line) for line in logged), logged
        assert any(re.fullmatch(connected_at.format("notes", 2), line) for line in logged), logged

        # Listed again when the server says its list changed: logged with the new count.
        await gateway.execute("kitchen", "learn_trick", {"name": "juggle"})
        with anyio.fail_after(10):
            while gateway.catalog.get("kitchen", "juggle") is None:
                await gateway.upstream("kitchen").wait_changed()
    logged = [r.getMessage() for r in caplog.records if r.name == "toolscout.upstream.connection"]
    assert "kitchen: tool list changed, now 9 tools" in logged


async def test_disabled_servers_are_listed_but_never_started() -> None:
    off = Kitchen("off")
    extra = [UpstreamSpec("off", InProcessUpstream(off.server), disabled=True, description="Switched off")]
    async with connected("legacy", extra=extra) as (client, _):
        servers = {s["name"]: s for s in structured(await client.call_tool("list_mcp_servers", {}))["servers"]}
        assert servers["off"] == {
            "name": "off",
            "description": "Switched off",
            "status": "disabled",
            "toolCount": 0,
            "enabledCount": 0,
        }
        error = error_of(await client.call_tool("execute_tool", {"server": "off", "tool": "get_weather"}))
        assert error["code"] == "SERVER_UNAVAILABLE"
        assert "'off' is disabled" in error["message"]
        assert off.calls == []


@pytest.mark.parametrize("arguments", [None, "{}", '{"city": "Lima"}'])
async def test_forgiving_about_how_arguments_are_written(arguments: object) -> None:
    async with connected("legacy") as (client, kitchen):
        result = await client.call_tool(
            "execute_tool", {"server": "kitchen", "tool": "fail_politely", "arguments": arguments}
        )
        assert text(result) == "the oven is off"
        expected = {} if arguments in (None, "{}") else {"city": "Lima"}
        assert kitchen.calls == [("fail_politely", expected)]


async def test_declared_tools_are_searchable_until_the_server_answers() -> None:
    kitchen = Kitchen()
    declared = types.Tool(name="get_weather", description="Weather, as declared in the config.", input_schema={})
    spec = UpstreamSpec("kitchen", InProcessUpstream(kitchen.server), static_tools=(declared,))
    gateway = Gateway([spec])
    # Before the upstream task runs, the declaration is all the catalog knows.
    assert [t.description for t in gateway.catalog.tools("kitchen")] == ["Weather, as declared in the config."]
    async with gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        live = gateway.catalog.get("kitchen", "get_weather")
        assert live is not None
        assert live.description.startswith("Get the current weather")
        assert gateway.catalog.counts("kitchen")[0] == 8


async def test_a_scope_searching_disabled_tools_sees_only_its_own() -> None:
    kitchen = Kitchen()
    specs = [
        UpstreamSpec("kitchen", InProcessUpstream(kitchen.server)),
        UpstreamSpec("notes", InProcessUpstream(notes_server())),
    ]
    rules = RuleSet([ToolRule(pattern=["get_*", "delete_*"], enabled=False)])
    async with Gateway(specs, rules=rules) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        unscoped = await gateway.search("weather", include_disabled=True)
        assert {("kitchen", "get_weather"), ("notes", "get_weather")} <= {
            (h.tool.server, h.tool.name) for h in unscoped
        }
        with scoped(Scope.of(servers=["kitchen"], tools=["!delete_*"])):
            seen = await gateway.search("weather", include_disabled=True)
            assert ("kitchen", "get_weather", False) in [(h.tool.server, h.tool.name, h.tool.enabled) for h in seen]
            assert {h.tool.server for h in seen} == {"kitchen"}
            # Disabled by the rules is one thing; outside the scope is another: never found.
            assert "delete_city" not in [
                h.tool.name for h in await gateway.search("delete city", include_disabled=True)
            ]
