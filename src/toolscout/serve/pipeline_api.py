"""The multi-tenant pipeline's HTTP API under `/api/v1`: its internal routes and its MCP endpoint, on
toolscout's namespaces, registrations and tokens.

    POST /internal/mcp/register-component  {runId, nodeId, toolName, description, inputSchema, callbackUrl,
                                            ttlSeconds?}                     → 201 {runId, nodeId, toolName, type, ...}
    POST /internal/mcp/register-local      {runId, nodeId, toolName, endpoint, serverId?, description?,
                                            headers?, transport?, ttlSeconds?} → 201 the same
    POST /internal/mcp/generate-token      {runId, allowedNodeIds, ttlSeconds?, label?}
                                           → 201 {token, id, expiresAt, runId, allowedNodeIds}
    GET  /internal/mcp/runs/{runId}/tools  → {runId, tools: {nodeId: {nodeId, toolName, type, endpoint,
                                                                      serverId, ...}}}
    POST /mcp/gateway                      the gateway's MCP endpoint (/mcp), at the pipeline's path

`runId` is a namespace, `nodeId` a registration's name, `allowedNodeIds` a token's `servers` (each a
node id or a group's prefix); registry/pipeline.py reads the bodies. A registration is written and
applied as `POST /registry/servers` and `/registry/tools` do (gateway/registrations.py: 409 for a
name taken, 429 over a limit). Registering and issuing a run's token need an admin key, or a token
issued with `canRegister` for that run's namespace (the registering side's own credential); a token
issued by such a token lives no longer than it, and never registers itself. The run's listing is what
a person debugging a run reads: every registration of the run by node id, with how its upstream is
doing, from whichever registry backs the gateway (SQLite or Redis).

The agent lists and calls the run's tools at `/api/v1/mcp/gateway` with the token; the gateway's
`mode: passthrough` with `toolNames: registered` lists them as the pipeline names them (a component
by its `toolName`, an endpoint's tools as `{toolName}__{tool}`).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from toolscout.config.scopes import NAMESPACE_PATTERN
from toolscout.gateway.registrations import Registration, Registrations
from toolscout.registry.base import ServerRegistration
from toolscout.registry.pipeline import (
    component_registration,
    local_registration,
    run_registrations,
    run_token_request,
    run_view,
)
from toolscout.registry.requests import TokenRequestError, issue_token
from toolscout.serve.api import ApiError, TokenEvents, answering, json_object, require_registrar
from toolscout.serve.auth import principal_of

logger = logging.getLogger(__name__)

INTERNAL = "/internal/mcp"


class PipelineApi:
    """The pipeline's handlers, over one `Registrations` (its registry, and the gateway it is kept in)."""

    def __init__(self, registrations: Registrations, events: TokenEvents | None = None) -> None:
        self._registrations = registrations
        self._events = events

    def _node(self, registration: Registration) -> dict[str, Any]:
        servers = [registration] if isinstance(registration, ServerRegistration) else []
        tools = [] if isinstance(registration, ServerRegistration) else [registration]
        view = run_view(str(registration.namespace), servers, tools, {registration.name: self._status(registration)})
        return {"runId": registration.namespace, **view["tools"][registration.name]}

    def _status(self, registration: Registration) -> dict[str, Any]:
        return self._registrations.status(registration)

    async def _register(self, request: Request, registration: Registration) -> Response:
        require_registrar(request, registration.namespace)
        await self._registrations.put(registration)
        logger.info("run %s registered node %s", registration.namespace, registration.name)
        return JSONResponse(self._node(registration), status_code=201)

    async def register_component(self, request: Request) -> Response:
        return await self._register(request, component_registration(await json_object(request)))

    async def register_local(self, request: Request) -> Response:
        return await self._register(request, local_registration(await json_object(request)))

    async def generate_token(self, request: Request) -> Response:
        try:
            wanted = run_token_request(await json_object(request))
        except TokenRequestError as exc:
            raise ApiError(400, "INVALID_REQUEST", str(exc)) from None
        require_registrar(request, wanted["namespace"])
        issuer_expiry = principal_of(request).expires_at
        now = time.time()
        if issuer_expiry is not None:  # no longer than the credential that asks for it
            left = issuer_expiry - now
            if left <= 0:
                raise ApiError(403, "FORBIDDEN", "this token has expired; ask for a new one")
            wanted["ttlSeconds"] = min(wanted["ttlSeconds"], left)
        try:
            record, secret = await issue_token(self._registrations.registry, wanted, now)
        except TokenRequestError as exc:
            raise ApiError(400, "INVALID_REQUEST", str(exc)) from None
        if self._events is not None:
            self._events.token_issued()
        logger.info("issued token %s for run %s", record.id, record.namespace)
        answer = {
            "token": secret,
            "id": record.id,
            "expiresAt": record.expires_at,
            "runId": record.namespace,
            "allowedNodeIds": list(record.servers),
        }
        return JSONResponse(answer, status_code=201)

    async def run_tools(self, request: Request) -> Response:
        run_id = str(request.path_params["run_id"])
        if not NAMESPACE_PATTERN.match(run_id):
            raise ApiError(400, "INVALID_NAMESPACE", f"runId must be 1-64 letters, digits, '_' or '-', got {run_id!r}")
        require_registrar(request, run_id)
        servers, tools = await run_registrations(self._registrations.registry, run_id)
        status = {r.name: self._status(r) for r in [*tools, *servers]}
        return JSONResponse(run_view(run_id, servers, tools, status))


def pipeline_routes(registrations: Registrations, events: TokenEvents | None = None) -> list[Route]:
    """The pipeline's internal routes, to mount under `/api/v1` (its MCP endpoint is serve/http.py's)."""
    api = PipelineApi(registrations, events)
    return [
        Route(f"{INTERNAL}/register-component", answering(api.register_component), methods=["POST"]),
        Route(f"{INTERNAL}/register-local", answering(api.register_local), methods=["POST"]),
        Route(f"{INTERNAL}/generate-token", answering(api.generate_token), methods=["POST"]),
        Route(f"{INTERNAL}/runs/{{run_id}}/tools", answering(api.run_tools), methods=["GET"]),
    ]
