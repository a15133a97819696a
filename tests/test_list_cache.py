"""`cache`: a server's tool list answers list_mcp_servers and list_tools for `ttl` seconds, and is
listed again once older (or every time with the cache off), for a server that changes its tools
without saying so; an in-process upstream over the SDK's memory transport, an SDK client in front."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.server import Server

from tests.helpers.gateway_client import structured
from toolscout.config.loader import parse_config
from toolscout.config.models import ListCacheConfig
from toolscout.gateway.core import Gateway
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio


class Quiet:
    """A server whose tools change without a `tools/list_changed` notice (it declares none)."""

    def __init__(self) -> None:
        self.offered = ["first_tool"]
        self.listings = 0

        async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            self.listings += 1
            schema: dict[str, Any] = {"type": "object", "properties": {}}
            return types.ListToolsResult(
                tools=[types.Tool(name=name, description=f"The {name}.", input_schema=schema) for name in self.offered]
            )

        self.server = Server("quiet", on_list_tools=list_tools)


async def listed(client: Client) -> tuple[list[str], int]:
    """list_tools' names and list_mcp_servers' tool count for the quiet server."""
    tools = structured(await client.call_tool("list_tools", {"server": "quiet"}))["tools"]
    [server] = structured(await client.call_tool("list_mcp_servers", {}))["servers"]
    return [t["name"] for t in tools], server["toolCount"]


async def test_a_list_within_its_ttl_answers_and_an_expired_one_is_listed_again() -> None:
    quiet = Quiet()
    async with Gateway([UpstreamSpec("quiet", InProcessUpstream(quiet.server))]) as gateway:
        with anyio.fail_after(30):
            await gateway.settle()
            async with Client(build_server(gateway)) as client:
                gateway.list_cache = ListCacheConfig(ttl=3600)
                assert await listed(client) == (["first_tool"], 1)
                quiet.offered.append("second_tool")
                before = quiet.listings
                assert await listed(client) == (["first_tool"], 1)  # within the hour: as listed
                assert quiet.listings == before

                gateway.list_cache = ListCacheConfig(ttl=1e-9)  # any list is older than that by now
                assert await listed(client) == (["first_tool", "second_tool"], 2)
                assert quiet.listings > before

                quiet.offered.remove("first_tool")
                gateway.list_cache = ListCacheConfig(enabled=False)
                assert await listed(client) == (["second_tool"], 1)


async def test_the_cache_section_reaches_the_gateway() -> None:
    text = json.dumps(
        {"discovery": {"cache": {"enabled": False, "ttl": 60}}, "catalogCache": False, "audit": {"enabled": False}}
    )
    gateway = Gateway.from_config(parse_config(text, "json", "toolscout.json"))
    assert (gateway.list_cache.enabled, gateway.list_cache.ttl) == (False, 60)
