"""Where `list`, `search`, `tools`, `inspect` and `execute` get their answers.

From the persistent catalog when it has every server a command is about: the catalog view, each
server's tools as listed live by this command or as stored by an earlier one (gateway/store.py),
under the config's tool rules, searched and looked up as the gateway does. Answering from the store
imports neither the MCP SDK nor the gateway (`cli/common.py`'s `connected` does, only when there is
a server to connect): that is most of a command's start.

Else, rather than starting servers, from a running `toolscout serve` of the same config when there
is one on this machine: its discovery meta-tools on its local socket (serve/local_socket.py), asked
with the SDK's client over streamable HTTP. Else from the catalog view with the servers it lacks
connected now. All give the same JSON-ready data, in the shapes `--json` prints. `execute` asks the
serve, or connects its one server.

Only servers the persistent catalog knows nothing of (for their current config entry) are
connected, all at once and each for at most its connect timeout; `--refresh` connects every one.
A server whose last connection failed and that has nothing stored keeps that failure without being
tried again (a hanging server would cost every command its connect timeout) until `--refresh`, or
a command about that server alone (`tools`, `inspect`, `execute`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from toolscout.catalog import Catalog, CatalogTool
from toolscout.cli.common import Output, connected, iso_utc
from toolscout.cli.streaming import Notices, StreamingRelay
from toolscout.config import GatewayConfig
from toolscout.config.models import HttpServerConfig, SseServerConfig, config_hash
from toolscout.config.rules import RuleSet
from toolscout.errors import ToolDisabled, ToolExecutionError, ToolscoutError, error_from_dict, server_unavailable
from toolscout.gateway.store import CatalogStore, Failure, ServerSnapshot, store_path
from toolscout.masking import mask_text
from toolscout.suggestions import server_not_found

if TYPE_CHECKING:
    import mcp_types as types
    from mcp import Client

    from toolscout.gateway.core import Gateway
    from toolscout.gateway.explain import ExplainedHit
    from toolscout.search import SearchBackend, SearchHit
    from toolscout.upstream import Upstream

logger = logging.getLogger(__name__)

META_SEARCH_LIMIT = 50
"""The most results `search_tools` gives (modes/discovery.py's `SearchToolsArgs`): a longer search is answered here."""


class Answers(Protocol):
    """The catalog questions of the command line, answered as `--json` prints them."""

    async def servers(self) -> list[dict[str, Any]]:
        """Every configured server: `list_mcp_servers`'s row, with `tools` (enabled tools' names)."""
        ...

    async def search(
        self,
        query: str,
        *,
        server: str | None,
        limit: int,
        min_relevance: float | None = None,
        include_disabled: bool = False,
    ) -> list[dict[str, Any]]:
        """Ranked hits, none below `min_relevance` (default: the config's): server, tool, summary,
        relevance, tags (and `stale`, `cachedAt` from the store); with `include_disabled`, the tools
        the rules disable too, each with `enabled: false`."""
        ...

    async def tools(self, server: str) -> dict[str, Any]:
        """Return `server` and its `tools` (name, summary, enabled, tags), disabled ones too."""
        ...

    async def details(self, server: str, tool: str) -> dict[str, Any]:
        """One tool, enabled or not: `get_tool_details`'s keys."""
        ...


def _staleness(row: dict[str, Any]) -> dict[str, Any]:
    """Return the `stale` and `cachedAt` of a server answered from the persistent catalog
    (a serve's row: `catalog: cached`)."""
    return {"stale": True, "cachedAt": row["cachedAt"]} if row.get("catalog") == "cached" else {}


class ViewAnswers:
    """The `Answers` a `CatalogView` gives."""

    def __init__(self, view: CatalogView) -> None:
        self.view = view

    def _stale(self, server: str) -> dict[str, Any]:
        cached_at = self.view.server(server).cached_at
        return {"stale": True, "cachedAt": iso_utc(cached_at)} if cached_at is not None else {}

    async def servers(self) -> list[dict[str, Any]]:
        return [self.view.row(s) for s in self.view.servers]

    async def search(
        self,
        query: str,
        *,
        server: str | None,
        limit: int,
        min_relevance: float | None = None,
        include_disabled: bool = False,
    ) -> list[dict[str, Any]]:
        hits = self.view.search(
            query, server=server, limit=limit, min_relevance=min_relevance, include_disabled=include_disabled
        )
        return [
            {
                "server": h.tool.server,
                "tool": h.tool.name,
                "summary": h.tool.summary,
                "relevance": h.relevance,
                "tags": list(h.tool.tags),
                **({} if h.tool.enabled else {"enabled": False}),
                **self._stale(h.tool.server),
            }
            for h in hits
        ]

    async def tools(self, server: str) -> dict[str, Any]:
        entries = self.view.tools(server)
        listed = [{"name": t.name, "summary": t.summary, "enabled": t.enabled, "tags": list(t.tags)} for t in entries]
        hidden = self.view.catalog.hidden_count(server)
        return {"server": server, "tools": listed, **({"hiddenCount": hidden} if hidden else {}), **self._stale(server)}

    async def details(self, server: str, tool: str) -> dict[str, Any]:
        return {**tool_details(self.view.tool(server, tool)), **self._stale(server)}


def tool_details(entry: CatalogTool) -> dict[str, Any]:
    """A tool as `get_tool_details` gives it (without its signature)."""
    from toolscout.render.signatures import parameters

    data: dict[str, Any] = {
        "server": entry.server,
        "tool": entry.name,
        "title": entry.title,
        "description": entry.description,
        "parameters": parameters(entry.input_schema),
        "inputSchema": entry.input_schema,
        "outputSchema": entry.output_schema,
        "enabled": entry.enabled,
        "tags": list(entry.tags),
        "annotations": entry.tool.annotations.model_dump(by_alias=True, exclude_none=True)
        if entry.tool.annotations
        else None,
    }
    return {k: v for k, v in data.items() if v is not None}


class ServeAnswers:
    """The `Answers` a running `toolscout serve`'s meta-tools give (see the module's doc).

    Should the serve stop answering, a catalog question is answered by the catalog view instead
    (an execution is not tried again: it may have run).
    """

    def __init__(self, client: Client, config: GatewayConfig, output: Output, path: Path) -> None:
        self._client = client
        self._config = config
        self._output = output
        self._path = path
        self._fallback: ViewAnswers | None = None

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A meta-tool's `structuredContent`, or the error it reported, raised."""
        result = await self._ask(name, arguments)
        data = cast(dict[str, Any], result.structured_content or {})
        if result.is_error:
            raise error_from_dict(cast(dict[str, Any], data.get("error") or {"message": _text(result)}))
        return data

    async def _ask(self, name: str, arguments: dict[str, Any], notices: Notices | None = None) -> types.CallToolResult:
        import httpx2
        from mcp.shared.exceptions import MCPError

        progress = StreamingRelay(notices).progress if notices is not None else None
        try:
            return await self._client.call_tool(name, arguments, progress_callback=progress)
        except (MCPError, httpx2.HTTPError, OSError) as exc:
            raise _ServeGone(f"the toolscout serve at {self._path} stopped answering ({exc})") from None

    async def _local(self, server: str | None = None) -> ViewAnswers:
        """The catalog view's answers, for what the serve did not answer (all servers, or `server`'s)."""
        if self._fallback is None or server is None:
            scope = [server] if server is not None else None
            view = await catalog_view(self._config, self._output, scope, retry_failed=server is not None)
            self._fallback = ViewAnswers(view)
        return self._fallback

    async def execute(
        self, server: str, tool: str, arguments: dict[str, Any], *, notices: Notices | None = None
    ) -> types.CallToolResult:
        """The tool's own result (`isError` when it failed); an error of the gateway's, raised. Its
        progress notifications go to `notices`, when given (its log messages: see `serve_answers`)."""
        try:
            arguments = {"server": server, "tool": tool, "arguments": arguments}
            result = await self._ask("execute_tool", arguments, notices)
        except _ServeGone as exc:
            raise ToolExecutionError(f"{exc}; the call may or may not have run.", server=server, tool=tool) from None
        data = cast(dict[str, Any], result.structured_content or {})
        error = data.get("error") if result.is_error and data.get("success") is False else None
        if isinstance(error, dict) and "code" in error:
            raise error_from_dict(cast(dict[str, Any], error))
        return result

    async def servers(self) -> list[dict[str, Any]]:
        try:
            return await self._servers()
        except _ServeGone as exc:
            logger.warning("%s; answering without it", exc)
            return await (await self._local()).servers()

    async def _servers(self) -> list[dict[str, Any]]:
        import anyio

        from toolscout.upstream import transport_for

        rows = cast(list[dict[str, Any]], (await self.call("list_mcp_servers", {}))["servers"])
        names: dict[str, list[str]] = {}

        async def tools_of(server: str) -> None:
            try:
                listed = cast(list[dict[str, Any]], (await self.call("list_tools", {"server": server}))["tools"])
            except ToolscoutError:  # (say, it failed meanwhile: no tools of it to name)
                listed = []
            names[server] = [t["name"] for t in listed]

        async with anyio.create_task_group() as tg:
            for row in rows:
                if row["enabledCount"]:
                    tg.start_soon(tools_of, row["name"])
        for row in rows:
            if "serverInfo" in row and row["name"] in self._config.mcp_servers:
                row["transport"] = transport_for(row["name"], self._config.mcp_servers[row["name"]]).label
            row.update(_staleness(row))
            row["tools"] = names.get(row["name"], [])
        return rows

    async def search(
        self,
        query: str,
        *,
        server: str | None,
        limit: int,
        min_relevance: float | None = None,
        include_disabled: bool = False,
    ) -> list[dict[str, Any]]:
        arguments: dict[str, Any] = {"query": query, "limit": limit}
        if server is not None:
            arguments["server"] = server
        if min_relevance is not None:
            arguments["minRelevance"] = min_relevance
        if include_disabled:
            arguments["includeDisabled"] = True
        try:
            hits = cast(list[dict[str, Any]], (await self.call("search_tools", arguments))["results"])
            stale = await self._stale_servers() if any(h.get("stale") for h in hits) else {}
        except _ServeGone as exc:
            logger.warning("%s; answering without it", exc)
            return await (await self._local()).search(
                query, server=server, limit=limit, min_relevance=min_relevance, include_disabled=include_disabled
            )
        keys = ("server", "tool", "summary", "relevance", "tags", "enabled")
        return [
            {**{k: h[k] for k in keys if k in h}, **(stale.get(h["server"], {}) if h.get("stale") else {})}
            for h in hits
        ]

    async def tools(self, server: str) -> dict[str, Any]:
        try:
            listed = await self.call("list_tools", {"server": server, "includeDisabled": True})
            stale = await self._stale_servers() if listed.get("stale") else {}
        except _ServeGone as exc:
            logger.warning("%s; answering without it", exc)
            return await (await self._local(server)).tools(server)
        return {**listed, **stale.get(server, {})}

    async def details(self, server: str, tool: str) -> dict[str, Any]:
        try:
            data = await self.call("get_tool_details", {"server": server, "tool": tool, "format": "json"})
            stale = await self._stale_servers() if data.get("stale") else {}
        except (_ServeGone, ToolDisabled):
            # (`get_tool_details` shows enabled tools only; the command shows the others too.)
            return await (await self._local(server)).details(server, tool)
        data.pop("signature", None)
        return {**data, **stale.get(server, {})}

    async def _stale_servers(self) -> dict[str, dict[str, Any]]:
        rows = (await self.call("list_mcp_servers", {}))["servers"]
        return {r["name"]: _staleness(r) for r in rows if r.get("catalog") == "cached"}


class _ServeGone(Exception):
    """The serve asked stopped answering (it was stopped, or it failed)."""


def _text(result: types.CallToolResult) -> str:
    return " ".join(getattr(b, "text", "") for b in result.content) or "the request failed"


@asynccontextmanager
async def serve_answers(
    config: GatewayConfig, config_file: Path | None, output: Output, *, notices: Notices | None = None
) -> AsyncGenerator[ServeAnswers | None]:
    """A running `toolscout serve` of `config` (loaded from `config_file`) to ask, or None when none runs.

    `notices`: where the log messages the serve passes on are printed (`execute --stream`); the
    connection then takes the handshake era, which still has them.
    """
    from toolscout.serve.local_socket import serving, socket_path

    path = socket_path(config_file, config) if config_file is not None else None
    if path is None or not serving(path):
        yield None
        return
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import Implementation
    from mcp_types.version import LATEST_MODERN_VERSION

    from toolscout import __version__
    from toolscout.serve.local_socket import SOCKET_HOST
    from toolscout.upstream._sdk import SDK_HTTP_TIMEOUT, SDK_SSE_READ_TIMEOUT

    try:
        async with AsyncExitStack() as stack:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    transport=httpx2.AsyncHTTPTransport(uds=str(path)),
                    timeout=httpx2.Timeout(SDK_HTTP_TIMEOUT, read=SDK_SSE_READ_TIMEOUT),
                )
            )
            transport = streamable_http_client(f"http://{SOCKET_HOST}/mcp", http_client=http, terminate_on_close=False)
            # The stateless era, adopted at once: each question is one request, no handshake first.
            # A call streamed (`execute --stream`) takes the handshake: that era still has log
            # messages, which the serve passes on only to clients that speak it.
            logging_callback = StreamingRelay(notices).log if notices is not None else None
            client = Client(
                transport,
                mode="legacy" if notices is not None else LATEST_MODERN_VERSION,
                client_info=Implementation(name="toolscout-cli", version=__version__),
                logging_callback=logging_callback,
            )
            await stack.enter_async_context(client)
            logger.info("asking the toolscout serve at %s", path)
            yield ServeAnswers(client, config, output, path)
    except BaseExceptionGroup as group:
        # The client's task groups wrap what the command raised while it was open: a
        # `ToolscoutError` (or `typer.Exit`) is the command's to report as it is.
        from toolscout.upstream.calls import innermost

        raise innermost(group) from None


@asynccontextmanager
async def answers(
    config: GatewayConfig,
    config_file: Path | None,
    output: Output,
    scope: Sequence[str] | None = None,
    *,
    refresh: bool = False,
    retry_failed: bool = False,
    serve_can_answer: bool = True,
) -> AsyncGenerator[Answers]:
    """The answers for a command about the servers in `scope` (all by default; see `plan_catalog`
    for `refresh` and `retry_failed`): from the persistent catalog when it has every one of them;
    else from a running serve of this config, when there is one, rather than starting servers; else
    from the catalog view, the servers it lacks connected now.

    `serve_can_answer=False`: a question the meta-tools cannot answer (a search longer than `META_SEARCH_LIMIT`).
    """
    plan = plan_catalog(config, scope, refresh=refresh, retry_failed=retry_failed)
    if plan.wanted and serve_can_answer:
        async with serve_answers(config, config_file, output) as serve:
            if serve is not None:
                yield serve
                return
    yield ViewAnswers(await plan.view(output))


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


class CatalogView:
    """The tools of some servers under the tool rules: their rows, a search, one server's tools, one tool."""

    def __init__(self, config: GatewayConfig, servers: Sequence[ServerView]) -> None:
        self._config = config
        self.servers = list(servers)
        self._by_name = {s.name: s for s in self.servers}
        self.catalog = Catalog(RuleSet(config.tool_rules, config.tool_rules_evaluation))
        for server in self.servers:
            self.catalog.set_server_tools(server.name, server.tools)

    def server(self, name: str) -> ServerView:
        """The server called `name`, or `ServerNotFound` with the closest configured names."""
        found = self._by_name.get(name)
        if found is None:
            raise server_not_found(name, list(self._config.mcp_servers))
        return found

    def description(self, server: ServerView) -> str:
        """`server`'s description as a running gateway gives it: its own, else one made from its tools."""
        return server.description or self.catalog.described(server.name)

    def row(self, server: ServerView) -> dict[str, Any]:
        """The server as `toolscout list --json` shows it: `list_mcp_servers`'s keys, and `stale` and
        `cachedAt` when its tools are stored ones, `failedAt` when its error is a remembered one."""
        total, enabled = self.catalog.counts(server.name)
        row: dict[str, Any] = {
            "name": server.name,
            "description": self.description(server),
            "status": server.status,
            "toolCount": total,
            "enabledCount": enabled,
        }
        hidden = self.catalog.hidden_count(server.name)
        if hidden:
            row["hiddenCount"] = hidden
        if server.cached_at is not None:
            row.update(catalog="cached", cachedAt=iso_utc(server.cached_at), stale=True)
        if server.error:
            row["error"] = server.error
        if server.failed_at is not None:
            row["failedAt"] = iso_utc(server.failed_at)
        if server.server_info:
            row["serverInfo"] = dict(server.server_info)
            row["protocolVersion"] = server.protocol_version
        if server.transport:
            row["transport"] = server.transport
        if server.instructions:
            row["instructions"] = server.instructions
        row["tools"] = [t.name for t in self.catalog.tools(server.name, include_hidden=False)]
        return row

    def _answering(self, name: str) -> None:
        """Raise `ServerUnavailable` unless the server's tools are known: listed live, or
        stored (as the gateway answers)."""
        server = self.server(name)
        if server.cached_at is None and server.status != "connected":
            raise server_unavailable(name, server.status, server.error)

    def search(
        self,
        query: str,
        *,
        server: str | None = None,
        limit: int = 10,
        min_relevance: float | None = None,
        include_disabled: bool = False,
    ) -> list[SearchHit]:
        """The enabled tools (with `include_disabled`, those the rules disable too) ranked for `query`,
        as the gateway's search ranks them (none below `min_relevance`, default the config's)."""
        from toolscout.search.base import search_steps

        backend, floor = self._searching(query, server, limit, min_relevance, include_disabled=include_disabled)
        return search_steps(backend, query, server=server, limit=limit, min_relevance=floor)

    def explain(
        self,
        query: str,
        *,
        server: str | None = None,
        limit: int = 10,
        min_relevance: float | None = None,
        include_disabled: bool = False,
    ) -> list[ExplainedHit]:
        """The hits `search` gives, in its order, each with each ranker's part in it (and smart mode's
        scores when the config turns smart mode on), as `Gateway.explain_search` gives them."""
        from toolscout.gateway.explain import explained, smart_scores
        from toolscout.search.base import explain_hits, method_hits

        backend, floor = self._searching(query, server, limit, min_relevance, include_disabled=include_disabled)
        found = explain_hits(backend, query, server=server, limit=limit, min_relevance=floor)
        smart = None
        if self._config.mode == "smart" or self._config.smart_tool:
            settings = self._config.smart
            candidates = method_hits(backend, query, limit=max(limit, settings.max_llm_candidates), method="hybrid")
            smart = smart_scores(candidates, settings)
        return explained(found, smart)

    def _searching(
        self, query: str, server: str | None, limit: int, min_relevance: float | None, *, include_disabled: bool = False
    ) -> tuple[SearchBackend, float]:
        """The search backend over the catalog (the disabled tools too, if asked; never the unusable
        ones), the query checked first, and the relevance floor."""
        from toolscout.search import make_backend
        from toolscout.search.base import check_queries, server_context

        search = self._config.search
        floor = search.min_relevance if min_relevance is None else min_relevance
        check_queries(query, limit, floor, max_chars=search.max_query_chars, max_steps=search.max_query_steps)
        if server is not None:
            self.server(server)
        backend = make_backend(search.backend, model=search.model, fuzzy_names=search.fuzzy_names)
        tools = [t for t in self.catalog.tools(include_disabled=include_disabled) if t.unusable is None]
        backend.rebuild(tools, {s.name: server_context(self.description(s), s.instructions) for s in self.servers})
        return backend, floor

    def tools(self, server: str) -> list[CatalogTool]:
        """Every tool of `server` a listing shows, those the rules disable too (as `list_tools` does,
        the hidden ones are left out)."""
        self._answering(server)
        return self.catalog.tools(server, include_disabled=True, include_hidden=False)

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
    """The servers to connect: nothing stored for them (or `refresh`), or signed in to since they failed."""

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
    # A failure remembered from before the server's sign-in was written again (`auth login` since, say)
    # may have gone with the sign-in it was about, or not: a running gateway's refresh rewrites the file
    # too, whatever is wrong with the server. It is connected again to find out, even with a stored list,
    # which would otherwise hide a failure that is still there.
    signed_in_since = {n for n, f in failed.items() if _signed_in_since(n, config, f.failed_at)}
    failed = {n: f for n, f in failed.items() if n not in signed_in_since}
    wanted = [n for n in enabled if n in signed_in_since or (n not in stored and (retry_failed or n not in failed))]
    return CatalogPlan(config, names, stored, failed, wanted)


def _signed_in_since(name: str, config: GatewayConfig, moment: float) -> bool:
    """Whether remote server `name`'s sign-in file was written after `moment` (seconds since the epoch)."""
    server = config.mcp_servers[name]
    if not isinstance(server, HttpServerConfig | SseServerConfig):
        return False
    from toolscout.upstream.oauth import SignInFile  # only for a remembered failure: `list` stays light

    stamp = SignInFile.of(name, server.url).stamp()
    return stamp is not None and stamp[0] / 1e9 > moment


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
