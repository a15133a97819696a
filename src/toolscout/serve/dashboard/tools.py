"""The Tools page: every tool the principal sees, filtered and paged on the server (a catalog of
10,000 tools renders one page of rows), with its signature, annotations and tags, whether it is
enabled and which rule decides it; toggles per tool and by pattern that write `toolRules` through
the config editor after showing the resulting rules (a confirm step), and tool definitions that
changed since they were pinned, with their diff and an approve button."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from toolscout.catalog import CatalogTool
from toolscout.config.edit import ConfigDocument
from toolscout.config.rule_edits import check_pattern, hide, show
from toolscout.config.scopes import current_scope
from toolscout.errors import ToolscoutError
from toolscout.gateway.pins import changes, diff_lines
from toolscout.render.signatures import call_signature
from toolscout.serve.auth import principal_of
from toolscout.serve.dashboard.config_writes import edit_config, read_tool_rules, tool_rules
from toolscout.serve.dashboard.context import Dashboard, DashboardError, require_admin
from toolscout.serve.dashboard.render import page, url

PAGE_SIZE = 50
"""Tools on one page."""
MAX_QUERY = 200
STATES = ("all", "enabled", "hidden", "changed")


@dataclass(frozen=True)
class Filter:
    """What the page's filter form asked for."""

    query: str
    server: str
    state: str
    page: int

    @classmethod
    def of(cls, request: Request) -> Filter:
        params = request.query_params
        state = params.get("state", "all")
        try:
            number = max(1, int(params.get("page", "1")))
        except ValueError:
            number = 1
        return cls(
            params.get("q", "").strip()[:MAX_QUERY],
            params.get("server", ""),
            state if state in STATES else "all",
            number,
        )

    def keeps(self, tool: CatalogTool) -> bool:
        if self.server and tool.server != self.server:
            return False
        if self.state == "enabled" and not tool.enabled:
            return False
        if self.state == "hidden" and tool.enabled:
            return False
        if self.state == "changed" and not tool.quarantined:
            return False
        if self.query:
            needle = self.query.lower()
            return needle in tool.name.lower() or needle in tool.description.lower()
        return True

    def link(self, number: int) -> str:
        return url("/tools?" + urlencode({"q": self.query, "server": self.server, "state": self.state, "page": number}))


def _annotations(tool: CatalogTool) -> list[str]:
    annotations = tool.tool.annotations
    if annotations is None:
        return []
    hints = (
        ("read-only", annotations.read_only_hint),
        ("destructive", annotations.destructive_hint),
        ("idempotent", annotations.idempotent_hint),
        ("open world", annotations.open_world_hint),
    )
    return [name if value else f"not {name}" for name, value in hints if value is not None]


def _state(dashboard: Dashboard, tool: CatalogTool) -> tuple[str, str]:
    """(state, why) of one tool: enabled, hidden (and by which rule), changed since pinned, unusable."""
    if tool.unusable:
        return "unusable", tool.unusable
    if tool.quarantined:
        return "changed", "its definition changed since it was pinned: approve it below"
    rules = dashboard.gateway.rules
    index = rules.deciding(tool.server, tool.name)
    if index is None:
        if tool.enabled:
            return "enabled", "no rule hides it"
        return "hidden", "no rule enables it (the rules are a whitelist)"
    rule = rules.rules[index].model_dump(exclude_none=True, exclude_defaults=True)
    verb = "enabled" if tool.enabled else "hidden"
    return verb, f"toolRules[{index}]: {json.dumps(rule, ensure_ascii=False)}"


def _every_tool(dashboard: Dashboard) -> list[CatalogTool]:
    """Every tool the request's scope sees, hidden and quarantined ones too (for a person to review)."""
    gateway = dashboard.gateway
    tools = gateway.catalog.tools(include_disabled=True, include_quarantined=True)
    visible = gateway.visibility.tool_filter(current_scope())
    return tools if visible is None else [tool for tool in tools if visible(tool)]


def _row(dashboard: Dashboard, tool: CatalogTool) -> dict[str, Any]:
    state, why = _state(dashboard, tool)
    return {
        "server": tool.server,
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "signature": call_signature(tool.name, tool.input_schema),
        "annotations": _annotations(tool),
        "tags": list(tool.tags),
        "state": state,
        "why": why,
        "enabled": tool.enabled,
    }


def _changed_definitions(dashboard: Dashboard) -> list[dict[str, Any]]:
    scope = current_scope()
    found: list[dict[str, Any]] = []
    for pin in dashboard.gateway.pins.pins():
        if pin.seen is None or not dashboard.gateway.visibility.sees(scope, pin.server, pin.tool):
            continue
        lines = diff_lines(changes(pin.definition, pin.seen.definition))
        found.append(
            {
                "server": pin.server,
                "tool": pin.tool,
                "approved": pin.hash[:12],
                "now": pin.seen.hash[:12],
                "diff": lines,
            }
        )
    return sorted(found, key=lambda entry: (entry["server"], entry["tool"]))


@dataclass(frozen=True)
class RuleChange:
    """A toggle asked for: hide or show the tools `pattern` names (on `server`)."""

    action: str
    pattern: str
    server: str | None

    @classmethod
    async def of(cls, request: Request) -> RuleChange:
        form = await request.form()
        action = str(form.get("action") or "")
        pattern = str(form.get("pattern") or "").strip()
        server = str(form.get("server") or "").strip() or None
        if action not in ("hide", "show"):
            raise DashboardError(400, "Choose whether to hide or show the tools.")
        if not pattern:
            raise DashboardError(400, "Give a tool name, a glob such as *delete* or a /regex/.")
        try:
            check_pattern(pattern, server)
        except ValueError as exc:
            raise DashboardError(400, f"{exc} Write a tool name, a glob (*delete*) or a /regex/flags.") from None
        return cls(action, pattern, server)

    def apply(self, rules: list[dict[str, Any]], servers: list[str]) -> tuple[str, bool]:
        if self.action == "hide":
            return hide(rules, self.pattern, self.server)
        return show(rules, self.pattern, self.server, servers)


def routes(dashboard: Dashboard) -> list[BaseRoute]:
    """The page, the confirm step, saving a rule and approving a changed definition."""

    def configured() -> list[str]:
        return [upstream.name for upstream in dashboard.gateway.upstreams]

    async def listing(request: Request) -> Response:
        wanted = Filter.of(request)
        every = _every_tool(dashboard)
        kept = [tool for tool in every if wanted.keeps(tool)]
        pages = max(1, math.ceil(len(kept) / PAGE_SIZE))
        number = min(wanted.page, pages)
        shown = kept[(number - 1) * PAGE_SIZE : number * PAGE_SIZE]
        admin = principal_of(request).admin
        return page(
            request,
            "tools.html",
            title="Tools",
            tools=[_row(dashboard, tool) for tool in shown],
            total=len(every),
            matching=len(kept),
            filter=wanted,
            number=number,
            pages=pages,
            previous=wanted.link(number - 1) if number > 1 else None,
            next=wanted.link(number + 1) if number < pages else None,
            servers=sorted({tool.server for tool in every}),
            states=STATES,
            admin=admin,
            editable=admin and dashboard.config_path is not None,
            changed=_changed_definitions(dashboard),
            message=request.query_params.get("message"),
        )

    async def preview(request: Request) -> Response:
        require_admin(request)
        change = await RuleChange.of(request)
        try:
            before = read_tool_rules(dashboard)
        except ToolscoutError as exc:
            raise DashboardError(400, f"The config file cannot be read: {exc.message}") from None
        after = [dict(rule) for rule in before]
        message, changed = change.apply(after, configured())
        return page(
            request,
            "tool_rules.html",
            title="Confirm the rule change",
            change=change,
            message=message,
            changed=changed,
            before=before,
            after=after,
            added=[rule for rule in after if rule not in before],
            removed=[rule for rule in before if rule not in after],
            path=str(dashboard.config_path),
        )

    async def save(request: Request) -> Response:
        require_admin(request)
        change = await RuleChange.of(request)
        outcome: list[str] = []

        def edit(document: ConfigDocument) -> None:
            rules = tool_rules(document)
            message, changed = change.apply(rules, configured())
            outcome.append(message)
            if changed:
                document.set(["toolRules"], rules)

        saved = await edit_config(dashboard, edit)
        message = outcome[0] if outcome else "Nothing changed."
        if saved.backup is not None:
            message += f" Saved to {saved.path.name} (backup: {saved.backup.name})."
        return RedirectResponse(url("/tools?" + urlencode({"message": message, "q": change.pattern})), status_code=303)

    async def approve(request: Request) -> Response:
        require_admin(request)
        form = await request.form()
        server, tool = str(form.get("server") or ""), str(form.get("tool") or "")
        chosen = [pin for pin in dashboard.gateway.pins.pins() if pin.key == (server, tool) and pin.seen is not None]
        if not chosen:
            raise DashboardError(
                404, f"{tool!r} on {server!r} has no changed definition to approve; reload the Tools page."
            )
        dashboard.gateway.pins.approve(chosen)
        message = f"Approved the new definition of {tool} on {server}: it is listed, found and run again."
        return RedirectResponse(url("/tools?" + urlencode({"message": message})), status_code=303)

    return [
        Route("/tools", listing),
        Route("/tools/preview", preview, methods=["POST"]),
        Route("/tools/rules", save, methods=["POST"]),
        Route("/tools/approve", approve, methods=["POST"]),
    ]
