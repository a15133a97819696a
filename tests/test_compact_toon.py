"""Compact mode's answers as the MCPX design writes them: TOON in `content` for the model, the raw data in
`structuredContent`, schemas as TypeScript signatures in `inspect`'s text, multimodal content passed through.

Real parts throughout: an SDK client on the gateway's MCP face, over the bundled demo servers run as stdio
children (`python -m toolscout.demo.units`, `notes`), `@modelcontextprotocol/server-everything` (pretty
JSON, images, embedded resources) and a small in-process server for the edge cases. What a result costs
is counted with o200k_base, as `toolscout tokens` counts it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
import toon_format
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.server import Server

from tests.helpers.gateway_client import ERAS, structured, text
from tests.helpers.http_gateway import http_gateway
from tests.helpers.paths import PYTHON, node_path, npm_tool
from toolscout.config import GatewayConfig
from toolscout.config.loader import parse_config
from toolscout.demo import units
from toolscout.errors import ConfigurationError
from toolscout.gateway.core import Gateway
from toolscout.modes.base import SurfaceOptions
from toolscout.render.signatures import signature
from toolscout.render.text import compact_json, count_tokens, model_text
from toolscout.search import SearchBackend, make_backend
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio

DEMO_SERVERS = {
    "units": {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]},
    "notes": {"command": PYTHON, "args": ["-m", "toolscout.demo.notes"]},
}


def words_only() -> SearchBackend:
    """A lexical index: compact mode never searches, and the default one loads its embedder in a worker
    thread, where numpy parses the vectors' header with `ast`, which Python 3.11 does not make safe
    beside the `ast.parse` of tests/test_architecture.py in the main thread."""
    return make_backend("bm25")


@asynccontextmanager
async def gateway_of(config: Mapping[str, Any]) -> AsyncGenerator[tuple[Gateway, GatewayConfig]]:
    """A gateway built from `config` as `toolscout serve` builds it, every server connected."""
    parsed = GatewayConfig.model_validate({"search": {"backend": "bm25"}, **config})
    async with Gateway.from_config(parsed) as gateway:
        with anyio.fail_after(60):
            await gateway.settle()
        yield gateway, parsed


@asynccontextmanager
async def faces(gateway: Gateway, config: GatewayConfig, era: str = "legacy") -> AsyncGenerator[tuple[Client, Client]]:
    """A client of compact mode and one of discovery mode, whose `execute_tool` passes results as they came."""
    options = SurfaceOptions.from_config(config)
    async with (
        Client(build_server(gateway, "compact", options), mode=era) as compact,
        Client(build_server(gateway, "discovery", options), mode=era) as discovery,
    ):
        yield compact, discovery


def without_schemas(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in ("input_schema", "output_schema")}


# inspect


@pytest.mark.parametrize("era", ERAS)
async def test_inspect_writes_schemas_as_typescript_in_toon_and_keeps_them_raw_in_structured_content(
    era: str,
) -> None:
    async with (
        gateway_of({"mcpServers": DEMO_SERVERS}) as (gateway, config),
        faces(gateway, config, era) as (client, _),
    ):
        one = await client.call_tool("inspect", {"server_name": "units", "tool_name": "convert_units"})
        raw = structured(one)
        assert raw["input_schema"] == (await gateway.tool("units", "convert_units")).input_schema
        shown = cast(dict[str, Any], toon_format.decode(text(one)))
        assert shown["input_schema"] == signature(raw["input_schema"])
        assert shown["input_schema"].startswith("{value: number")
        assert shown["output_schema"] == signature(raw["output_schema"])
        assert without_schemas(shown) == without_schemas(raw)
        # Before, the text was compact JSON whenever TOON was not shorter, which it never is for a schema.
        assert count_tokens(text(one)) < count_tokens(model_text(raw))

        every = await client.call_tool("inspect", {"server_name": "notes"})
        raw_tools = structured(every)["tools"]
        shown_tools = cast(dict[str, Any], toon_format.decode(text(every)))["tools"]
        assert [t["name"] for t in shown_tools] == [t["name"] for t in raw_tools]
        assert [t["input_schema"] for t in shown_tools] == [signature(t["input_schema"]) for t in raw_tools]
        assert all(isinstance(t["input_schema"], dict) for t in raw_tools)
        assert count_tokens(text(every)) < count_tokens(model_text(structured(every)))


@pytest.mark.parametrize(
    "settings",
    [
        {"schema_compression_enabled": False},  # the spelling of the MCPX config
        {"schemaCompressionEnabled": False},
    ],
)
async def test_inspect_without_schema_compression_writes_the_raw_data_as_toon(settings: dict[str, Any]) -> None:
    config: dict[str, Any] = {"mcpServers": {}, **settings}
    specs = [UpstreamSpec("units", InProcessUpstream(units.build_server()))]
    async with Gateway(specs, search_factory=words_only) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        options = SurfaceOptions.from_config(GatewayConfig.model_validate(config))
        async with Client(build_server(gateway, "compact", options), mode="legacy") as client:
            one = await client.call_tool("inspect", {"server_name": "units", "tool_name": "convert_units"})
            assert toon_format.decode(text(one)) == structured(one)
            assert text(one) == toon_format.encode(structured(one))


@pytest.mark.parametrize(
    ("settings", "limit"),
    [({"max_description_len": 0}, 0), ({"maxDescriptionLen": 12}, 12), ({}, 60)],
)
async def test_max_description_len_cuts_the_descriptions_in_inspects_signatures(
    settings: dict[str, Any], limit: int
) -> None:
    specs = [UpstreamSpec("units", InProcessUpstream(units.build_server()))]
    async with Gateway(specs, search_factory=words_only) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        options = SurfaceOptions.from_config(GatewayConfig.model_validate({"mcpServers": {}, **settings}))
        async with Client(build_server(gateway, "compact", options), mode="legacy") as client:
            one = await client.call_tool("inspect", {"server_name": "units", "tool_name": "convert_units"})
            shown = cast(dict[str, Any], toon_format.decode(text(one)))["input_schema"]
            assert shown == signature(structured(one)["input_schema"], max_description_len=limit)
            comments = [part.split("*/")[0].strip() for part in shown.split("/*")[1:]]
            assert bool(comments) == (limit > 0), shown
            assert all(len(comment) <= limit for comment in comments), comments
            if limit == 12:
                assert any(comment.endswith("...") for comment in comments), comments


async def test_compact_answers_alike_over_streamable_http_and_in_memory() -> None:
    specs = [UpstreamSpec("units", InProcessUpstream(units.build_server()))]
    async with Gateway(specs, search_factory=words_only) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        calls: list[tuple[str, dict[str, Any]]] = [
            ("inspect", {"server_name": "units", "tool_name": "convert_units"}),
            ("exec", {"server_name": "units", "tool_name": "list_units"}),
        ]
        async with (
            http_gateway(gateway, mode="compact") as url,
            Client(url, mode="legacy") as remote,
            Client(build_server(gateway, "compact"), mode="legacy") as local,
        ):
            for name, arguments in calls:
                over_http = await remote.call_tool(name, arguments)
                in_memory = await local.call_tool(name, arguments)
                assert over_http.content == in_memory.content, name
                assert over_http.structured_content == in_memory.structured_content, name
            listed = await remote.call_tool("exec", {"server_name": "units", "tool_name": "list_units"})
            assert toon_format.decode(text(listed)) == listed.structured_content
            assert text(listed).startswith("dimensions[")


async def test_toolscout_serve_reads_the_compact_settings_from_its_config_file(tmp_path: Path) -> None:
    """`toolscout serve` as a client starts it, with the settings in MCPX's spelling in its JSON file."""
    config = tmp_path / "toolscout.json"
    settings: dict[str, Any] = {"mode": "compact", "schema_compression_enabled": True, "max_description_len": 0}
    config.write_text(
        json.dumps({"mcpServers": {"units": DEMO_SERVERS["units"]}, **settings, "compactFormat": "smallest"})
    )
    serve = StdioServerParameters(command=PYTHON, args=["-m", "toolscout", "serve", "--config", str(config)])
    with (tmp_path / "gateway.log").open("w") as errlog:
        async with Client(stdio_client(serve, errlog=errlog), mode="legacy") as client:
            with anyio.fail_after(60):
                one = await client.call_tool("inspect", {"server_name": "units", "tool_name": "convert_units"})
                listed = await client.call_tool("exec", {"server_name": "units", "tool_name": "list_units"})
    # smallest: TOON or compact JSON, whichever is fewer tokens; the schema is TypeScript in either.
    written = text(one)
    shown = cast(dict[str, Any], json.loads(written) if written.startswith("{") else toon_format.decode(written))
    assert shown["input_schema"] == signature(structured(one)["input_schema"], max_description_len=0)
    assert "/*" not in shown["input_schema"]
    # smallest: units nested in dimensions are fewer tokens as compact JSON than as TOON.
    assert text(listed) == compact_json(listed.structured_content)


def test_the_settings_read_in_either_spelling_with_their_defaults() -> None:
    default = SurfaceOptions.from_config(GatewayConfig())
    assert (default.schema_compression_enabled, default.max_description_len) == (True, 60)
    for data in (
        {"schema_compression_enabled": False, "max_description_len": 20},
        {"schemaCompressionEnabled": False, "maxDescriptionLen": 20},
    ):
        options = SurfaceOptions.from_config(GatewayConfig.model_validate(data))
        assert (options.schema_compression_enabled, options.max_description_len) == (False, 20)


async def test_compact_format_smallest_writes_toon_or_compact_json_whichever_is_fewer_tokens() -> None:
    specs = [UpstreamSpec("units", InProcessUpstream(units.build_server()))]
    async with Gateway(specs, search_factory=words_only) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        configs = {form: GatewayConfig.model_validate({"compactFormat": form}) for form in ("toon", "smallest")}
        servers = {form: build_server(gateway, "compact", SurfaceOptions.from_config(c)) for form, c in configs.items()}
        async with (
            Client(servers["toon"], mode="legacy") as toon,
            Client(servers["smallest"], mode="legacy") as smallest,
        ):
            written: dict[str, str] = {}
            for tool, arguments in [
                ("list_units", {}),
                ("convert_units", {"value": 3, "from_unit": "km", "to_unit": "mi"}),
            ]:
                request = {"server_name": "units", "tool_name": tool, "arguments": arguments}
                as_toon, chosen = await toon.call_tool("exec", request), await smallest.call_tool("exec", request)
                assert as_toon.structured_content == chosen.structured_content
                as_json = compact_json(chosen.structured_content)
                assert text(as_toon) == toon_format.encode(chosen.structured_content)
                assert count_tokens(text(chosen)) == min(count_tokens(text(as_toon)), count_tokens(as_json))
                written[tool] = text(chosen)
            # Units nested in dimensions, with lists of aliases: compact JSON is the shorter. A flat object: TOON.
            assert (
                json.loads(written["list_units"])
                == (await gateway.execute("units", "list_units", {})).structured_content
            )
            assert written["convert_units"].startswith("value: 3")

            one = {"server_name": "units", "tool_name": "convert_units"}
            schema_toon, schema_smallest = (
                await toon.call_tool("inspect", one),
                await smallest.call_tool("inspect", one),
            )
            shown = cast(dict[str, Any], toon_format.decode(text(schema_toon)))
            assert count_tokens(text(schema_smallest)) == min(
                count_tokens(text(schema_toon)), count_tokens(compact_json(shown))
            )


def test_a_bad_setting_is_a_clear_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match=r"compactFormat.*'toon' or 'smallest'"):
        parse_config('{"mcpServers": {}, "compactFormat": "json"}', "json", "toolscout.json")
    with pytest.raises(ConfigurationError, match=r"max_?[dD]escription_?[lL]en.*greater than or equal to 0"):
        parse_config('{"mcpServers": {}, "max_description_len": -1}', "json", "toolscout.json")
    with pytest.raises(ConfigurationError, match="did you mean 'schemaCompressionEnabled'"):
        parse_config('{"mcpServers": {}, "schemaCompresionEnabled": false}', "json", "toolscout.json")


# exec


@pytest.mark.parametrize("era", ERAS)
async def test_exec_writes_a_json_result_as_toon_with_the_raw_value_in_structured_content(era: str) -> None:
    async with gateway_of({"mcpServers": DEMO_SERVERS}) as (gateway, config), faces(gateway, config, era) as faced:
        compact, discovery = faced
        for server, tool, arguments in [
            ("units", "list_units", {}),
            ("units", "convert_units", {"value": 3, "from_unit": "km", "to_unit": "mi"}),
            ("notes", "list_notes", {}),
        ]:
            ran = await compact.call_tool("exec", {"server_name": server, "tool_name": tool, "arguments": arguments})
            passed = await discovery.call_tool("execute_tool", {"server": server, "tool": tool, "arguments": arguments})
            assert not ran.is_error and not passed.is_error, (text(ran), text(passed))
            upstream_text = text(passed)
            assert upstream_text.startswith("{\n  ")  # the server's own pretty JSON
            assert ran.structured_content == passed.structured_content == json.loads(upstream_text)
            assert toon_format.decode(text(ran)) == ran.structured_content
            assert count_tokens(text(ran)) < count_tokens(upstream_text), tool


@asynccontextmanager
async def everything() -> AsyncGenerator[tuple[Client, Client]]:
    server = {"command": str(npm_tool("mcp-server-everything")), "args": ["stdio"], "env": {"PATH": node_path()}}
    async with gateway_of({"mcpServers": {"everything": server}}) as (gateway, config), faces(gateway, config) as pair:
        yield pair


async def test_exec_compresses_server_everythings_pretty_json_and_passes_its_images_and_resources() -> None:
    async with everything() as (compact, discovery):

        async def both(tool: str, arguments: dict[str, Any]) -> tuple[types.CallToolResult, types.CallToolResult]:
            ran = await compact.call_tool(
                "exec", {"server_name": "everything", "tool_name": tool, "arguments": arguments}
            )
            passed = await discovery.call_tool(
                "execute_tool", {"server": "everything", "tool": tool, "arguments": arguments}
            )
            assert not ran.is_error and not passed.is_error, (text(ran), text(passed))
            return ran, passed

        # Pretty JSON and no structuredContent: the value becomes structuredContent, the text TOON.
        ran, passed = await both("get-env", {})
        assert passed.structured_content is None and text(passed).startswith("{\n  ")
        assert ran.structured_content == json.loads(text(passed))
        assert toon_format.decode(text(ran)) == ran.structured_content
        assert count_tokens(text(ran)) < count_tokens(text(passed))

        # The server's own structuredContent stays as it sent it.
        ran, passed = await both("get-structured-content", {"location": "Chicago"})
        assert passed.structured_content is not None
        assert ran.structured_content == passed.structured_content
        assert toon_format.decode(text(ran)) == passed.structured_content

        # Multimodal passthrough: images, embedded resources, resource links and plain text as they came.
        for tool, arguments, kind in [
            ("get-tiny-image", {}, types.ImageContent),
            ("get-resource-reference", {"resourceType": "Text", "resourceId": 1}, types.EmbeddedResource),
            ("get-resource-links", {"count": 2}, types.ResourceLink),
            ("echo", {"message": '{"not": "compressed" - plain text'}, types.TextContent),
        ]:
            ran, passed = await both(tool, arguments)
            assert any(isinstance(block, kind) for block in ran.content), tool
            assert unstamped(ran.content) == unstamped(passed.content), tool
            assert ran.structured_content is None, tool
        ran, _ = await both("get-resource-reference", {"resourceType": "Text", "resourceId": 1})
        [embedded] = [block.resource for block in ran.content if isinstance(block, types.EmbeddedResource)]
        assert isinstance(embedded, types.TextResourceContents)
        assert embedded.text.startswith("Resource 1: This is a plaintext resource created at ")


def unstamped(blocks: list[types.ContentBlock]) -> list[dict[str, Any]]:
    """The blocks as JSON, an embedded resource's text left out: server-everything writes the time of
    each call into it, so that two calls a second apart differ there and only there."""
    return [
        block.model_dump(mode="json", exclude={"resource": {"text"}})
        if isinstance(block, types.EmbeddedResource)
        else block.model_dump(mode="json")
        for block in blocks
    ]


MANY = [{"id": n, "item": f"item {n}"} for n in range(4000)]

TINY_WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="
"""A WAV header with no samples, base64."""


def ledger_server() -> Server[Any]:
    """Results of every shape compact mode must handle, none of them structured by the server."""
    rows = [{"id": n, "item": f"item {n}", "price": n * 1.5} for n in range(1, 9)]
    answers = {
        "rows": [types.TextContent(text=json.dumps(rows, indent=2))],
        "two_blocks": [types.TextContent(text=json.dumps(rows[:2])), types.TextContent(text=json.dumps({"total": 2}))],
        "not_a_number": [types.TextContent(text='{"value": NaN}')],
        "scalar": [types.TextContent(text="42")],
        "empty": [types.TextContent(text="{}")],
        "many": [types.TextContent(text=json.dumps(MANY, indent=2))],
        "wide": [types.TextContent(text=json.dumps(MANY, indent=8))],
        "voice": [
            types.AudioContent(data=TINY_WAV, mime_type="audio/wav"),
            types.TextContent(text=json.dumps({"seconds": 0.1, "voice": "alto"}, indent=2)),
        ],
    }

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tools = [*answers, "refuse"]
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, description=f"Answer {name}.", input_schema={"type": "object"}) for name in tools
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == "refuse":
            error = json.dumps({"error": "quota exceeded", "retry_after": 30}, indent=2)
            return types.CallToolResult(content=[types.TextContent(text=error)], is_error=True)
        return types.CallToolResult(content=list(answers[params.name]))

    return Server("ledger", on_list_tools=list_tools, on_call_tool=call_tool)


async def test_exec_handles_arrays_several_blocks_errors_and_text_that_is_not_json() -> None:
    specs = [UpstreamSpec("ledger", InProcessUpstream(ledger_server()))]
    async with Gateway(specs, search_factory=words_only) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        async with Client(build_server(gateway, "compact"), mode="legacy") as client:

            async def run(tool: str, **extra: Any) -> types.CallToolResult:
                return await client.call_tool("exec", {"server_name": "ledger", "tool_name": tool, **extra})

            rows = await run("rows")
            # An array is not an object: structuredContent wraps it as servers wrap a list they return.
            assert rows.structured_content is not None
            listed = rows.structured_content["result"]
            assert len(listed) == 8 and listed[0] == {"id": 1, "item": "item 1", "price": 1.5}
            assert text(rows).startswith("[8]{id,item,price}:")
            assert toon_format.decode(text(rows)) == listed

            # Each JSON block is TOON; with several, none of them alone is the result's structuredContent.
            two = await run("two_blocks")
            texts = [block.text for block in two.content if isinstance(block, types.TextContent)]
            assert [toon_format.decode(t) for t in texts] == [listed[:2], {"total": 2}]
            assert two.structured_content is None

            # Audio passes as it came; the JSON beside it is TOON, and its value the structuredContent.
            voice = await run("voice")
            audio, said = voice.content
            assert isinstance(audio, types.AudioContent) and (audio.data, audio.mime_type) == (TINY_WAV, "audio/wav")
            assert isinstance(said, types.TextContent) and said.text == "seconds: 0.1\nvoice: alto"
            assert voice.structured_content == {"seconds": 0.1, "voice": "alto"}

            # A failed result keeps the server's own error text, as it sent it.
            refused = await run("refuse")
            assert refused.is_error and text(refused).startswith('{\n  "error": "quota exceeded"')

            # Not JSON (NaN), a lone scalar: passed as is. An empty object stays readable.
            assert text(await run("not_a_number")) == '{"value": NaN}'
            assert text(await run("scalar")) == "42"
            empty = await run("empty")
            assert text(empty) == "{}" and empty.structured_content == {}

            # A long result (parsed and written in a worker thread) comes out the same way.
            many = await run("many")
            assert text(many).startswith("[4000]{id,item}:\n  0,item 0\n")
            assert many.structured_content is not None and len(many.structured_content["result"]) == 4000

            # max_output_chars counts what the model reads: the TOON, cut with a notice; the raw value stays whole.
            cut = await run("rows", max_output_chars=40)
            blocks = [block.text for block in cut.content if isinstance(block, types.TextContent)]
            assert blocks[0] == text(rows)[:40]
            assert "output cut to 40 of" in blocks[-1]
            assert cut.structured_content == rows.structured_content


async def test_the_size_limit_measures_the_compressed_result_not_the_servers_pretty_json() -> None:
    """maxResultBytes counts what the client receives: TOON and the raw value, not the server's indented text."""
    limit = 200_000
    specs = [UpstreamSpec("ledger", InProcessUpstream(ledger_server()))]
    async with Gateway(specs, max_result_bytes=limit, search_factory=words_only) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        async with (
            Client(build_server(gateway, "compact"), mode="legacy") as compact,
            Client(build_server(gateway, "discovery"), mode="legacy") as discovery,
        ):
            request = {"server_name": "ledger", "tool_name": "wide"}
            wide = await compact.call_tool("exec", request)
            passed = await discovery.call_tool("execute_tool", {"server": "ledger", "tool": "wide"})
    # As the server sent it the result is over the limit, and cut to fit with a notice.
    assert len(json.dumps(MANY, indent=8)) > limit
    assert "result cut to fit 200000 bytes" in text(passed)
    # Compressed first, it fits whole.
    assert len(wide.model_dump_json(by_alias=True, exclude_none=True)) <= limit
    assert "cut" not in text(wide)
    assert wide.structured_content == {"result": MANY}
    assert toon_format.decode(text(wide)) == MANY
