"""The Servers page: each upstream's status (with the reason and the next retry), protocol era and
version, tool counts, instructions and how long it has been connected; buttons to connect again at
once and to disable a server in the config file; and, for admins, the servers and callback tools
registered at run time with their namespaces and time left."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from toolscout.config.edit import ConfigDocument
from toolscout.config.scopes import current_scope
from toolscout.errors import ServerNotFound
from toolscout.gateway.upstreams import CONFIG_OWNER
from toolscout.registry.base import ServerRegistration, ToolRegistration
from toolscout.registry.requests import public_view
from toolscout.serve.auth import principal_of
from toolscout.serve.dashboard.config_writes import edit_config
from toolscout.serve.dashboard.context import Dashboard, DashboardError, require_admin
from toolscout.serve.dashboard.render import page, url
from toolscout.upstream import Upstream


def since(epoch: float | None) -> str | None:
    """An epoch time as an ISO date and time (UTC), to the second."""
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def server_row(dashboard: Dashboard, upstream: Upstream) -> dict[str, Any]:
    """What the page shows of one server."""
    entry = dashboard.gateway.server_status(upstream)
    entry["era"] = {"2026-07-28": "stateless (2026-07-28)"}.get(upstream.era or "", upstream.era)
    entry["connectedSince"] = since(upstream.connected_since)
    entry["configured"] = dashboard.gateway.owner_of(upstream.name) == CONFIG_OWNER
    return entry


async def registrations(dashboard: Dashboard) -> list[dict[str, Any]]:
    """Every live registration (servers and callback tools), newest last, with its status."""
    if dashboard.registrations is None:
        return []
    registry = dashboard.registrations.registry
    now = time.time()
    found: list[ServerRegistration | ToolRegistration] = [
        *await registry.servers(None, every=True),
        *await registry.tools(None, every=True),
    ]
    rows: list[dict[str, Any]] = []
    for registration in found:
        if registration.expired(now):
            continue
        row = {**public_view(registration), **dashboard.registrations.status(registration)}
        row["kind"] = "server" if isinstance(registration, ServerRegistration) else "callback tool"
        expires = registration.expires_at
        row["expiresIn"] = None if expires is None else max(0, round(expires - now))
        rows.append(row)
    return rows


def routes(dashboard: Dashboard) -> list[BaseRoute]:
    """The page, and its two buttons."""

    async def show(request: Request) -> Response:
        upstreams = dashboard.gateway.visibility.upstreams(current_scope())
        admin = principal_of(request).admin
        return page(
            request,
            "servers.html",
            title="Servers",
            servers=[server_row(dashboard, upstream) for upstream in upstreams],
            registrations=await registrations(dashboard) if admin else [],
            admin=admin,
            editable=dashboard.config_path is not None,
            message=request.query_params.get("message"),
        )

    def visible(name: str) -> Upstream:
        try:
            return dashboard.gateway.visibility.named(name, current_scope())
        except ServerNotFound:
            raise DashboardError(404, f"There is no server {name!r}; the Servers page lists them.") from None

    async def reconnect(request: Request) -> Response:
        name = str(request.path_params["name"])
        upstream = visible(name)
        done = upstream.retry_now()
        message = f"Connecting to {name} now." if done else f"{name} is {upstream.status.value}: nothing to retry."
        return RedirectResponse(url(f"/servers?{_query(message)}"), status_code=303)

    async def disable(request: Request) -> Response:
        require_admin(request)
        name = str(request.path_params["name"])
        visible(name)
        if dashboard.gateway.owner_of(name) != CONFIG_OWNER:
            raise DashboardError(409, f"{name} was registered at run time, not configured: remove it under Tokens.")

        def change(document: ConfigDocument) -> None:
            if document.get(["mcpServers", name]) is None:
                raise DashboardError(404, f"{name} is not in the config file's mcpServers; nothing was saved.")
            document.set(["mcpServers", name, "disabled"], True)

        saved = await edit_config(dashboard, change)
        message = f"Disabled {name} in {saved.path}" + (f" (backup: {saved.backup.name})." if saved.backup else ".")
        return RedirectResponse(url(f"/servers?{_query(message)}"), status_code=303)

    return [
        Route("/servers", show),
        Route("/servers/{name}/reconnect", reconnect, methods=["POST"]),
        Route("/servers/{name}/disable", disable, methods=["POST"]),
    ]


def _query(message: str) -> str:
    from urllib.parse import urlencode

    return urlencode({"message": message})
