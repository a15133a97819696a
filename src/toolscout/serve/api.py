"""The gateway's HTTP API under `/api/v1`, for admin keys only: issuing, listing and revoking tokens,
and registering servers and callback tools at run time.

The token routes:

* `POST /api/v1/tokens` `{namespace, servers, tools?, pinnedTools?, ttlSeconds, label, requestsPerMinute?}`
  answers `201 {"id", "token", "expiresAt"}`; the token (`ts_...`) is in this answer only;
* `GET /api/v1/tokens` answers `{"tokens": [{"id", "label", "namespace", "servers", "expiresAt", ...}]}`,
  never a secret or its hash;
* `DELETE /api/v1/tokens/{id}` answers `204`, or `404` when there is no such token.

`expiresAt` is seconds since the epoch (a number), everywhere.

The registry routes register a server, or a callback tool, into a namespace: a developer's local
server made reachable to the agents of that namespace, or a component's function offered as a tool.

    POST   /registry/servers                      {namespace | global, name, url, headers?, description?,
                                                   ttlSeconds?, transport?}           → 201 the registration
    GET    /registry/servers[?namespace=N]        → {"servers": [...]} with status and last error
    DELETE /registry/servers/{namespace}/{name}   → 204, or 404
    DELETE /registry/servers/{name}               → the same for a global registration
    POST   /registry/tools                        {namespace | global, name, description, inputSchema,
                                                   callbackUrl, ttlSeconds?}          → 201 the registration
    GET    /registry/tools[?namespace=N]          → {"tools": [...]}
    DELETE /registry/tools/{namespace}/{name}, /registry/tools/{name}

A body the registry refuses is 400 saying what to send (registry/requests.py); a name taken by a
configured server or by a registration of the other kind is 409; a new registration over
`registry.maxRegistrationsPerNamespace` or `registry.maxRegistrations` is 429 naming the limit. Each
write reaches the gateway before the answer (`Registrations.put`), so a 201 means the server is
connecting.

Every error is `{"error": {"code": ..., "message": ...}}` (`error_response`, shared with
authentication) with the HTTP status that says what kind of mistake it was: 400 a bad body, 401 no
credential, 403 not an admin, 404 unknown, 409 a name taken, 413 too large. The message says what
to do next and never echoes a credential. `api_exception_handlers` turns an `ApiError` raised by any
route into that answer.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Protocol, cast, runtime_checkable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from toolscout.config.scopes import NAMESPACE_PATTERN
from toolscout.errors import RegistryUnavailable
from toolscout.gateway.registrations import Registration, Registrations
from toolscout.registry.base import Registry, ServerRegistration, ToolRegistration
from toolscout.registry.requests import (
    NameClash,
    RegistrationRefused,
    TokenRequestError,
    TooManyRegistrations,
    issue_token,
    public_view,
    server_registration,
    tool_registration,
)
from toolscout.serve.auth import error_response, principal_of
from toolscout.serve.stdio import too_deep

logger = logging.getLogger(__name__)

API_PREFIX = "/api/v1"
MAX_BODY_BYTES = 1_000_000
"""The largest API request body: a tool's input schema fits many times over."""
MAX_BODY_DEPTH = 64
"""The deepest nesting of objects and arrays in an API request body: a tool's input schema nests a few
levels (each property two: `properties`, then its schema), so 64 leave room for about 30 levels of
properties, while Python's parser and jsonschema, which recurse, stay far from their limits."""


class ApiError(Exception):
    """A refusal of an API request, answered as `error_response` (raised inside a handler)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def require_admin(request: Request) -> None:
    """Refuse (403) a request whose principal may not use the API (a client key or issued token)."""
    if not principal_of(request).admin:
        raise ApiError(
            403,
            "FORBIDDEN",
            "this API needs an admin key (auth.adminKeys); client keys and tokens may use /mcp and "
            f"GET {API_PREFIX}/servers, /tools, /search, /audit and POST {API_PREFIX}/mcp/call",
        )


def require_registrar(request: Request, namespace: str | None = None, *, anywhere: bool = False) -> None:
    """Refuse (403) a request whose principal may not register into `namespace` (None: the global one):
    an admin may anywhere, a token issued with `canRegister` into its own namespace only. `anywhere`:
    only whether it may register into some namespace (before the body says which)."""
    principal = principal_of(request)
    if principal.admin:
        return
    own = principal.registers_in
    if own is None:
        raise ApiError(
            403,
            "FORBIDDEN",
            'registering needs an admin key (auth.adminKeys) or a token issued with "canRegister": true '
            f"for the namespace (POST {API_PREFIX}/tokens)",
        )
    if not anywhere and namespace != own:
        where = f"namespace {namespace!r}" if namespace is not None else "the global namespace"
        raise ApiError(
            403,
            "FORBIDDEN",
            f"this token registers into its own namespace {own!r} only, not {where}; an admin key registers anywhere",
        )


async def json_object(request: Request) -> dict[str, Any]:
    """The request's body as a JSON object, or `ApiError` saying what is wrong with it."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise ApiError(413, "TOO_LARGE", f"the request body is over {MAX_BODY_BYTES} bytes")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(400, "INVALID_JSON", f"the request body is not UTF-8 ({exc}); send a JSON object") from None
    if too_deep(text, MAX_BODY_DEPTH):  # before parsing: the parser (and what reads the result) recurses
        raise ApiError(
            400, "INVALID_JSON", f"the request body nests objects and arrays more than {MAX_BODY_DEPTH} deep"
        )
    try:
        data = json.loads(text or "null")
    except ValueError as exc:
        raise ApiError(400, "INVALID_JSON", f"the request body is not JSON ({exc}); send a JSON object") from None
    if not isinstance(data, dict):
        raise ApiError(400, "INVALID_JSON", "the request body must be a JSON object")
    return cast(dict[str, Any], data)


# Tokens


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
    """Return the mount at `/api/v1`: the token routes and `routes` (each relative to it, as `/registry/servers`)."""
    return Mount(API_PREFIX, routes=[*token_routes(registry, events), *routes])


# Registrations

Handler = Callable[[Request], Awaitable[Response]]


def answering(handler: Handler) -> Handler:
    """Return `handler` behind the check that its principal may register somewhere (the handler checks
    where), with its refusals answered in the API's error shape."""

    async def answer(request: Request) -> Response:
        try:
            require_registrar(request, anywhere=True)
            return await handler(request)
        except ApiError as exc:
            return error_response(exc.status, exc.code, exc.message)
        except NameClash as exc:
            return error_response(409, "NAME_TAKEN", str(exc))
        except TooManyRegistrations as exc:  # the message names the limit and its config key
            return error_response(429, "TOO_MANY_REGISTRATIONS", str(exc))
        except RegistrationRefused as exc:
            return error_response(400, "INVALID_REGISTRATION", str(exc))
        except RegistryUnavailable as exc:  # Redis down: the caller may retry; the message says where
            return error_response(503, exc.code, exc.message, {"Retry-After": "1"})
        except Exception:  # the registry file unreadable, say: the gateway goes on, the caller may retry
            logger.exception("registry API: %s %s failed", request.method, request.url.path)
            return error_response(
                503, "REGISTRY_UNAVAILABLE", "the registry could not be read or written; see the gateway's log"
            )

    return answer


def _namespace_filter(request: Request) -> str | None:
    namespace = request.query_params.get("namespace")
    if namespace is not None and not NAMESPACE_PATTERN.match(namespace):
        message = f"namespace must be 1-64 letters, digits, '_' or '-', got {namespace!r}"
        raise ApiError(400, "INVALID_NAMESPACE", message)
    return namespace


def _address(request: Request) -> tuple[str | None, str]:
    """The namespace (None: global) and name a DELETE's path names."""
    namespace: str | None = request.path_params.get("namespace")
    return namespace, request.path_params["name"]


class RegistryApi:
    """The handlers, over one `Registrations` (the registry and the gateway it is kept in)."""

    def __init__(self, registrations: Registrations) -> None:
        self._registrations = registrations

    def _entry(self, registration: Registration) -> dict[str, Any]:
        return {**public_view(registration), **self._registrations.status(registration)}

    async def _listed(self, request: Request, kind: type[Registration]) -> list[dict[str, Any]]:
        namespace = _namespace_filter(request)
        own = principal_of(request).registers_in
        if not principal_of(request).admin:  # a registering token lists its own namespace
            require_registrar(request, namespace or own)
            namespace = own
        registry = self._registrations.registry
        every = namespace is None
        found: list[Registration] = []
        if kind is ServerRegistration:
            found.extend(await registry.servers(namespace, every=every))
        else:
            found.extend(await registry.tools(namespace, every=every))
        now = time.time()  # an entry expired but not swept yet is gone already
        return [self._entry(registration) for registration in found if not registration.expired(now)]

    async def post_server(self, request: Request) -> Response:
        registration = server_registration(await json_object(request))
        require_registrar(request, registration.namespace)
        await self._registrations.put(registration)
        return JSONResponse(self._entry(registration), status_code=201)

    async def post_tool(self, request: Request) -> Response:
        registration = tool_registration(await json_object(request))
        require_registrar(request, registration.namespace)
        await self._registrations.put(registration)
        return JSONResponse(self._entry(registration), status_code=201)

    async def get_servers(self, request: Request) -> Response:
        return JSONResponse({"servers": await self._listed(request, ServerRegistration)})

    async def get_tools(self, request: Request) -> Response:
        return JSONResponse({"tools": await self._listed(request, ToolRegistration)})

    async def delete_server(self, request: Request) -> Response:
        return await self._delete(request, ServerRegistration)

    async def delete_tool(self, request: Request) -> Response:
        return await self._delete(request, ToolRegistration)

    async def _delete(self, request: Request, kind: type[Registration]) -> Response:
        namespace, name = _address(request)
        require_registrar(request, namespace)
        if await self._registrations.remove(kind, namespace, name):
            return Response(status_code=204)
        what = "server" if kind is ServerRegistration else "callback tool"
        where = f"namespace {namespace!r}" if namespace is not None else "the global namespace"
        raise ApiError(404, "NOT_FOUND", f"no {what} {name!r} is registered in {where}; GET lists what is")


def registry_routes(registrations: Registrations) -> list[Route]:
    """The registry's routes, to mount under `/api/v1`."""
    api = RegistryApi(registrations)
    routes: list[Route] = []
    for kind, post, get, delete in (
        ("servers", api.post_server, api.get_servers, api.delete_server),
        ("tools", api.post_tool, api.get_tools, api.delete_tool),
    ):
        routes += [
            Route(f"/registry/{kind}", answering(post), methods=["POST"]),
            Route(f"/registry/{kind}", answering(get), methods=["GET"]),
            Route(f"/registry/{kind}/{{namespace}}/{{name}}", answering(delete), methods=["DELETE"]),
            Route(f"/registry/{kind}/{{name}}", answering(delete), methods=["DELETE"]),
        ]
    return routes
