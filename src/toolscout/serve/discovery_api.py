"""The HTTP API of discovery under `/api/v1`: what the gateway sees, finds and counts, and calls over
plain HTTP, for a dashboard, a script or an operator's `curl`.

Served whenever the gateway serves HTTP, with or without a registry (the token and registration routes
of api.py need one). Routes for anyone the gateway serves, each within the caller's scope (a client key
or token sees only its servers and tools, and the audit lines of its own namespace):

    GET  /api/v1/servers                      → {"servers": [...]}: status, reason, next retry, era
    GET  /api/v1/tools[?server=S]             → {"tools": [...]}: signature, annotations, tags, enabled
                                                 or hidden and by what
    GET  /api/v1/search?q=...[&server=S&limit=N&explain=true]
                                              → {"query", "results": [...]}, with each ranker's part
    GET  /api/v1/audit[?label&namespace&server&tool&outcome&limit]
                                              → {"entries": [...]}, newest first
    POST /api/v1/mcp/call                     {server, tool, arguments} | {tool: "server__tool", ...}
                                              | {request, ...smart_tool_discovery's arguments}
                                              → the MCP CallToolResult as JSON

Routes for admin keys (and anyone, when the gateway authenticates no one):

    GET  /api/v1/discovery/stats              → searches, smart calls, hit rates, caches, selections
    GET  /api/v1/health/semantic              → model, dimensions, tools embedded, stale, status
    POST /api/v1/embeddings/sync              → what was embedded
    GET  /api/v1/config/semantic              → the `search` settings in force
    PUT  /api/v1/config/semantic              {any of the `search` keys} → the settings now in force,
                                                 and where they were written

The same answer at the paths other gateways use: `GET /v1/discovery/stats`, `GET /health/semantic`,
`POST /v1/embeddings/sync`, `GET`/`PUT /v1/config/semantic`, `POST /v1/mcp/call` and
`POST /dashboard/api/mcp/execute` (as `mcp/call`).

A call through `mcp/call` is what `execute_tool` over /mcp is: the caller's scope, `toolRules`, the
argument checks and the audit line (client `http-api`); a refusal is a result with `isError`, as
over MCP, its next steps in this API's words. Every other refusal is the API's error answer,
`{"error": {"code", "message"}}` (`error_response`), with the status of its kind: 400 a bad request,
403 an admin route asked with a client credential, 404 an unknown server or tool, 503 unavailable.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from toolscout.catalog import CatalogTool
from toolscout.config.models import SearchConfig
from toolscout.config.scopes import UNSCOPED, Scope, current_scope, scoped
from toolscout.errors import (
    ConfigurationError,
    Disabled,
    Invalid,
    InvalidArguments,
    NotFound,
    Phrasing,
    ToolscoutError,
    Unavailable,
)
from toolscout.gateway.audit import noting
from toolscout.gateway.audit_reader import last_records, open_log
from toolscout.gateway.core import Gateway
from toolscout.modes.base import Surface
from toolscout.modes.discovery import BY_NAME, search_result
from toolscout.naming import native_names
from toolscout.render.signatures import call_signature
from toolscout.serve.api import API_PREFIX, ApiError, json_object
from toolscout.serve.auth import Principal, error_response, principal_of
from toolscout.serve.server import GatewayServer, call_result
from toolscout.upstream import Upstream
from toolscout.upstream.calls import HttpRequestRelay, relaying

logger = logging.getLogger(__name__)

SMART_TOOL = "smart_tool_discovery"
API_CLIENT = "http-api"
"""The client an execution through `mcp/call` is audited as."""
MAX_AUDIT_LINES = 1_000
"""The most audit lines one `GET /api/v1/audit` answers."""

API_STEPS: Phrasing = {
    "find_tool": "GET /api/v1/search?q=... finds a tool; GET /api/v1/tools?server={server} lists its tools.",
    "list_servers": "GET /api/v1/servers lists the servers.",
    "tool_details": "GET /api/v1/tools?server={server} shows the signature of {tool}; fix the arguments and retry.",
}
"""What a refused call tells an HTTP caller to do next."""


class _Body(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class ExecuteRequest(_Body):
    """`POST /api/v1/mcp/call` running one tool: `server` and `tool`, or `tool` alone as its native
    name (`server__tool`, or a name one server has)."""

    server: str | None = None
    tool: str = Field(min_length=1)
    arguments: dict[str, Any] | str | None = None
    max_output_chars: int | None = Field(None, ge=0)


class SemanticHealth(_Body):
    """`GET /api/v1/health/semantic`: the embeddings against the catalog."""

    status: str
    """`ok`; `degraded` when tools wait to be embedded, the embeddings cannot be used, or the configured
    provider failed and the packaged model embeds instead; `off` with `search.backend: bm25`."""
    backend: str
    model: str | None
    """The model whose vectors the index holds."""
    configured_model: str | None = None
    """The model configured (differs from `model` while a provider's fallback embeds)."""
    fallback: str | None = None
    """Why the configured provider is not embedding (None: it is)."""
    dimensions: int | None
    tools_embedded: int
    stale_embeddings: int


class SyncAnswer(_Body):
    """`POST /api/v1/embeddings/sync`: what the sync did."""

    synced: bool
    """Whether the index was rebuilt (False: nothing was stale)."""
    stale_before: int
    tools_embedded: int
    stale_embeddings: int
    model: str | None
    created: int = 0
    """Tools embedded for the first time since the last sync (after a restart: not in the disk cache)."""
    updated: int = 0
    """Tools embedded again because their name, title or description changed."""
    unchanged: int = 0
    """Tools whose vectors were kept."""
    failed: int = 0
    """Tools the configured provider could not embed (the packaged model embedded them; `fallback` says why)."""
    fallback: str | None = None


class SemanticSettings(_Body):
    """`GET`/`PUT /api/v1/config/semantic`: the `search` settings in force, and where a change went."""

    search: dict[str, Any]
    applied: bool = False
    """Whether this request changed the running gateway."""
    written: str | None = None
    """The config file the change was written to (None: the running gateway alone)."""
    backup: str | None = None
    note: str | None = None


def _status(error: ToolscoutError) -> int:
    """The HTTP status of an error from the gateway, by its kind."""
    if isinstance(error, NotFound):
        return 404
    if isinstance(error, Invalid | ConfigurationError):
        return 400
    if isinstance(error, Disabled):
        return 403
    if isinstance(error, Unavailable):
        return 503
    return 502


Handler = Callable[[Request], Awaitable[Response]]


def _route(handler: Handler, *, admin: bool) -> Handler:
    """`handler` under its caller's scope, behind the admin check if `admin`, errors as API answers."""

    async def answer(request: Request) -> Response:
        principal = principal_of(request)
        try:
            if admin and not principal.admin:
                raise ApiError(
                    403,
                    "FORBIDDEN",
                    f"{request.url.path} needs an admin key (auth.adminKeys); a client key or token may use "
                    f"GET {API_PREFIX}/servers, /tools, /search, /audit and POST {API_PREFIX}/mcp/call",
                )
            if principal.scope is UNSCOPED:
                return await handler(request)
            with scoped(principal.scope):
                return await handler(request)
        except ApiError as exc:
            return error_response(exc.status, exc.code, exc.message)
        except ToolscoutError as exc:
            return error_response(_status(exc), exc.code, exc.explain())
        except Exception:  # a bug of ours: a clear answer for the caller, the traceback for the log
            logger.exception("discovery API: %s %s failed", request.method, request.url.path)
            return error_response(500, "INTERNAL_ERROR", "the request failed inside the gateway; see its log")

    return answer


def _json(model: BaseModel, status: int = 200) -> JSONResponse:
    return JSONResponse(model.model_dump(mode="json", by_alias=True), status_code=status)


def _int(request: Request, name: str, default: int, *, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(
            400, "INVALID_REQUEST", f"{name} must be a whole number from {low} to {high}, got {raw!r}"
        ) from None
    if not low <= value <= high:
        raise ApiError(400, "INVALID_REQUEST", f"{name} must be from {low} to {high}, got {value}")
    return value


def _flag(request: Request, name: str) -> bool:
    raw = request.query_params.get(name, "false").lower()
    if raw not in ("true", "false", "1", "0", "yes", "no"):
        raise ApiError(400, "INVALID_REQUEST", f"{name} must be true or false, got {raw!r}")
    return raw in ("true", "1", "yes")


class ApiClient:
    """The client a surface answers for an `mcp/call` (no session: nothing loaded, no list to change)."""

    def __init__(self) -> None:
        self.loaded: dict[tuple[str, str], None] = {}
        self.modern = False

    def mark_tools_changed(self) -> None:
        return None


class DiscoveryApi:
    """The handlers, over one MCP server (its gateway, and its surface for smart requests).

    `config_file`: the file `PUT /api/v1/config/semantic` writes its change to (None: the change stays
    in the running gateway)."""

    def __init__(self, server: GatewayServer, *, config_file: Path | None = None) -> None:
        self.server = server
        self.gateway: Gateway = server.gateway
        self.config_file = config_file

    # Servers and tools

    def _server(self, upstream: Upstream) -> dict[str, Any]:
        entry = self.gateway.server_status(upstream)
        if upstream.error:
            entry["reason"] = upstream.error
        if upstream.retry_at is not None:
            entry["nextRetryAt"] = round(upstream.retry_at, 3)
        if upstream.era is not None and "protocolVersion" in entry:
            entry["era"] = upstream.era
        since = upstream.connected_since
        if since is not None:
            entry["connectedSince"] = round(since, 3)
        return entry

    async def servers(self, request: Request) -> Response:
        await self.gateway.settle_startup()
        return JSONResponse({"servers": [self._server(u) for u in self.gateway.upstreams]})

    def _tool(self, entry: CatalogTool) -> dict[str, Any]:
        data: dict[str, Any] = {
            "server": entry.server,
            "name": entry.name,
            "summary": entry.summary,
            "signature": call_signature(entry.name, entry.input_schema, max_description_len=0),
            "tags": list(entry.tags),
            "enabled": entry.enabled,
        }
        if entry.hidden:  # `hidden: true`: in no MCP listing, yet found by search and callable
            data["listed"] = False
        annotations = entry.tool.annotations
        data["annotations"] = annotations.model_dump(by_alias=True, exclude_none=True) if annotations else {}
        if entry.quarantined:
            data["hiddenBy"] = "toolPinning"
        elif entry.unusable:
            data["hiddenBy"] = "inputSchema"
            data["unusable"] = entry.unusable
        elif not entry.enabled:
            index = self.gateway.rules.deciding(entry.server, entry.name)
            data["hiddenBy"] = f"toolRules[{index}]" if index is not None else "toolRules (a whitelist)"
        return data

    async def tools(self, request: Request) -> Response:
        server = request.query_params.get("server")
        await self.gateway.settle_startup()
        scope = current_scope()
        if server is not None:
            self.gateway.upstream(server)  # SERVER_NOT_FOUND (404) for one the scope does not see
        entries = self.gateway.visibility.tools(scope, server, include_disabled=True)
        return JSONResponse({"tools": [self._tool(t) for t in entries]})

    # Search

    async def search(self, request: Request) -> Response:
        query = request.query_params.get("q")
        if not query or not query.strip():
            raise ApiError(400, "INVALID_REQUEST", "q is missing: GET /api/v1/search?q=convert+miles+to+km")
        server = request.query_params.get("server")
        limit = _int(request, "limit", 10, low=1, high=100)
        await self.gateway.settle_startup()
        if _flag(request, "explain"):
            hits = await self.gateway.explain_search(query, server=server, limit=limit)
            return JSONResponse({"query": query, "results": [hit.to_dict() for hit in hits]})
        found = await self.gateway.search(
            query, server=server, limit=limit, include_disabled=_flag(request, "includeDisabled")
        )
        answer: dict[str, Any] = {"query": query, "results": [search_result(h) for h in found]}
        if self.gateway.search_config.nothing_fits(h.relevance for h in found):
            answer["nothingFits"] = True  # as search_tools says it
        return JSONResponse(answer)

    # Audit

    async def audit(self, request: Request) -> Response:
        audit = self.gateway.audit
        if audit is None:
            raise ApiError(404, "AUDIT_OFF", "the audit log is off (audit.enabled: false): there is nothing to read")
        wanted = {
            key: value
            for key in ("label", "namespace", "server", "tool", "outcome")
            if (value := request.query_params.get(key)) is not None
        }
        limit = _int(request, "limit", 100, low=1, high=MAX_AUDIT_LINES)
        own = _own_lines(principal_of(request), wanted)
        lines = await anyio.to_thread.run_sync(_newest_lines, audit.path, wanted | own, limit)
        return JSONResponse({"entries": lines})

    # Calls

    async def call(self, request: Request) -> Response:
        body = await json_object(request)
        if "request" in body:
            result = await self._smart(request, body)
        else:
            result = await call_result(
                lambda: self._execute(body),
                tool="execute_tool",
                native=False,
                next_steps=API_STEPS,
                context={k: v for k in ("server", "tool") if isinstance(v := body.get(k), str)},
            )
        return JSONResponse(result.model_dump(mode="json", by_alias=True, exclude_none=True))

    async def _execute(self, body: dict[str, Any]) -> types.CallToolResult:
        try:
            call = ExecuteRequest.model_validate(body)
        except ValidationError as exc:
            refusal = InvalidArguments(f"The call is not {{server, tool, arguments}}: {_problems(exc)}.")
            await self.gateway.record_refused(body, refusal)
            raise refusal from None
        server, tool = call.server, call.tool
        if server is None:
            server, tool = await self._native(tool)
        args = {"server": server, "tool": tool, "arguments": call.arguments, "max_output_chars": call.max_output_chars}
        try:
            parsed = BY_NAME["execute_tool"].parse(args)
        except InvalidArguments as exc:
            await self.gateway.record_refused(args, exc)
            raise
        return await self.gateway.execute(
            parsed.server, parsed.tool, parsed.arguments, max_output_chars=parsed.max_output_chars, client=API_CLIENT
        )

    async def _native(self, name: str) -> tuple[str, str]:
        """The server and tool a native name (`server__tool`, or a tool name one server has) stands for."""
        await self.gateway.settle_startup()
        visible = self.gateway.visibility.tools(current_scope(), include_disabled=True)
        pairs = [(t.server, t.name) for t in visible]
        for pair, native in native_names(pairs).items():
            if native == name:
                return pair
        owners = [pair for pair in pairs if pair[1] == name]
        if len(owners) == 1:
            return owners[0]
        if owners:
            servers = ", ".join(server for server, _ in owners)
            raise InvalidArguments(f"Several servers have a tool {name!r} ({servers}): give server and tool.")
        raise InvalidArguments(
            f"No tool {name!r}: give server and tool, or the tool's native name (server__tool). "
            "GET /api/v1/search?q=... finds one."
        )

    async def _smart(self, request: Request, body: dict[str, Any]) -> types.CallToolResult:
        client = ApiClient()
        surface = self.server.surface
        if SMART_TOOL not in {tool.name for tool in await surface.tools(client)}:
            raise ApiError(
                400,
                "SMART_OFF",
                "a request in plain words needs smart_tool_discovery: set mode: smart, or smartTool: true "
                "in discovery mode; or call a tool by server and tool",
            )
        # The tool it runs is audited as this API's call, and a confirmation id it proposes is bound
        # to the request's key: another key cannot use it.
        relay = HttpRequestRelay(principal_of(request).subject, API_CLIENT)
        with noting(client=API_CLIENT), relaying(relay):
            return await self._smart_call(surface, client, body)

    async def _smart_call(self, surface: Surface, client: ApiClient, body: dict[str, Any]) -> types.CallToolResult:
        found = await call_result(
            lambda: surface.call(client, SMART_TOOL, body),
            tool=SMART_TOOL,
            native=False,
            next_steps=API_STEPS,
            context={},
        )
        assert found is not None  # the surface lists the tool: it answers it
        return found

    # Admin: stats, embeddings, the search settings

    async def stats(self, request: Request) -> Response:
        data = self.gateway.stats.snapshot(self.gateway.metrics.cache_counts())
        data["caches"]["scopedSearchIndexes"] = {"entries": self.gateway.scoped_indexes}
        return JSONResponse(data)

    async def semantic_health(self, request: Request) -> Response:
        state = await self.gateway.semantic_state()
        fresh = state.model is not None and state.stale == 0 and state.fallback is None
        # A lexical backend has no embeddings, as configured: off, not degraded.
        lexical = self.gateway.search_config.backend in ("bm25", "weighted")
        status = "off" if lexical else "ok" if fresh else "degraded"
        return _json(
            SemanticHealth(
                status=status,
                backend=self.gateway.search_config.backend,
                model=state.model,
                configured_model=state.configured,
                fallback=state.fallback,
                dimensions=state.dimensions,
                tools_embedded=state.embedded,
                stale_embeddings=state.stale,
            )
        )

    async def sync(self, request: Request) -> Response:
        before = await self.gateway.semantic_state()
        after = await self.gateway.semantic_state(sync=True)
        return _json(
            SyncAnswer(
                synced=after.rebuilt,
                stale_before=before.stale,
                tools_embedded=after.embedded,
                stale_embeddings=after.stale,
                model=after.model,
                created=after.created,
                updated=after.updated,
                unchanged=after.unchanged,
                failed=after.failed,
                fallback=after.fallback,
            )
        )

    async def get_semantic(self, request: Request) -> Response:
        return _json(SemanticSettings(search=_settings(self.gateway.search_config)))

    async def put_semantic(self, request: Request) -> Response:
        body = await json_object(request)
        current = self.gateway.search_config.model_dump(mode="json", by_alias=True)
        try:
            config = SearchConfig.model_validate({**current, **body})
        except ValidationError as exc:
            raise ApiError(400, "INVALID_CONFIG", f"the search settings are not valid: {_problems(exc)}") from None
        await self.gateway.configure_search(config)
        new = config.model_dump(mode="json", by_alias=True)
        changed = {key: value for key, value in new.items() if current.get(key) != value}
        written, backup = await anyio.to_thread.run_sync(self._write, changed)
        note = (
            f"applied to the running gateway and written to {written}"
            if written is not None
            else "applied to the running gateway only: the gateway has no config file, so the change "
            "ends when it stops (`toolscout config set search...` writes one)"
        )
        answer = SemanticSettings(search=_settings(config), applied=True, written=written, backup=backup, note=note)
        return _json(answer)

    def _write(self, changed: dict[str, Any]) -> tuple[str | None, str | None]:
        """Write the changed `search` keys to the config file, comments kept, with a backup."""
        if self.config_file is None or not changed:
            return None, None
        from toolscout.config.edit import ConfigDocument

        document = ConfigDocument.load(self.config_file)
        for key, value in changed.items():
            document.set(["search", key], value)
        backup = document.save()
        return str(self.config_file), str(backup) if backup is not None else None

    # Routes

    def routes(self) -> tuple[list[Route], list[Route]]:
        """The routes under `/api/v1` (relative to it), and the aliases at other gateways' paths."""
        mine = [
            Route("/servers", _route(self.servers, admin=False), methods=["GET"]),
            Route("/tools", _route(self.tools, admin=False), methods=["GET"]),
            Route("/search", _route(self.search, admin=False), methods=["GET"]),
            Route("/audit", _route(self.audit, admin=False), methods=["GET"]),
            Route("/mcp/call", _route(self.call, admin=False), methods=["POST"]),
            Route("/discovery/stats", _route(self.stats, admin=True), methods=["GET"]),
            Route("/health/semantic", _route(self.semantic_health, admin=True), methods=["GET"]),
            Route("/embeddings/sync", _route(self.sync, admin=True), methods=["POST"]),
            Route("/config/semantic", _route(self.get_semantic, admin=True), methods=["GET"]),
            Route("/config/semantic", _route(self.put_semantic, admin=True), methods=["PUT"]),
        ]
        aliases = [
            Route("/v1/discovery/stats", _route(self.stats, admin=True), methods=["GET"]),
            Route("/health/semantic", _route(self.semantic_health, admin=True), methods=["GET"]),
            Route("/v1/embeddings/sync", _route(self.sync, admin=True), methods=["POST"]),
            Route("/v1/config/semantic", _route(self.get_semantic, admin=True), methods=["GET"]),
            Route("/v1/config/semantic", _route(self.put_semantic, admin=True), methods=["PUT"]),
            Route("/v1/mcp/call", _route(self.call, admin=False), methods=["POST"]),
            Route("/dashboard/api/mcp/execute", _route(self.call, admin=False), methods=["POST"]),
        ]
        return mine, aliases


def _settings(config: SearchConfig) -> dict[str, Any]:
    return config.model_dump(mode="json", by_alias=True)


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in error['loc']) or 'body'}: {error['msg']}" for error in exc.errors())


def _own_lines(principal: Principal, wanted: dict[str, str]) -> dict[str, str]:
    """The filter a client credential's audit question is held to: its namespace's lines (or, without
    a namespace, its label's); another namespace asked for is refused."""
    if principal.admin:
        return {}
    scope: Scope = principal.scope
    if scope.namespace is not None:
        if wanted.get("namespace", scope.namespace) != scope.namespace:
            raise ApiError(
                403, "FORBIDDEN", f"this credential reads the audit lines of namespace {scope.namespace!r} only"
            )
        return {"namespace": scope.namespace}
    if scope.label is None:
        raise ApiError(
            403, "FORBIDDEN", "this credential has neither a namespace nor a label: no audit line is its own"
        )
    return {"label": scope.label}


def _newest_lines(path: Path, wanted: dict[str, str], limit: int) -> list[dict[str, Any]]:
    """The audit lines matching every `wanted` key, newest first: the file, then its rotated copies
    (read from the end, a bounded number of lines, as `toolscout audit tail` reads them)."""
    handle = open_log(path)
    if handle is None:
        return []
    with handle:
        return last_records(handle, path, limit, filters=wanted)[::-1]
