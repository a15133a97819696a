"""The Tokens page (admins only): issue, list and revoke tokens, and register and remove servers and
callback tools at run time, through the same registry code as the HTTP API (`/api/v1/tokens`,
`/api/v1/registry/...`): the same checks, limits and messages."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from toolscout.errors import RegistryUnavailable
from toolscout.gateway.registrations import Registrations
from toolscout.registry.base import Registry, ServerRegistration, ToolRegistration
from toolscout.registry.requests import (
    RegistrationRefused,
    TokenRequestError,
    issue_token,
    server_registration,
    tool_registration,
)
from toolscout.serve.api import TokenEvents
from toolscout.serve.dashboard.context import Dashboard, DashboardError, require_admin
from toolscout.serve.dashboard.render import page, url
from toolscout.serve.dashboard.servers import registrations

logger = logging.getLogger(__name__)
DEFAULT_TTL_SECONDS = 86_400


def _text(form: FormData, key: str) -> str:
    return str(form.get(key) or "").strip()


def _where(form: FormData) -> dict[str, Any]:
    """The namespace a registration form names, or `global: true` when left empty."""
    namespace = _text(form, "namespace")
    return {"namespace": namespace} if namespace else {"global": True}


def _ttl(form: FormData) -> float:
    text = _text(form, "ttlSeconds")
    try:
        return float(text) if text else DEFAULT_TTL_SECONDS
    except ValueError:
        raise DashboardError(400, f"The time to live must be a number of seconds, not {text!r}.") from None


def _back(message: str, **extra: str) -> Response:
    return RedirectResponse(url("/tokens?" + urlencode({"message": message, **extra})), status_code=303)


Handler = Callable[[Request], Awaitable[Response]]


def _guarded(handler: Handler) -> Handler:
    """`handler` for admins only, with the registry's refusals answered as pages saying what to change."""

    async def answer(request: Request) -> Response:
        require_admin(request)
        try:
            return await handler(request)
        except (TokenRequestError, RegistrationRefused) as exc:  # the message says what to send instead
            raise DashboardError(400, f"{exc} Go back and change the form.") from None
        except RegistryUnavailable as exc:
            raise DashboardError(503, f"{exc.message} Try again shortly.") from None

    return answer


def routes(dashboard: Dashboard) -> list[BaseRoute]:
    """The page and its forms."""
    events = dashboard.principals if isinstance(dashboard.principals, TokenEvents) else None

    def registry() -> Registry:
        if dashboard.registry is None:
            raise DashboardError(409, "This gateway has no registry of tokens (the dashboard runs without one).")
        return dashboard.registry

    def kept() -> Registrations:
        if dashboard.registrations is None:
            raise DashboardError(409, "This gateway takes no run-time registrations here.")
        return dashboard.registrations

    async def show(request: Request) -> Response:
        require_admin(request)
        tokens = [record.public() for record in await registry().tokens()] if dashboard.registry else []
        return page(
            request,
            "tokens.html",
            title="Tokens and registry",
            tokens=sorted(tokens, key=lambda t: t["expiresAt"] or 0),
            registrations=await registrations(dashboard),
            servers=[upstream.name for upstream in dashboard.gateway.upstreams],
            message=request.query_params.get("message"),
            secret=None,
        )

    async def issue(request: Request) -> Response:
        form = await request.form()
        servers = [s.strip() for s in _text(form, "servers").split(",") if s.strip()]
        body: dict[str, Any] = {
            "namespace": _text(form, "namespace"),
            "servers": servers,
            "label": _text(form, "label"),
            "ttlSeconds": _ttl(form),
        }
        record, secret = await issue_token(registry(), body)
        if events is not None:
            events.token_issued()
        logger.info("dashboard: issued token %s (%s) for namespace %s", record.id, record.label, record.namespace)
        tokens = [r.public() for r in await registry().tokens()]
        return page(
            request,
            "tokens.html",
            title="Tokens and registry",
            tokens=tokens,
            registrations=await registrations(dashboard),
            servers=[upstream.name for upstream in dashboard.gateway.upstreams],
            message=f"Issued {record.label} ({record.id}). Copy the token now: it is shown this once.",
            secret=secret,
        )

    async def revoke(request: Request) -> Response:
        token_id = str(request.path_params["token_id"])
        if not await registry().revoke_token(token_id):
            raise DashboardError(404, f"There is no token {token_id!r}; the Tokens page lists them.")
        if events is not None:
            events.token_revoked(token_id)
        logger.info("dashboard: revoked token %s", token_id)
        return _back(f"Revoked {token_id}: it is refused from now on.")

    async def register_server(request: Request) -> Response:
        form = await request.form()
        body: dict[str, Any] = {**_where(form), "name": _text(form, "name"), "url": _text(form, "url")}
        if _text(form, "description"):
            body["description"] = _text(form, "description")
        body["ttlSeconds"] = _ttl(form)
        registration = server_registration(body)
        await kept().put(registration)
        return _back(f"Registered the server {registration.name}: it is connecting.")

    async def register_tool(request: Request) -> Response:
        form = await request.form()
        try:
            schema = json.loads(_text(form, "inputSchema") or "{}")
        except ValueError as exc:
            raise DashboardError(400, f"The input schema is not JSON ({exc}); write a JSON Schema object.") from None
        body: dict[str, Any] = {
            **_where(form),
            "name": _text(form, "name"),
            "description": _text(form, "description"),
            "inputSchema": schema,
            "callbackUrl": _text(form, "callbackUrl"),
            "ttlSeconds": _ttl(form),
        }
        registration = tool_registration(body)
        await kept().put(registration)
        return _back(f"Registered the callback tool {registration.name}.")

    async def remove(request: Request) -> Response:
        form = await request.form()
        kind = ServerRegistration if _text(form, "kind") == "server" else ToolRegistration
        namespace, name = _text(form, "namespace") or None, _text(form, "name")
        if not await kept().remove(kind, namespace, name):
            raise DashboardError(404, f"{name!r} is not registered (any more); the Tokens page lists what is.")
        return _back(f"Removed {name}.")

    return [
        Route("/tokens", show),
        Route("/tokens/issue", _guarded(issue), methods=["POST"]),
        Route("/tokens/{token_id}/revoke", _guarded(revoke), methods=["POST"]),
        Route("/registry/servers", _guarded(register_server), methods=["POST"]),
        Route("/registry/tools", _guarded(register_tool), methods=["POST"]),
        Route("/registry/remove", _guarded(remove), methods=["POST"]),
    ]
