"""An upstream's tool list changes: the gateway refreshes it, and clients whose list follows it are told.

In process (one connection per client, both eras) and over streamable HTTP (the handshake era's
standalone GET stream; at 2026-07-28 a `subscriptions/listen` stream).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.helpers.gateway_client import ERAS, notes_server
from tests.helpers.http_gateway import http_gateway
from tests.helpers.list_changes import ListWatcher, watched_client
from tests.servers.kitchen import Kitchen
from toolscout.config.models import ModeName
from toolscout.gateway.core import Gateway
from toolscout.modes.base import SurfaceOptions
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio

LEARN: dict[str, Any] = {"server": "kitchen", "tool": "learn_trick", "arguments": {"name": "juggle"}}


@asynccontextmanager
async def kitchen_gateway() -> AsyncGenerator[Gateway]:
    async with Gateway([UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server))]) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        yield gateway


async def learn_a_trick(client: Client, mode: ModeName) -> None:
    """Make the upstream add a tool (it announces its own list_changed), through the mode's surface."""
    if mode == "compact":
        args = {"server_name": "kitchen", "tool_name": "learn_trick", "arguments": LEARN["arguments"]}
        result = await client.call_tool("exec", args)
    elif mode == "passthrough":  # in front of one server, its tools keep their own names
        result = await client.call_tool("learn_trick", LEARN["arguments"])
    else:
        result = await client.call_tool("execute_tool", LEARN)
    assert not result.is_error, result


async def sees_juggle(client: Client, mode: ModeName) -> bool:
    listed = (await client.list_tools()).tools
    if mode == "compact":
        return "    - juggle: A new trick." in (listed[0].description or "")
    return ("juggle" if mode == "passthrough" else "kitchen__juggle") in {t.name for t in listed}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("mode", ["compact", "passthrough"])
async def test_clients_are_told_when_an_upstream_changes_its_tools(mode: ModeName, era: str) -> None:
    watcher = ListWatcher()
    async with kitchen_gateway() as gateway, watched_client(build_server(gateway, mode), era, watcher) as client:
        capability = client.server_capabilities.tools
        assert capability is not None and capability.list_changed is True
        assert not await sees_juggle(client, mode)  # a client that has listed is a client to tell
        await learn_a_trick(client, mode)
        await watcher.wait_for(1)
        assert await sees_juggle(client, mode)


async def test_dynamic_clients_are_told_only_when_their_loaded_tools_change() -> None:
    watcher = ListWatcher()
    async with (
        kitchen_gateway() as gateway,
        watched_client(build_server(gateway, "dynamic"), "legacy", watcher) as client,
    ):
        await client.call_tool("load_tools", {"tools": [{"server": "kitchen", "tool": "get_weather"}]})
        await watcher.wait_for(1)
        await client.list_tools()
        await client.call_tool("execute_tool", LEARN)  # a new tool, but not one this client loaded
        gateway.catalog.set_server_tools("kitchen", [])  # its loaded tool is gone: that is news
        await watcher.wait_for(2)
        assert watcher.count == 2


async def test_discovery_mode_does_not_announce_changes() -> None:
    async with kitchen_gateway() as gateway, Client(build_server(gateway), mode="legacy") as client:
        capability = client.server_capabilities.tools
        assert capability is not None and not capability.list_changed


@pytest.mark.parametrize("era", ERAS)
async def test_over_http_too(era: str) -> None:
    watcher = ListWatcher()
    async with (
        kitchen_gateway() as gateway,
        http_gateway(gateway, mode="passthrough") as url,
        watched_client(url, era, watcher) as client,
    ):
        await client.list_tools()
        await learn_a_trick(client, "passthrough")
        await watcher.wait_for(1)
        assert await sees_juggle(client, "passthrough")


@pytest.mark.parametrize("era", ERAS)
async def test_a_namesake_arriving_later_renames_both_tools_and_clients_are_told(era: str) -> None:
    """`toolNames: bare-when-unique`: a tool keeps its own name until another server brings one of the
    same name; then both are `server__tool`, every client is told its list changed, and the bare name
    answers with the names to call instead."""
    watcher = ListWatcher()
    specs = [
        UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server)),
        UpstreamSpec("notes", InProcessUpstream(notes_server())),
    ]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        server = build_server(gateway, "passthrough", SurfaceOptions(tool_names="bare-when-unique"))
        async with watched_client(server, era, watcher) as client:
            assert "create_note" in {t.name for t in (await client.list_tools()).tools}
            # The kitchen learns a trick called create_note: now two servers have that name.
            learned = await client.call_tool("learn_trick", {"name": "create_note"})
            assert not learned.is_error, learned
            await watcher.wait_for(1)
            listed = {t.name for t in (await client.list_tools()).tools}
            assert {"kitchen__create_note", "notes__create_note"} <= listed and "create_note" not in listed
            stale = await client.call_tool("create_note", {"title": "x"})
            assert stale.is_error and "notes__create_note" in str(stale.structured_content)
            assert "noted" in str((await client.call_tool("notes__create_note", {"title": "x"})).content)
