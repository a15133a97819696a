"""The gateway's HTTP API under `/api/v1` (admin only): issuing, listing and revoking tokens, and
the mount other API routes join (the registry's).

* `POST /api/v1/tokens` `{namespace, servers, tools?, pinnedTools?, ttlSeconds, label, requestsPerMinute?}`
  -> `201 {"id", "token", "expiresAt"}`: the token (`ts_...`) is in this answer only;
* `GET /api/v1/tokens` -> `{"tokens": [{"id", "label", "namespace", "servers", "expiresAt", ...}]}`,
  never a secret or its hash;
* `DELETE /api/v1/tokens/{id}` -> `204` (`404` when there is no such token).

`expiresAt` is seconds since the epoch (a number), everywhere. Errors have the shape of
`toolscout.serve.api_common` (`api_exception_handlers` turns an `ApiError` raised by any route into it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol, runtime_checkable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from toolscout.errors import RegistryUnavailable
from toolscout.registry.base import Registry
from toolscout.registry.tokens import TokenRequestError, issue_token
from toolscout.serve.api_common import ApiError, json_object, require_admin
from toolscout.serve.auth import error_response

logger = logging.getLogger(__name__)

API_PREFIX = "/api/v1"


@runtime_checkable
class TokenEvents(Protocol):
    """Who must hear of tokens issued and revoked through the API at once (the bearer resolver)."""

    def token_issued(self) -> None: ...

    def token_revoked(self, token_id: str) -> None: ...


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.code, exc.message)


async def _registry_unavailable(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RegistryUnavailable)
    return error_response(503, exc.code, exc.message, {"Retry-After": "1"})


api_exception_handlers: dict[Any, Callable[[Request, Exception], Coroutine[Any, Any, Response]]] = {
    ApiError: _api_error,
    RegistryUnavailable: _registry_unavailable,
}
"""For the Starlette app the API is mounted in: an `ApiError` raised by a route is its answer."""


def token_routes(registry: Registry, events: TokenEvents | None = None) -> list[BaseRoute]:
    """The routes of `/api/v1/tokens`."""

    async def create(request: Request) -> Response:
        require_admin(request)
        data = await json_object(request)
        try:
            record, secret = await issue_token(registry, data)
        except TokenRequestError as exc:
            raise ApiError(400, "INVALID_REQUEST", str(exc)) from None
        if events is not None:
            events.token_issued()
        logger.info("issued token %s (%s) for namespace %s", record.id, record.label, record.namespace)
        return JSONResponse({"id": record.id, "token": secret, "expiresAt": record.expires_at}, status_code=201)

    async def listing(request: Request) -> Response:
        require_admin(request)
        return JSONResponse({"tokens": [record.public() for record in await registry.tokens()]})

    async def revoke(request: Request) -> Response:
        require_admin(request)
        token_id = str(request.path_params["token_id"])
        if not await registry.revoke_token(token_id):
            raise ApiError(404, "NOT_FOUND", f"no token {token_id!r}; `GET {API_PREFIX}/tokens` lists them")
        if events is not None:
            events.token_revoked(token_id)
        logger.info("revoked token %s", token_id)
        return Response(status_code=204)

    return [
        Route("/tokens", create, methods=["POST"]),
        Route("/tokens", listing, methods=["GET"]),
        Route("/tokens/{token_id}", revoke, methods=["DELETE"]),
    ]


def api_mount(registry: Registry, events: TokenEvents | None = None, routes: Sequence[BaseRoute] = ()) -> Mount:
    """`/api/v1`: the token routes and `routes` (each relative to it, as `/registry/servers`)."""
    return Mount(API_PREFIX, routes=[*token_routes(registry, events), *routes])
