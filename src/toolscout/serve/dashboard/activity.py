"""The Activity page: the audit log's last executions with filters and a live tail, per-tool call
counts, error rates and latency, and what the catalog costs a client's context in each mode
(audit_view.py has the reading and the tables)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from toolscout.config.scopes import Scope, current_scope
from toolscout.gateway.audit_reader import Position
from toolscout.modes.costs import ModeCost, mode_tokens
from toolscout.serve.auth import principal_of
from toolscout.serve.dashboard.audit_view import (
    MAX_ROWS,
    STATS_WINDOW,
    Filters,
    filter_form,
    filters_from,
    mode_costs_table,
    recent,
    records_table,
    row_cells,
    scoped_filters,
    stats_table,
    tail,
    tool_stats,
)
from toolscout.serve.dashboard.context import DashboardError
from toolscout.serve.dashboard.render import SECURITY_HEADERS, page, url

if TYPE_CHECKING:
    from toolscout.serve.dashboard.context import Dashboard

MAX_COSTS_KEPT = 64
"""Token cost tables kept (one per scope and catalog version)."""


def routes(dashboard: Dashboard) -> list[BaseRoute]:
    """The page, and `/activity/tail` (JSON), which its script polls for new executions."""
    # By scope and catalog version: measuring runs a client per mode, and a scope sees its own tools only.
    costs: dict[tuple[Scope, int], list[ModeCost]] = {}

    async def show(request: Request) -> Response:
        audit = dashboard.gateway.audit
        values: dict[str, Any] = {"enabled": audit is not None, "path": None}
        values["limited"] = not principal_of(request).admin
        filters = _readable(request, filters_from(dict(request.query_params)))
        values["filters_form"] = Markup(filter_form(filters, url("/activity")))
        if audit is not None:
            # One read serves both: the statistics' window, and the table's last rows of it.
            window, position = await recent(audit.path, filters, STATS_WINDOW)
            table = records_table(window[-MAX_ROWS:], position, filters, url("/activity/tail"))
            values.update(path=str(audit.path), table=Markup(table))
            values["stats"] = Markup(stats_table(tool_stats(window)))
        key = (current_scope(), dashboard.gateway.catalog.version)
        if key not in costs:
            if len(costs) >= MAX_COSTS_KEPT:
                costs.clear()
            costs[key] = await mode_tokens(dashboard.gateway)
        values["costs"] = Markup(mode_costs_table(costs[key], dashboard.mode))
        return page(request, "activity.html", title="Activity", **values)

    async def follow(request: Request) -> Response:
        audit = dashboard.gateway.audit
        if audit is None:
            raise DashboardError(404, "The audit log is off (audit.enabled: false); turn it on to follow executions.")
        since = Position.parse(request.query_params.get("after", ""))
        if since is None:
            raise DashboardError(400, "`after` must be the position a previous answer gave.")
        records, position = await tail(audit.path, since, _readable(request, filters_from(dict(request.query_params))))
        rows = [{"outcome": str(r.get("outcome") or "?"), "cells": row_cells(r)} for r in records]
        return JSONResponse({"position": str(position), "rows": rows}, headers=SECURITY_HEADERS)

    return [Route("/activity", show), Route("/activity/tail", follow)]


def _readable(request: Request, filters: Filters) -> Filters:
    principal = principal_of(request)
    scope = principal.scope
    return scoped_filters(filters, admin=principal.admin, label=scope.label, namespace=scope.namespace)
