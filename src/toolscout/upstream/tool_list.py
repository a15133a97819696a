"""One upstream's tools in the catalog: the live list while connected, else the last one known or the
declared ones; and a change the server announced, until its new list is fetched."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

import anyio
import mcp_types as types
from mcp import Client

from toolscout.upstream.paging import MAX_PAGES, paginate

logger = logging.getLogger(__name__)

RELIST_EMPTY_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0)
"""When a server lists no tools right after connecting (and `relist_empty`), the waits before each
listing again, as long as it still lists none: about half a minute in all."""


class ToolListing(Protocol):
    """What an upstream needs of the catalog its tools are listed in (the gateway's `Catalog`)."""

    def set_server_tools(self, server: str, tools: Iterable[types.Tool], *, declared: bool = False) -> None:
        """Replace everything known about `server`'s tools (`declared`: the config's, not the server's)."""
        ...

    def drop_server(self, server: str) -> None:
        """Forget `server`'s tools."""
        ...

    def counts(self, server: str) -> tuple[int, int]:
        """(all tools, enabled tools) of `server`."""
        ...

    def admit_tool(self, server: str, name: str) -> object:
        """Raise unless `server` listed a tool called exactly `name` and the rules enable it."""
        ...


class ServerTools:
    """The tools one upstream lists in the catalog, and whether they are known to be out of date."""

    def __init__(
        self,
        server: str,
        catalog: ToolListing,
        declared: tuple[types.Tool, ...],
        on_listed: Callable[[Sequence[types.Tool]], None],
    ) -> None:
        self._server = server
        self.catalog = catalog
        self._declared = declared
        self._on_listed = on_listed
        self.offline: tuple[types.Tool, ...] | None = None
        """The last live list the gateway knows of (see `use_offline`); None: the declared tools."""
        self.refresh_requested = False
        """The server announced a change that no listing has fetched yet."""
        self.stale = False
        """The server said its tools changed and the new list has not arrived yet: calls wait for it."""

    def announced_change(self) -> None:
        """The server said its tools changed."""
        self.refresh_requested = True
        self.stale = True

    async def relist_while_empty(self, request: Callable[[], None]) -> None:
        """Ask for the list again (`request`) after each of `RELIST_EMPTY_DELAYS` while the last one
        was empty (run beside the connection, cancelled with it)."""
        for delay in RELIST_EMPTY_DELAYS:
            await anyio.sleep(delay)
            if self.offline:  # it listed some at last (or told us of a change)
                return
            logger.info("%s: listed no tools yet; listing again", self._server)
            request()
        logger.info("%s: still lists no tools; listed again when it says its tools changed", self._server)

    async def fetch(self, client: Client) -> list[types.Tool]:
        """The server's whole tool list (every page)."""
        if client.server_capabilities.tools is None:
            return []

        async def page(cursor: str | None) -> tuple[list[types.Tool], str | None]:
            listed = await client.list_tools(cursor=cursor)
            return listed.tools, listed.next_cursor

        tools, complete = await paginate(page)
        if not complete:
            logger.warning("%s: stopped listing tools after %d pages", self._server, MAX_PAGES)
        return tools

    def list_live(self, tools: Sequence[types.Tool]) -> None:
        """List what the server listed just now."""
        self.catalog.set_server_tools(self._server, tools)
        # What it really offers: listed while it is idle, reconnecting or down, until it says otherwise.
        self.offline = tuple(tools)
        self._on_listed(tools)

    def list_offline(self) -> None:
        """Not connected: list its last known tools, else the declared ones, else none."""
        if self.offline is not None:
            self.catalog.set_server_tools(self._server, self.offline)
        elif self._declared:
            self.catalog.set_server_tools(self._server, self._declared, declared=True)
        else:
            self.catalog.drop_server(self._server)
