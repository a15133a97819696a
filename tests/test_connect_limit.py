"""Many servers connect a few at a time, in the config's order (`maxConnecting`), so the first answer early.

A thousand real SDK servers in process (the SDK's memory transport); each notes, while it lists its
tools (the last step of connecting), how many others are listing theirs at that moment. The first to
list wait there until `together` of them are listing at once: the places the gateway gives are all
taken before any is given back, and the test waits on that state, not on time.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.server.lowlevel import Server

from toolscout.config import GatewayConfig
from toolscout.config.models import DEFAULT_MAX_CONNECTING
from toolscout.gateway.core import Gateway
from toolscout.upstream import InProcessUpstream, Status, UpstreamSpec

pytestmark = pytest.mark.anyio

SERVERS = 1_000


class Listings:
    """What the servers saw: how many listed at once at most, and who listed first."""

    def __init__(self, together: int) -> None:
        self.now = 0
        self.most = 0
        self.order: list[str] = []
        self._together = together
        self._all_in = anyio.Event()

    def server(self, name: str) -> Server[Any]:
        async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
            self.now += 1
            self.most = max(self.most, self.now)
            self.order.append(name)
            if self.now >= self._together:
                self._all_in.set()
            try:
                await self._all_in.wait()
            finally:
                self.now -= 1
            tool = types.Tool(name=f"tool_of_{name}", input_schema={"type": "object"})
            return types.ListToolsResult(tools=[tool])

        return Server(name, on_list_tools=list_tools)


async def connect_all(listings: Listings, names: list[str], **options: Any) -> None:
    specs = [UpstreamSpec(name, InProcessUpstream(listings.server(name))) for name in names]
    async with Gateway(specs, **options) as gateway:
        with anyio.fail_after(300):
            await gateway.settle()
        assert all(u.status is Status.CONNECTED for u in gateway.upstreams)
        assert len(gateway.catalog.tools()) == len(names)


async def test_a_thousand_servers_connect_at_most_max_connecting_at_once_in_the_configs_order() -> None:
    names = [f"s{k:04d}" for k in range(SERVERS)]
    listings = Listings(together=DEFAULT_MAX_CONNECTING)
    await connect_all(listings, names)
    assert listings.most == DEFAULT_MAX_CONNECTING
    # The first places went to the first servers: they answer before the rest have started.
    assert set(listings.order[:DEFAULT_MAX_CONNECTING]) == set(names[:DEFAULT_MAX_CONNECTING])


async def test_the_limit_is_the_configs_and_none_means_all_at_once() -> None:
    names = [f"s{k:03d}" for k in range(100)]
    few = Listings(together=4)
    await connect_all(few, names, max_connecting=4)
    assert few.most == 4
    unbounded = Listings(together=len(names))  # every one listing at once: what the limit prevents
    await connect_all(unbounded, names, max_connecting=None)
    assert unbounded.most == len(names)
    assert GatewayConfig.model_validate({"maxConnecting": 4}).max_connecting == 4
    assert GatewayConfig().max_connecting == DEFAULT_MAX_CONNECTING
