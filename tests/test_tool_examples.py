"""`get_tool_details` gives `examples`: arguments made from the input schema with values that look like
real ones (the schema's own hints, the description's example, the format, the property's name), each
valid against the schema; `toolscout inspect --examples` prints the same.

Over MCP: an SDK client -> the gateway's MCP face -> the bundled demo servers and the kitchen-sink
server over the in-memory transport.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import jsonschema
import pytest
from mcp import Client

from tests.helpers.gateway_client import ERAS, connected, structured, text
from toolscout.demo import files, notes, units
from toolscout.demo import text as text_server
from toolscout.gateway.core import Gateway
from toolscout.render.examples import example_arguments, tool_examples
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in cast(dict[str, Any], value).values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in cast(list[Any], value) for s in strings(v)]
    return []


@asynccontextmanager
async def demo_client() -> AsyncGenerator[Client]:
    demos = {"units": units, "notes": notes, "text": text_server, "files": files}
    specs = [UpstreamSpec(name, InProcessUpstream(module.build_server())) for name, module in demos.items()]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        async with Client(build_server(gateway)) as client:
            yield client


async def test_every_demo_tool_gets_valid_examples_without_placeholders() -> None:
    async with demo_client() as client:
        servers = structured(await client.call_tool("list_mcp_servers", {}))["servers"]
        seen = several = 0
        for server in servers:
            listed = structured(await client.call_tool("list_tools", {"server": server["name"]}))["tools"]
            for tool in listed:
                result = await client.call_tool("get_tool_details", {"server": server["name"], "tool": tool["name"]})
                details = structured(result)
                examples = details["examples"]
                assert examples, tool["name"]
                # All of them in the structured answer, one in the text (each costs tokens on every lookup).
                assert text(result).count("\nExample (") == (1 if any(e["arguments"] for e in examples) else 0)
                several += len(examples) > 1
                for example in examples:
                    jsonschema.validate(example["arguments"], details["inputSchema"])
                    assert not [s for s in strings(example["arguments"]) if s.startswith("<")], example
                seen += 1
        assert seen >= 15 and several >= 2


@pytest.mark.parametrize("era", ERAS)
async def test_examples_use_the_descriptions_own_values_and_run(era: str) -> None:
    async with connected(era) as (client, kitchen):
        result = await client.call_tool("get_tool_details", {"server": "kitchen", "tool": "get_weather"})
        details = structured(result)
        # "City name, e.g. Paris": the description's example; `units` has a default, so it is left out.
        assert details["examples"] == [{"description": "Required arguments", "arguments": {"city": "Paris"}}]
        assert 'Example (required arguments): {"city":"Paris"}' in text(result)

        # Such an example is a call that works.
        arguments = details["examples"][0]["arguments"]
        ran = await client.call_tool(
            "execute_tool", {"server": "kitchen", "tool": "get_weather", "arguments": arguments}
        )
        assert not ran.is_error and kitchen.calls == [("get_weather", {"city": "Paris"})]


async def test_a_demo_conversion_example_converts() -> None:
    async with demo_client() as client:
        details = structured(await client.call_tool("get_tool_details", {"server": "units", "tool": "convert_units"}))
        (example,) = details["examples"]
        assert example["arguments"] == {"value": 26.2, "from_unit": "mi", "to_unit": "km"}
        ran = await client.call_tool(
            "execute_tool", {"server": "units", "tool": "convert_units", "arguments": example["arguments"]}
        )
        assert not ran.is_error and structured(ran)["result"] == pytest.approx(42.165, abs=0.01)

        # Optional parameters without a default get an example of their own.
        note = structured(await client.call_tool("get_tool_details", {"server": "notes", "tool": "update_note"}))
        required, everything = note["examples"]
        assert required == {"description": "Required arguments", "arguments": {"id": "1"}}
        assert everything["arguments"]["id"] == "1" and set(everything["arguments"]) > {"id", "title"}


def test_values_keep_to_the_schema() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "repo": {"type": "string", "pattern": "^[^/]+/[^/]+$"},
            "ticket": {"type": "string", "pattern": "^[A-Z]+-[0-9]+$", "examples": ["OPS-12"]},
            "zone": {"type": "string", "pattern": "^[A-Z][a-z]+/[A-Za-z_]+$", "description": "e.g. UTC or Europe/Oslo"},
            "when": {"type": "string", "format": "date-time"},
            "owner_email": {"type": "string"},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 5},
            "ratio": {"type": "number", "exclusiveMinimum": 1, "maximum": 2},
            "address": {"$ref": "#/$defs/Address"},
            "labels": {"type": "array", "items": {"type": "string"}},
            "widget_slot": {"type": "string"},
        },
        "required": [
            "repo",
            "ticket",
            "zone",
            "when",
            "owner_email",
            "max_results",
            "ratio",
            "address",
            "labels",
            "widget_slot",
        ],
        "$defs": {"Address": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    }
    arguments = example_arguments(schema)
    jsonschema.validate(arguments, schema)
    assert arguments["repo"] == "octocat/hello-world"
    assert arguments["ticket"] == "OPS-12"
    assert arguments["zone"] == "Europe/Paris"  # the description's "UTC" does not match the pattern
    assert arguments["when"] == "2025-01-31T09:00:00Z"
    assert arguments["owner_email"] == "ada@example.com"
    assert arguments["max_results"] == 5  # "results" reads 10: kept within the maximum
    assert 1 < arguments["ratio"] <= 2
    assert arguments["address"] == {"city": "Paris"}
    assert arguments["labels"] == ["bug"]
    assert arguments["widget_slot"] == "widget slot"  # nothing known of it: its own words, never "<widget_slot>"
    assert tool_examples({"type": "object", "properties": {}}) == [{"description": "No arguments", "arguments": {}}]
