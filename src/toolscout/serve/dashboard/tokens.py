"""The Tokens page (a placeholder until it is built: it says so)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from toolscout.serve.dashboard.context import Dashboard, require_admin
from toolscout.serve.dashboard.render import page


def routes(dashboard: Dashboard) -> list[BaseRoute]:
    """The page's routes."""

    async def show(request: Request) -> Response:
        require_admin(request)
        return page(request, "placeholder.html", title="Tokens")

    return [Route("/tokens", show)]
