"""The Run page: pick a tool, fill the form generated from its input schema, run it and see the result.

A run goes through `Gateway.execute`, the path `execute_tool` takes: the logged-in principal's
scope, the tool rules, the argument validation and the audit log. Type mistakes the form can see
(a word in a number box, JSON that does not parse) are shown before anything is sent; the
gateway's validation violations are shown next to the fields they concern (forms.py). Beside the
form, smart mode's request box (smart_box.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from toolscout.catalog import CatalogTool
from toolscout.config.scopes import current_scope
from toolscout.errors import ArgumentValidationError, ToolscoutError
from toolscout.serve.dashboard.forms import field_errors, form_for, parse_form, render_form
from toolscout.serve.dashboard.render import page, url
from toolscout.serve.dashboard.results import render_result
from toolscout.serve.dashboard.sessions import CSRF_FIELD, csrf_token_of
from toolscout.serve.dashboard.smart_box import Answer, ask, confirm

if TYPE_CHECKING:
    from toolscout.serve.dashboard.context import Dashboard

MAX_PICKER_TOOLS = 2_000
"""The most tools the picker lists; a larger catalog's tools are reached from Search or Tools."""
CLIENT = "dashboard"
"""The client the audit log names for a run from this page (the principal's label is added too)."""


def routes(dashboard: Dashboard) -> list[BaseRoute]:
    """The page's routes: GET shows the picker and a tool's form, POST runs it."""

    async def show(request: Request) -> Response:
        server = request.query_params.get("server", "")
        tool = request.query_params.get("tool", "")
        if pick := request.query_params.get("pick", ""):
            server, _, tool = pick.partition("/")  # the picker's `server/tool` (a server name has no "/")
        return await _page(request, dashboard, server, tool)

    async def submit(request: Request) -> Response:
        form = await request.form()
        submitted = {key: value for key, value in form.multi_items() if isinstance(value, str)}
        return await _page(request, dashboard, submitted.get("server", ""), submitted.get("tool", ""), submitted)

    async def ask_smart(request: Request) -> Response:
        form = await request.form()
        words = str(form.get("request") or "").strip()
        return await _page(request, dashboard, "", "", smart=await ask(request, dashboard.smart, words), words=words)

    async def confirm_smart(request: Request) -> Response:
        form = await request.form()
        sent = {key: value for key, value in form.multi_items() if isinstance(value, str)}
        answer = await confirm(request, dashboard.smart, sent)
        return await _page(request, dashboard, "", "", smart=answer, words=sent.get("request", ""))

    return [
        Route("/run", show, methods=["GET"]),
        Route("/run", submit, methods=["POST"]),
        Route("/run/smart", ask_smart, methods=["POST"]),
        Route("/run/smart/confirm", confirm_smart, methods=["POST"]),
    ]


async def _page(
    request: Request,
    dashboard: Dashboard,
    server: str,
    tool: str,
    submitted: dict[str, str] | None = None,
    *,
    smart: Answer | None = None,
    words: str = "",
) -> Response:
    gateway = dashboard.gateway
    values: dict[str, Any] = {"server": server, "tool": tool, "picker": picker(dashboard), "form": None}
    values.update(result=None, problem=None, entry=None, smart=dashboard.smart is not None)
    values.update(smart_request=words, smart_result=None, planned=None)
    if smart is not None:
        values.update(smart_result=smart.shown, planned=smart.planned)
        return page(request, "run.html", title="Run a tool", status=smart.status, **values)
    if not (server and tool):
        return page(request, "run.html", title="Run a tool", **values)
    try:
        entry = await gateway.tool(server, tool)
    except ToolscoutError as exc:
        values["problem"] = f"{exc.message} ({exc.code})"
        return page(request, "run.html", title="Run a tool", status=404, **values)
    values["entry"] = _described(entry)
    form = form_for(entry.input_schema)
    errors: dict[str, list[str]] = {}
    status = 200
    if submitted is not None:
        arguments, errors = parse_form(form, submitted)
        if not errors:
            try:
                result = await gateway.execute(server, tool, arguments, client=CLIENT)
            except ArgumentValidationError as exc:
                errors = field_errors(form, exc.details.get("violations", []))
            except ToolscoutError as exc:
                errors = {"": [f"{exc.message} ({exc.code})"]}
            else:
                values["result"] = Markup(render_result(result))  # escaped by results.py
        status = 422 if errors else 200
    hidden = {CSRF_FIELD: csrf_token_of(request), "server": server, "tool": tool}
    html = render_form(form, action=url("/run"), hidden=hidden, values=submitted, errors=errors)
    values["form"] = Markup(html)  # escaped by forms.py
    return page(request, "run.html", title=f"Run {server}.{tool}", status=status, **values)


_HINTS = {
    "read_only_hint": "read-only",
    "destructive_hint": "destructive",
    "idempotent_hint": "idempotent",
    "open_world_hint": "open world",
}


def _described(entry: CatalogTool) -> dict[str, Any]:
    annotations = entry.tool.annotations
    hints = [shown for field, shown in _HINTS.items() if annotations is not None and getattr(annotations, field, None)]
    name = f"{entry.server}.{entry.name}"
    return {"name": name, "description": entry.tool.description or "", "hints": hints, "tags": entry.tags}


def picker(dashboard: Dashboard) -> list[tuple[str, list[str]]]:
    """The tools the principal may run, by server (at most `MAX_PICKER_TOOLS` in all)."""
    visibility = dashboard.gateway.visibility
    scope = current_scope()
    found: list[tuple[str, list[str]]] = []
    left = MAX_PICKER_TOOLS
    for upstream in visibility.upstreams(scope):
        names = [t.name for t in visibility.tools(scope, upstream.name)][:left]
        left -= len(names)
        if names:
            found.append((upstream.name, names))
        if left <= 0:
            break
    return found
