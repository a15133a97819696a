"""`execute_tool`'s answers: the native result by default, the `{success, result}` envelope with
`executeResult: envelope`, the codes other discovery gateways give a failure (`codeAlias`), and a
`TOOL_NOT_FOUND` that names the server's tools.

End to end in one process: an SDK client -> the gateway's MCP face -> the kitchen-sink server and the
bundled units demo server over the in-memory transport.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.helpers.gateway_client import ERAS, error_of, structured, text
from tests.servers.kitchen import TINY_PNG, Kitchen
from toolscout.config import GatewayConfig, ToolRule
from toolscout.config.models import ModeName
from toolscout.config.rules import RuleSet
from toolscout.demo import units
from toolscout.errors import CallTimeout, ServerUnavailable, error_from_dict
from toolscout.gateway.core import Gateway
from toolscout.modes.base import SurfaceOptions
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def gateway_client(
    era: str, settings: dict[str, object], *, mode: ModeName = "discovery", rules: list[ToolRule] | None = None
) -> AsyncGenerator[tuple[Client, Kitchen]]:
    """A client of a gateway whose config is `settings` (over the kitchen, units and a switched-off server)."""
    kitchen = Kitchen()
    specs = [
        UpstreamSpec("kitchen", InProcessUpstream(kitchen.server), call_timeout=0.5),
        UpstreamSpec("units", InProcessUpstream(units.build_server())),
        UpstreamSpec("off", InProcessUpstream(Kitchen("off").server), disabled=True),
    ]
    options = SurfaceOptions.from_config(GatewayConfig.model_validate(settings))
    async with Gateway(specs, rules=RuleSet(rules or [])) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        server = build_server(gateway, mode, options)
        async with Client(server, mode=era) as client:
            assert client.protocol_version == ("2025-11-25" if era == "legacy" else "2026-07-28")
            yield client, kitchen


def call(server: str, tool: str, arguments: dict[str, object] | None = None) -> dict[str, object]:
    return {"server": server, "tool": tool, "arguments": arguments or {}}


@pytest.mark.parametrize("era", ERAS)
async def test_the_default_is_the_tools_own_result(era: str) -> None:
    assert GatewayConfig().execute_result == "native"
    async with gateway_client(era, {}) as (client, _):
        result = await client.call_tool("execute_tool", call("kitchen", "get_weather", {"city": "Paris"}))
        assert result.structured_content == {"city": "Paris", "celsius": 21.5}
        polite = await client.call_tool("execute_tool", call("kitchen", "fail_politely"))
        assert polite.is_error and polite.structured_content is None and text(polite) == "the oven is off"


@pytest.mark.parametrize("mode", ["discovery", "dynamic"])
@pytest.mark.parametrize("era", ERAS)
async def test_the_envelope_carries_the_result(era: str, mode: ModeName) -> None:
    async with gateway_client(era, {"executeResult": "envelope"}, mode=mode) as (client, _):
        weather = await client.call_tool("execute_tool", call("kitchen", "get_weather", {"city": "Paris"}))
        assert not weather.is_error
        assert structured(weather) == {"success": True, "result": {"city": "Paris", "celsius": 21.5}}
        assert json.loads(text(weather)) == structured(weather)  # what a client reading only text sees
        assert weather.meta is not None and weather.meta["example.com/source"] == "kitchen"

        # A real server's structured answer (the units demo's conversion).
        converted = structured(
            await client.call_tool(
                "execute_tool", call("units", "convert_units", {"value": 2, "from_unit": "km", "to_unit": "m"})
            )
        )
        assert converted["success"] is True and converted["result"]["result"] == 2000

        # Text only: the text is the result; images, audio and resources stay content blocks.
        chart = await client.call_tool("execute_tool", call("kitchen", "render_chart"))
        assert structured(chart) == {"success": True, "result": "chart attached"}
        assert [block.type for block in chart.content] == ["text", "image", "audio", "resource", "resource_link"]
        image = chart.content[1]
        assert isinstance(image, types.ImageContent) and image.data == TINY_PNG


@pytest.mark.parametrize("era", ERAS)
async def test_a_failure_the_tool_reports_is_an_envelope_too(era: str) -> None:
    async with gateway_client(era, {"executeResult": "envelope"}) as (client, kitchen):
        polite = await client.call_tool("execute_tool", call("kitchen", "fail_politely"))
        assert structured(polite)["success"] is False
        assert error_of(polite) == {
            "code": "TOOL_EXECUTION_ERROR",
            "message": "the oven is off",
            "server": "kitchen",
            "tool": "fail_politely",
        }
        assert text(polite) == "Error TOOL_EXECUTION_ERROR: the oven is off"
        assert kitchen.calls == [("fail_politely", {})]


@pytest.mark.parametrize("settings", [{}, {"executeResult": "envelope"}])
async def test_failures_carry_the_codes_other_gateways_use(settings: dict[str, object]) -> None:
    async with gateway_client("legacy", settings) as (client, kitchen):
        timeout = error_of(await client.call_tool("execute_tool", call("kitchen", "wait_forever")))
        assert (timeout["code"], timeout["codeAlias"]) == ("TIMEOUT", "TOOL_EXECUTION_TIMEOUT")

        off = error_of(await client.call_tool("execute_tool", call("off", "get_weather")))
        assert (off["code"], off["codeAlias"]) == ("SERVER_UNAVAILABLE", "SERVER_CONNECTION_ERROR")

        invalid = error_of(await client.call_tool("execute_tool", call("kitchen", "get_weather", {"city": 7})))
        assert (invalid["code"], invalid["codeAlias"]) == ("VALIDATION_ERROR", "TOOL_VALIDATION_ERROR")

        upstream = error_of(await client.call_tool("execute_tool", call("kitchen", "protocol_error")))
        assert upstream["code"] == "TOOL_EXECUTION_ERROR" and "codeAlias" not in upstream
        assert [name for name, _ in kitchen.calls] == ["wait_forever", "protocol_error"]

    # Read back on the other side of MCP (the command line), an alias names the same error.
    assert isinstance(error_from_dict({"code": "TOOL_EXECUTION_TIMEOUT", "message": "slow"}), CallTimeout)
    read = error_from_dict(off)
    assert isinstance(read, ServerUnavailable) and "codeAlias" not in read.details


@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_not_found_names_the_tools_the_server_has(era: str) -> None:
    rules = [ToolRule(pattern=["delete_*"], enabled=False), ToolRule(pattern=["learn_*"], hidden=True)]
    async with gateway_client(era, {}, rules=rules) as (client, _):
        listed = structured(await client.call_tool("list_tools", {"server": "kitchen"}))
        names = [t["name"] for t in listed["tools"]]
        assert "delete_city" not in names and "learn_trick" not in names

        result = await client.call_tool("execute_tool", call("kitchen", "bake_bread"))
        error = error_of(result)
        assert error["code"] == "TOOL_NOT_FOUND"
        # The tools a listing shows: not the disabled one, nor the hidden one.
        assert error["availableTools"] == names and error["availableToolCount"] == len(names)
        assert f"Its tools: {', '.join(names)}." in text(result)
