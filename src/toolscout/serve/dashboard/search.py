"""The Search page, the playground: a query's ranked tools with their relevance (and each ranker's
contribution, when the gateway explains its ranking), and "this should have been found", which
records the query with the expected tool for `toolscout eval` (playground.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from toolscout.errors import ToolscoutError
from toolscout.serve.auth import principal_of
from toolscout.serve.dashboard.context import DashboardError, require_admin
from toolscout.serve.dashboard.playground import (
    Label,
    hits_table,
    label_form,
    labelled_queries_path,
    parse_expected,
    query_form,
    ranked,
    record_label,
)
from toolscout.serve.dashboard.render import page, url
from toolscout.serve.dashboard.run import picker
from toolscout.serve.dashboard.sessions import CSRF_FIELD, csrf_token_of

if TYPE_CHECKING:
    from toolscout.serve.dashboard.context import Dashboard

LIMIT = 10
MAX_QUERY_CHARS = 2_000
"""The longest query a label records (a search refuses longer ones before this: `search.maxQueryChars`)."""


def routes(dashboard: Dashboard) -> list[BaseRoute]:
    """The page's routes: GET searches, POST /search/label records a labelled query."""

    async def show(request: Request) -> Response:
        query = request.query_params.get("q", "")
        server = request.query_params.get("server", "")
        values: dict[str, Any] = {"query_form": Markup(query_form(query, url("/search"), server))}
        values.update(hits=None, connecting=[], problem=None, label=None, recorded=request.query_params.get("recorded"))
        status = 200
        if query.strip():
            try:
                hits = await ranked(dashboard.gateway, query, server=server or None, limit=LIMIT)
            except ToolscoutError as exc:
                values["problem"], status = f"{exc.message} ({exc.code})", 400
            else:
                values["hits"] = Markup(hits_table(hits, run_link=url("/run")))
                values["connecting"] = dashboard.gateway.connecting()
                if principal_of(request).admin:
                    tools = [(s, t) for s, names in picker(dashboard) for t in names]
                    hidden = {CSRF_FIELD: csrf_token_of(request)}
                    form = label_form(query, tools, url("/search/label"), hidden, labelled_queries_path())
                    values["label"] = Markup(form)
        return page(request, "search.html", title="Search", status=status, **values)

    async def label(request: Request) -> Response:
        require_admin(request)  # the labels file is the operator's, on the gateway's machine
        form = await request.form()
        query, expected = str(form.get("q") or ""), str(form.get("expected") or "")
        if len(query) > MAX_QUERY_CHARS:
            raise DashboardError(400, f"The query is longer than {MAX_QUERY_CHARS:,} characters; shorten it.")
        try:
            server, tool = parse_expected(expected)
            await dashboard.gateway.tool(server, tool)  # a label names a tool of the catalog, as `eval` requires
            _, written = await record_label(Label(query, server, tool))
        except ToolscoutError as exc:
            raise DashboardError(400, exc.message) from None
        except OSError as exc:
            raise DashboardError(500, f"Cannot write {labelled_queries_path()}: {exc.strerror or exc}.") from None
        answer = urlencode({"q": query, "recorded": f"{server}.{tool}" if written else "already"})
        return RedirectResponse(f"{url('/search')}?{answer}", status_code=303)

    return [Route("/search", show, methods=["GET"]), Route("/search/label", label, methods=["POST"])]
