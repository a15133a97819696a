"""Watching a connected endpoint that may come and go (spec 002's "Endpoint Discovery Timing"): run
beside a live connection, it lists tools again while the server lists none (`relist_empty`), and
pings the server every `ping_seconds` so that one that died is seen to be gone, and connected again
with backoff, without waiting for a call to fail on it.

A streamable HTTP server that dies says nothing: the SDK's client gives its event stream up after two
attempts, silently, and the connection would look live until the next call. A ping that finds the
transport gone, or goes unanswered for `PING_TIMEOUT` seconds, ends the connection; an answer, even
a JSON-RPC error (a server that does not implement ping), means the server is there. (At 2026-07-28,
which has no ping and no session, a request to a server that died fails without ending anything:
the ping is what tells.)
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp import Client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolscout.errors import ToolscoutError, UpstreamRefused
from toolscout.upstream.calls import ServerTools
from toolscout.upstream.spec import UpstreamSpec

logger = logging.getLogger(__name__)

PING_TIMEOUT = 10.0
"""How long a ping may go unanswered before the connection is taken for gone."""


def _ping_for(client: Client) -> Callable[[Client], Awaitable[Any]]:
    """A ping in `client`'s era: `ping` in the handshake era; at 2026-07-28, which has none, the first
    page of `tools/list` (every server answers it; the SDK's response cache is off for upstreams)."""
    if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return lambda live: live.list_tools()
    return lambda live: live.send_ping()  # pyright: ignore[reportDeprecated] (the handshake era's own)


class SendsRequests(Protocol):
    """The upstream's one guarded send for requests other than tool calls (`Upstream.request`)."""

    def __call__(
        self, what: str, operation: Callable[[Client], Awaitable[Any]], *, within: float | None = None, use: bool = True
    ) -> Awaitable[Any]: ...


class EndpointWatch:
    """What runs beside one upstream's live connection to keep its tools and its status true."""

    def __init__(
        self,
        spec: UpstreamSpec,
        tools: ServerTools,
        request: SendsRequests,
        refresh: Callable[[], None],
        gone: Callable[[], None],
    ) -> None:
        self._spec = spec
        self._tools = tools
        self._request = request
        self._refresh = refresh
        """Asks the connection to list tools again."""
        self._gone = gone
        """Gives the connection up: it is connected again, with backoff."""

    async def watch(self, client: Client, listed: Sequence[types.Tool]) -> None:
        """Watch the connection of `client`, whose first tool list was `listed` (cancelled with it)."""
        async with anyio.create_task_group() as tg:
            if not listed and self._spec.relist_empty and client.server_capabilities.tools is not None:
                tg.start_soon(self._tools.relist_while_empty, self._refresh)
            if self._spec.ping_seconds is not None:
                tg.start_soon(self._ping_every, self._spec.ping_seconds, client)

    async def _ping_every(self, seconds: float, client: Client) -> None:
        while True:
            await anyio.sleep(seconds)
            try:
                await self._request("ping", _ping_for(client), within=PING_TIMEOUT, use=False)
            except UpstreamRefused:
                continue  # it answered: it is there
            except ToolscoutError as exc:
                logger.info("%s: no answer to a ping (%s); connecting again", self._spec.name, exc.message)
                self._gone()
                return
