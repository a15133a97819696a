"""Rendering dashboard pages: one Jinja2 environment over the package's `templates/`, autoescaping
everything (tool names, descriptions and error texts come from upstream servers), and `page`,
which renders a template inside the layout with what every page needs (navigation, who is logged
in, the CSRF field)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

import jinja2
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse

from toolscout import __version__
from toolscout.serve.auth import principal_of
from toolscout.serve.dashboard.sessions import csrf_token_of, session_of

PREFIX = "/dashboard"
SECURITY_HEADERS = {
    # Nothing but this gateway's own script and stylesheet runs or loads: an upstream's text that
    # escaped escaping still could not run a script.
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


@dataclass(frozen=True)
class NavItem:
    """One entry of the navigation bar."""

    label: str
    path: str
    """Relative to `/dashboard`."""
    admin: bool = False
    """Shown to admins only."""


NAV = (
    NavItem("Servers", "/servers"),
    NavItem("Tools", "/tools"),
    NavItem("Search", "/search"),
    NavItem("Run", "/run"),
    NavItem("Activity", "/activity"),
    NavItem("Tokens", "/tokens", admin=True),
)


_environment = jinja2.Environment(
    loader=jinja2.PackageLoader("toolscout.serve.dashboard", "templates"),
    autoescape=True,
    # A missing key renders as nothing: a server's entry holds `error`, `instructions`... only when it has them.
    undefined=jinja2.ChainableUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def _pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def _when(epoch: float | None) -> str:
    """An epoch time as a date and time in UTC (empty for none)."""
    if epoch is None:
        return ""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")


_environment.filters["pretty_json"] = _pretty_json
_environment.filters["when"] = _when


def url(path: str) -> str:
    """The absolute path of a dashboard page (`/tools` is `/dashboard/tools`)."""
    return PREFIX + path


cast(dict[str, Any], _environment.globals)["url"] = url


def render(template: str, **values: Any) -> str:
    """The HTML of `template` with `values` (escaped as it renders)."""
    return _environment.get_template(template).render(**values)


def page(
    request: Request,
    template: str,
    *,
    title: str,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
    **values: Any,
) -> HTMLResponse:
    """A whole page: `template` (which extends `base.html`) with the layout's values and `values`."""
    principal = principal_of(request)
    token = csrf_token_of(request)
    session = session_of(request)
    html = render(
        template,
        title=title,
        nav=[item for item in NAV if principal.admin or not item.admin],
        current=request.url.path.removeprefix(PREFIX) or "/",
        principal=principal,
        logged_in=session is not None and session.credential is not None,
        csrf_token=token,
        csrf_field=lambda: Markup('<input type="hidden" name="csrf_token" value="{}">').format(token),
        version=__version__,
        **values,
    )
    return HTMLResponse(html, status_code=status, headers={**SECURITY_HEADERS, **(headers or {})})
