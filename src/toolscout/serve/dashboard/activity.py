"""The Activity page (a placeholder until it is built: it says so)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from toolscout.serve.dashboard.render import page

if TYPE_CHECKING:
    from toolscout.serve.dashboard.context import Dashboard


def routes(dashboard: Dashboard) -> list[BaseRoute]:
    """The page's routes."""

    async def show(request: Request) -> Response:
        return page(request, "placeholder.html", title="Activity")

    return [Route("/activity", show)]
