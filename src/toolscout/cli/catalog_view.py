"""The catalog a command answers from: each server's tools as listed live by this command, or as
stored by an earlier one (gateway/store.py), under the config's tool rules, searched and looked up
as the gateway does.

Only servers the persistent catalog knows nothing of (for their current config entry) are
connected, all at once and each for at most its connect timeout; `--refresh` connects every one.
A server whose last connection failed and that has nothing stored keeps that failure without being
tried again (a hanging server would cost every command its connect timeout) until `--refresh`, or
a command about that server alone (`tools`, `inspect`, `execute`).

Answering from the store imports neither the MCP SDK nor the gateway (`cli/common.py`'s
`connected` does, only when there is a server to connect): that is most of a command's start.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from toolscout.catalog import Catalog, CatalogTool
from toolscout.config import GatewayConfig
from toolscout.config.rules import RuleSet
from toolscout.errors import server_unavailable
from toolscout.gateway.store import CatalogStore, Failure, ServerSnapshot, store_path
from toolscout.masking import mask_text
from toolscout.suggestions import server_not_found
from toolscout.upstream.spec import config_hash

if TYPE_CHECKING:
    import mcp_types as types

    from toolscout.cli.common import Output
    from toolscout.gateway.core import Gateway
    from toolscout.search import SearchHit
    from toolscout.upstream import Upstream


@dataclass(frozen=True)
class ServerView:
    """One configured server as a command sees it."""

    name: str
    status: str
    """`connected` (by this command), `idle` (not connected: its tools are the stored ones), `error`, `disabled`."""
    description: str = ""
    tools: tuple[types.Tool, ...] = ()
    error: str | None = None
    cached_at: float | None = None
    """When the tools were listed live, when they come from the persistent catalog (seconds since the epoch)."""
    failed_at: float | None = None
    """When the failure in `error` happened, when it is remembered from an earlier command."""
    server_info: Mapping[str, str] | None = None
    protocol_version: str | None = None
    instructions: str | None = None
    transport: str | None = None
    """How it was reached (only when connected by this command)."""


def when(timestamp: float) -> str:
    """A moment as `cachedAt` and `failedAt` give it: ISO 8601, UTC, to the second."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


def ago(timestamp: float, now: float | None = None) -> str:
    """How long ago a moment was, for people: `just now`, `12 min ago`, `3 h ago`, `2 days ago`."""
    seconds = max(0.0, (time.time() if now is None else now) - timestamp)
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 2 * 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} days ago"


class CatalogView:
    """The tools of some servers under the tool rules: their rows, a search, one server's tools, one tool."""

    def __init__(self, config: GatewayConfig, servers: Sequence[ServerView]) -> None:
        self._config = config
        self.servers = list(servers)
        self._by_name = {s.name: s for s in self.servers}
        self.catalog = Catalog(RuleSet(config.tool_rules))
        for server in self.servers:
            self.catalog.set_server_tools(server.name, server.tools)

    def server(self, name: str) -> ServerView:
        """The server called `name`, or `ServerNotFound` with the closest configured names."""
        found = self._by_name.get(name)
        if found is None:
            raise server_not_found(name, list(self._config.mcp_servers))
        return found

    def row(self, server: ServerView) -> dict[str, Any]:
        """The server as `toolscout list --json` shows it: `list_mcp_servers`'s keys, and `stale` and
        `cachedAt` when its tools are stored ones, `failedAt` when its error is a remembered one."""
        total, enabled = self.catalog.counts(server.name)
        row: dict[str, Any] = {
            "name": server.name,
            "description": server.description,
            "status": server.status,
            "toolCount": total,
            "enabledCount": enabled,
        }
        if server.cached_at is not None:
            row.update(catalog="cached", cachedAt=when(server.cached_at), stale=True)
        if server.error:
            row["error"] = server.error
        if server.failed_at is not None:
            row["failedAt"] = when(server.failed_at)
        if server.server_info:
            row["serverInfo"] = dict(server.server_info)
            row["protocolVersion"] = server.protocol_version
        if server.transport:
            row["transport"] = server.transport
        if server.instructions:
            row["instructions"] = server.instructions
        row["tools"] = [t.name for t in self.catalog.tools(server.name)]
        return row

    def _answering(self, name: str) -> None:
        """`ServerUnavailable` unless the server's tools are known: listed live, or stored (as the gateway answers)."""
        server = self.server(name)
        if server.cached_at is None and server.status != "connected":
            raise server_unavailable(name, server.status, server.error)

    def search(
        self, query: str, *, server: str | None = None, limit: int = 10, min_relevance: float | None = None
    ) -> list[SearchHit]:
        """The enabled tools ranked for `query`, as the gateway's search ranks them (none below
        `min_relevance`, default the config's)."""
        from toolscout.search import make_backend
        from toolscout.search.base import check_queries, search_steps, server_context

        search = self._config.search
        floor = search.min_relevance if min_relevance is None else min_relevance
        check_queries(query, limit, floor, max_chars=search.max_query_chars, max_steps=search.max_query_steps)
        if server is not None:
            self.server(server)
        backend = make_backend(search.backend, model=search.model)
        backend.rebuild(
            self.catalog.tools(), {s.name: server_context(s.description, s.instructions) for s in self.servers}
        )
        return search_steps(backend, query, server=server, limit=limit, min_relevance=floor)

    def tools(self, server: str) -> list[CatalogTool]:
        """Every tool of `server`, those the rules disable too."""
        self._answering(server)
        return self.catalog.tools(server, include_disabled=True)

    def tool(self, server: str, name: str) -> CatalogTool:
        """One tool of `server` (enabled or not), or `ToolNotFound` with suggestions."""
        self._answering(server)
        entry = self.catalog.get(server, name)
        if entry is None:
            raise self.catalog.not_found(server, name)
        return entry


@dataclass(frozen=True)
class CatalogPlan:
    """What the persistent catalog holds of the servers in scope, and which of them are to be connected."""

    config: GatewayConfig
    names: list[str]
    stored: dict[str, ServerSnapshot]
    failed: dict[str, Failure]
    wanted: list[str]
    """The servers to connect: nothing stored for them (or `refresh`)."""

    async def view(self, output: Output) -> CatalogView:
        """The catalog view: the stored servers as stored, the wanted ones connected now."""
        live = await _connect(self.config, output, self.wanted) if self.wanted else {}
        return CatalogView(self.config, [live.get(name) or self._stored_view(name) for name in self.names])

    def _stored_view(self, name: str) -> ServerView:
        server = self.config.mcp_servers[name]
        if server.disabled:
            return ServerView(name, "disabled", server.description or "")
        snapshot, failure = self.stored.get(name), self.failed.get(name)
        view = ServerView(name, "idle", server.description or "")
        if snapshot is not None:
            said = (("name", snapshot.server_name), ("version", snapshot.server_version))
            view = ServerView(
                name,
                "idle",
                server.description or snapshot.description or snapshot.title or "",
                tools=snapshot.tools,
                cached_at=snapshot.saved_at,
                server_info={k: v for k, v in said if v},
                protocol_version=snapshot.protocol_version,
                instructions=snapshot.instructions,
            )
        if failure is not None:  # (saved after the snapshot, if any: a live list clears the failure)
            # Masked again: a reason stored by an older toolscout may hold a secret in clear.
            view = replace(view, status="error", error=mask_text(failure.reason), failed_at=failure.failed_at)
        return view


def plan_catalog(
    config: GatewayConfig, scope: Sequence[str] | None = None, *, refresh: bool = False, retry_failed: bool = False
) -> CatalogPlan:
    """What a command about the servers in `scope` (default: every configured one) can answer from
    the persistent catalog, and what it has to connect (see the module's doc).

    `refresh`: connect every server in scope. `retry_failed`: connect those whose last connection
    failed too, when nothing is stored for them.
    """
    for name in scope or ():
        if name not in config.mcp_servers:
            raise server_not_found(name, list(config.mcp_servers))
    names = list(config.mcp_servers) if scope is None else [n for n in config.mcp_servers if n in scope]
    enabled = [n for n in names if not config.mcp_servers[n].disabled]
    store = CatalogStore(store_path(config.catalog_cache)) if config.catalog_cache.enabled else None
    keys = {n: config_hash(config.mcp_servers[n]) for n in enabled}
    stored = store.load(keys) if store is not None and not refresh else {}
    failed = store.load_failures(keys) if store is not None and not refresh else {}
    wanted = [n for n in enabled if n not in stored and (retry_failed or n not in failed)]
    return CatalogPlan(config, names, stored, failed, wanted)


async def catalog_view(
    config: GatewayConfig,
    output: Output,
    scope: Sequence[str] | None = None,
    *,
    refresh: bool = False,
    retry_failed: bool = False,
) -> CatalogView:
    """The catalog view of the servers in `scope` (see `plan_catalog`), those to connect connected."""
    return await plan_catalog(config, scope, refresh=refresh, retry_failed=retry_failed).view(output)


async def _connect(config: GatewayConfig, output: Output, names: Sequence[str]) -> dict[str, ServerView]:
    from toolscout.cli.common import connected

    async with connected(config, output, only=names, live=True) as gateway:
        return {up.name: _live_view(gateway, up) for up in gateway.upstreams}


def _live_view(gateway: Gateway, upstream: Upstream) -> ServerView:
    from toolscout.upstream import Status

    identity = upstream.identity
    connected = upstream.status is Status.CONNECTED
    info = identity.server_info if identity else None
    return ServerView(
        upstream.name,
        upstream.status.value,
        upstream.description,
        # Connected: its live list; otherwise the tools its config declares, if any.
        tools=tuple(t.tool for t in gateway.catalog.tools(upstream.name, include_disabled=True)),
        error=upstream.error,
        server_info=info if connected else None,
        protocol_version=identity.protocol_version if identity and connected else None,
        instructions=identity.instructions if identity and connected else None,
        transport=upstream.spec.transport.label if connected else None,
    )
