"""What toolscout tells clients that defer tool schemas themselves (modes/hints.py): `alwaysLoad` on its
own tools and on eager ones, a `searchHint` on every native tool, an order a prompt cache keeps, and
every upstream tool's own `_meta`, annotations, title, output schema and icons passed on unchanged.
Real SDK clients in front of in-process upstreams, in both protocol eras."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from typing import Any, get_args

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.helpers.gateway_client import ERAS, structured, text
from tests.servers.shelf import shelf_server, tool
from toolscout.catalog import CatalogTool
from toolscout.config import ToolRule
from toolscout.config.loader import parse_config
from toolscout.config.models import ModeName
from toolscout.config.rules import Load, RuleSet
from toolscout.config.scopes import Scope, scoped
from toolscout.errors import ConfigurationError
from toolscout.gateway.core import Gateway
from toolscout.modes.hints import ALWAYS_LOAD, HINT_LIMIT, SEARCH_HINT, search_hint
from toolscout.render.text import tool_definitions_json
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio

READ_ONLY = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
DESTRUCTIVE = types.ToolAnnotations(read_only_hint=False, destructive_hint=True)
RICH = tool(
    "get_forecast",
    "Get the weather forecast for a city. Several days ahead.",
    title="Forecast",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    outputSchema={"type": "object", "properties": {"days": {"type": "array"}}},
    icons=[{"src": "https://example.com/sun.png", "mimeType": "image/png", "sizes": ["48x48"]}],
    annotations={
        "title": "Weather forecast",
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": True,
    },
    _meta={
        "vendor/flags": {"beta": True, "tiers": ["free", {"name": "pro", "limits": [1, 2.5, None]}]},
        "anthropic/searchHint": "forecast weather days",
        "anthropic/custom": {"nested": {"deeper": "kept"}},
        "ui/widget": "forecast-card",
    },
)
SELF_LOADED = tool("pin_board", "Show the pin board.", _meta={ALWAYS_LOAD: True, "x": 1})
WEATHER = [
    RICH,
    tool("get_alerts", "Get the weather alerts of a region.", annotations=READ_ONLY.model_dump(by_alias=True)),
]
FILES = [
    tool("read_file", "Read a file.", annotations=READ_ONLY.model_dump(by_alias=True)),
    tool("delete_file", "Delete a file.", annotations=DESTRUCTIVE.model_dump(by_alias=True)),
    SELF_LOADED,
]
BOARD = [SELF_LOADED]


def specs(*, weather: Load | None = None, files: Load | None = None, board: Load | None = None) -> list[UpstreamSpec]:
    return [
        UpstreamSpec("weather", InProcessUpstream(shelf_server("weather", WEATHER)), load=weather),
        UpstreamSpec("files", InProcessUpstream(shelf_server("files", FILES)), load=files),
        UpstreamSpec("board", InProcessUpstream(shelf_server("board", BOARD)), load=board),
    ]


@asynccontextmanager
async def gateway_of(upstreams: Sequence[UpstreamSpec], rules: Sequence[ToolRule] = ()) -> AsyncGenerator[Gateway]:
    async with Gateway(upstreams, rules=RuleSet(rules)) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        yield gateway


async def listed(gateway: Gateway, mode: ModeName, era: str = "legacy") -> list[types.Tool]:
    async with Client(build_server(gateway, mode), mode=era) as client:
        return (await client.list_tools(cache_mode="bypass")).tools


def meta(t: types.Tool) -> dict[str, Any]:
    return t.meta or {}


@pytest.mark.parametrize("era", ERAS)
async def test_passthrough_hints_every_tool_and_marks_the_eager_ones_always_loaded(era: str) -> None:
    # The weather server is eager, but a rule defers its alerts; a rule makes the files' read_file eager.
    rules = [
        ToolRule(pattern=["get_alerts"], load="deferred"),
        ToolRule(pattern=["read_file"], server="files", load="eager"),
    ]
    async with gateway_of(specs(weather="eager", board="deferred"), rules) as gateway:
        tools = {t.name: t for t in await listed(gateway, "passthrough", era)}
        for t in tools.values():
            assert isinstance(meta(t)[SEARCH_HINT], str) and meta(t)[SEARCH_HINT], t.name
        eager = {name for name, t in tools.items() if meta(t).get(ALWAYS_LOAD) is True}
        # files' pin_board marks itself; the config says nothing of it, so that stands.
        assert eager == {"weather__get_forecast", "files__read_file", "files__pin_board"}
        # The board's entry says deferred: its upstream's `alwaysLoad: true` is turned off, beside its own keys.
        assert meta(tools["board__pin_board"]) == {
            ALWAYS_LOAD: False,
            "x": 1,
            SEARCH_HINT: meta(tools["board__pin_board"])[SEARCH_HINT],
        }
        assert ALWAYS_LOAD not in meta(tools["weather__get_alerts"])
        assert ALWAYS_LOAD not in meta(tools["files__delete_file"])
        # An upstream's own hint is its to give.
        assert meta(tools["weather__get_forecast"])[SEARCH_HINT] == "forecast weather days"
        assert "alerts" in meta(tools["weather__get_alerts"])[SEARCH_HINT]


@pytest.mark.parametrize("mode", get_args(ModeName))
@pytest.mark.parametrize("era", ERAS)
async def test_toolscouts_own_tools_are_always_loaded_in_every_mode(mode: ModeName, era: str) -> None:
    async with gateway_of(specs()) as gateway:
        tools = await listed(gateway, mode, era)
        own = [t for t in tools if "__" not in t.name]
        assert bool(own) == (mode != "passthrough"), [t.name for t in tools]  # passthrough has none of its own
        for t in own:
            assert meta(t) == {ALWAYS_LOAD: True}, t.name


@pytest.mark.parametrize("era", ERAS)
async def test_dynamic_mode_lists_eager_tools_from_the_start_and_hints_loaded_ones(era: str) -> None:
    async with (
        gateway_of(specs(files="eager")) as gateway,
        Client(build_server(gateway, "dynamic"), mode=era) as client,
    ):
        tools = (await client.list_tools()).tools
        names = [t.name for t in tools]
        own = [n for n in names if "__" not in n]
        assert names[: len(own)] == own  # the meta-tools first
        # Then the eager tools, natively, by name within their server; pin_board marks itself.
        assert names[len(own) :] == [
            "files__delete_file",
            "files__pin_board",
            "files__read_file",
            "board__pin_board",
        ]
        for t in tools[len(own) :]:
            assert meta(t)[ALWAYS_LOAD] is True and meta(t)[SEARCH_HINT]
        by_name = {t.name: t for t in tools}
        assert by_name["files__read_file"].annotations == READ_ONLY
        assert text(await client.call_tool("files__read_file", {})) == "ran read_file"

        if client.protocol_version == "2026-07-28":
            return  # nothing is loaded into a list that must not vary per connection
        loaded = await client.call_tool("load_tools", {"tools": [{"server": "weather", "tool": "get_alerts"}]})
        assert structured(loaded)["loaded"][0]["name"] == "weather__get_alerts"
        after = {t.name: t for t in (await client.list_tools()).tools}
        alerts = after["weather__get_alerts"]
        assert meta(alerts)[SEARCH_HINT] and ALWAYS_LOAD not in meta(alerts)
        assert list(after)[-1] == "weather__get_alerts"  # loaded ones after the eager ones


def same_but_name_and_meta(given: types.Tool, seen: types.Tool) -> None:
    """Every field of the upstream's tool reached the client as it was, its `_meta` keys too."""
    for field in types.Tool.model_fields:
        if field not in ("name", "meta"):
            assert getattr(seen, field) == getattr(given, field), field
    for key, value in (given.meta or {}).items():
        assert meta(seen)[key] == value, key


@pytest.mark.parametrize("era", ERAS)
async def test_an_upstream_tools_meta_annotations_title_schemas_and_icons_reach_the_client_unchanged(era: str) -> None:
    async with gateway_of(specs()) as gateway:
        passthrough = {t.name: t for t in await listed(gateway, "passthrough", era)}
        for upstream in WEATHER:
            same_but_name_and_meta(upstream, passthrough[f"weather__{upstream.name}"])
        seen = passthrough["weather__get_forecast"]
        assert seen.annotations is not None and seen.annotations.title == "Weather forecast"
        assert seen.icons is not None and seen.icons[0].sizes == ["48x48"]
        assert seen.output_schema == RICH.output_schema

        async with Client(build_server(gateway, "dynamic"), mode="legacy") as client:
            await client.call_tool("load_tools", {"tools": [{"server": "weather", "tool": "get_forecast"}]})
            loaded = {t.name: t for t in (await client.list_tools()).tools}["weather__get_forecast"]
        same_but_name_and_meta(RICH, loaded)


def names_of(tools: Sequence[types.Tool]) -> list[str]:
    return [t.name for t in tools]


async def test_a_change_to_one_server_leaves_the_list_before_it_byte_identical() -> None:
    plain = FILES[:2]  # (not pin_board, which marks itself eager)
    async with gateway_of(specs(board="eager")) as gateway:
        gateway.catalog.set_server_tools("files", plain)
        before = await listed(gateway, "passthrough")
        # The eager board first, then the deferred tools: servers in configuration order, tools by name.
        assert names_of(before) == [
            "board__pin_board",
            "weather__get_alerts",
            "weather__get_forecast",
            "files__delete_file",
            "files__read_file",
        ]
        changes: list[list[types.Tool]] = [
            [*plain, tool("append_file", "Append to a file.")],  # a tool added (first by name)
            plain[1:],  # one removed
            list(reversed(plain)),  # the same tools listed in another order: no change at all
        ]
        after = before
        for files in changes:
            gateway.catalog.set_server_tools("files", files)
            after = await listed(gateway, "passthrough")
            start = next(i for i, t in enumerate(after) if t.name.startswith("files__"))
            assert start == 3
            assert tool_definitions_json(after[:start]) == tool_definitions_json(before[:start])
        assert tool_definitions_json(after) == tool_definitions_json(before)


async def test_the_order_is_the_same_whatever_order_the_upstream_lists_in() -> None:
    async with gateway_of(specs()) as gateway:
        first = tool_definitions_json(await listed(gateway, "passthrough"))
        gateway.catalog.set_server_tools("weather", list(reversed(WEATHER)))
        assert tool_definitions_json(await listed(gateway, "passthrough")) == first


def test_a_search_hint_is_bounded_deterministic_and_made_of_what_the_search_knows() -> None:
    entry = CatalogTool("notes", tool("create_note", "Create a note with a title and body."), True, ("journal",))
    hint = search_hint(entry)
    assert hint == search_hint(entry)
    # Its name's words, the other verbs of `create` the search knows, its tag, then its summary.
    assert hint.startswith("create note journal add new make insert register")
    assert hint.endswith(": Create a note with a title and body")
    long = CatalogTool("s", tool("do_" + "thing_" * 40, "Word " * 200), True, ())
    assert len(search_hint(long)) <= HINT_LIMIT


@pytest.mark.parametrize("mode", ["discovery", "dynamic", "smart", "compact"])
async def test_the_tool_that_runs_others_is_annotated_as_the_riskiest_tool_its_scope_reaches(mode: ModeName) -> None:
    runner = {"discovery": "execute_tool", "dynamic": "execute_tool", "smart": "smart_tool_discovery"}.get(mode, "exec")
    async with gateway_of(specs()) as gateway:

        async def annotations() -> types.ToolAnnotations:
            tools = {t.name: t for t in await listed(gateway, mode)}
            found = tools[runner].annotations
            assert found is not None
            return found

        with scoped(Scope.of(servers=["weather"])):
            reading = await annotations()
        assert reading.read_only_hint is True and reading.destructive_hint is False
        assert reading.idempotent_hint is False  # get_alerts does not say it is
        with scoped(Scope.of(servers=["files"], tools=["read_file"])):
            assert (await annotations()).read_only_hint is True
        writing = await annotations()  # unscoped: delete_file is within reach
        assert writing.read_only_hint is False and writing.destructive_hint is True
        with scoped(Scope.of(servers=["files"])):
            assert (await annotations()).destructive_hint is True


YAML = """\
mcpServers:
  weather: {command: weather-server, load: eager}
  files: {command: files-server}
toolRules:
  - {pattern: "delete_*", server: weather, load: deferred}
"""


def test_load_is_read_from_server_entries_and_tool_rules_and_a_wrong_value_says_what_to_write() -> None:
    config = parse_config(YAML, "yaml", "toolscout.yaml")
    weather = UpstreamSpec.from_config("weather", config.mcp_servers["weather"])
    files = UpstreamSpec.from_config("files", config.mcp_servers["files"])
    assert (weather.load, files.load) == ("eager", None)  # unset: an upstream's own alwaysLoad may stand
    assert config.mcp_servers["files"].load == "deferred"
    rules = RuleSet(config.tool_rules)
    assert rules.verdict("weather", "delete_city").load == "deferred"
    assert rules.verdict("files", "delete_file").load is None
    with pytest.raises(ConfigurationError) as raised:
        parse_config(YAML.replace("load: eager", "load: always"), "yaml", "toolscout.yaml")
    assert "load" in raised.value.message and "'eager'" in raised.value.message


async def test_a_pinned_tool_carries_the_hints_and_keeps_its_upstreams_meta() -> None:
    async with gateway_of(specs(weather="eager")) as gateway:
        with scoped(Scope.of(pinned_tools=["weather/get_forecast", "files/read_file"])):
            tools = {t.name: t for t in await listed(gateway, "discovery")}
        forecast, read = tools["weather__get_forecast"], tools["files__read_file"]
        same_but_name_and_meta(RICH, forecast)
        assert meta(forecast)[ALWAYS_LOAD] is True
        assert meta(read)[SEARCH_HINT].startswith("read file") and ALWAYS_LOAD not in meta(read)
