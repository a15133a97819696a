"""The dashboard as an ASGI app: `dashboard_app` serves every page under `/dashboard` behind the
login (auth.py); `PAGES` are the modules whose routes it serves.

`toolscout serve --transport http` serves it beside `/mcp` (serve/http.py `dispatching`); `toolscout dashboard`
serves it alone on loopback for a stdio setup's config.
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import ModuleType

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from toolscout.serve.dashboard import activity, run, search, servers, tokens, tools
from toolscout.serve.dashboard.auth import DashboardGate, login_routes
from toolscout.serve.dashboard.context import Dashboard, DashboardError
from toolscout.serve.dashboard.render import PREFIX, SECURITY_HEADERS, render

logger = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"


PAGES: tuple[ModuleType, ...] = (servers, tools, search, run, activity, tokens)
"""The modules of the pages: each has `routes(dashboard) -> list[Route]`."""


def page_routes(dashboard: Dashboard) -> list[BaseRoute]:
    """Every page's routes (relative to `/dashboard`)."""
    routes: list[BaseRoute] = []
    for module in PAGES:
        routes += module.routes(dashboard)
    return routes


async def _home(request: Request) -> Response:
    return RedirectResponse(f"{PREFIX}/servers", status_code=303)


async def _refused(request: Request, exc: Exception) -> Response:
    if isinstance(exc, DashboardError):
        status, message = exc.status, exc.message
    elif isinstance(exc, HTTPException):
        status = exc.status_code
        message = "There is no such page." if status == 404 else str(exc.detail)
    else:
        logger.error("dashboard: %s %s failed", request.method, request.url.path, exc_info=exc)
        status, message = 500, "Something went wrong; see the gateway's log."
    return HTMLResponse(render("refused.html", status=status, message=message), status, headers=SECURITY_HEADERS)


def dashboard_app(dashboard: Dashboard) -> ASGIApp:
    """The dashboard: every page under `/dashboard`, behind its login and POST checks."""
    routes: list[BaseRoute] = [
        Route("/", _home),
        *login_routes(dashboard.principals, dashboard.sessions),
        Mount("/static", StaticFiles(directory=STATIC)),
        *page_routes(dashboard),
    ]
    app = Starlette(
        routes=[Route(PREFIX, _home), Mount(PREFIX, routes=routes)],
        exception_handlers={DashboardError: _refused, HTTPException: _refused, Exception: _refused},
    )
    return DashboardGate(app, dashboard.principals, dashboard.sessions)
