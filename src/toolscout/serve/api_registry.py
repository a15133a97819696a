"""The HTTP API's registry routes (under `/api/v1`, admin only): servers and callback tools registered
at run time into a namespace (spec 002's register-local and register-component).

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
write reaches the gateway before the answer (`Registrations.put`): a 201 means the server is connecting.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from toolscout.config.scopes import NAMESPACE_PATTERN
from toolscout.errors import RegistryUnavailable
from toolscout.gateway.registrations import Registration, Registrations
from toolscout.registry.base import ServerRegistration, ToolRegistration
from toolscout.registry.limits import TooManyRegistrations
from toolscout.registry.requests import (
    NameClash,
    RegistrationRefused,
    public_view,
    server_registration,
    tool_registration,
)
from toolscout.serve.api_common import ApiError, json_object, require_admin
from toolscout.serve.auth import error_response

logger = logging.getLogger(__name__)

Handler = Callable[[Request], Awaitable[Response]]


def _answering(handler: Handler) -> Handler:
    """`handler` behind the admin check, its refusals answered in the API's error shape."""

    async def answer(request: Request) -> Response:
        try:
            require_admin(request)
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
        await self._registrations.put(registration)
        return JSONResponse(self._entry(registration), status_code=201)

    async def post_tool(self, request: Request) -> Response:
        registration = tool_registration(await json_object(request))
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
            Route(f"/registry/{kind}", _answering(post), methods=["POST"]),
            Route(f"/registry/{kind}", _answering(get), methods=["GET"]),
            Route(f"/registry/{kind}/{{namespace}}/{{name}}", _answering(delete), methods=["DELETE"]),
            Route(f"/registry/{kind}/{{name}}", _answering(delete), methods=["DELETE"]),
        ]
    return routes
