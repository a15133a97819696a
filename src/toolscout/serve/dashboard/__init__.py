"""The web dashboard at `/dashboard`: server-rendered pages over a running gateway, for people who
want to look rather than read JSON.

The pieces:

* `context.py`: `Dashboard` (what the pages work on: the gateway, who may log in, the registry, the
  config file), `DashboardError` and `require_admin`;
* `app.py`: `dashboard_app`, the ASGI app served under `/dashboard`, and `PAGES`;
* `sessions.py`: the sessions kept in memory;
* `auth.py`: the login form, sessions kept in memory behind a random cookie, the CSRF token every
  form carries and the same-origin check on every POST;
* `render.py`: the Jinja2 templates (everything autoescaped: tool names, descriptions and error texts
  come from upstream servers and are never trusted) and `page`, which renders one inside the layout;
* `templates/`, `static/`: the pages' HTML, one stylesheet and one small script, shipped in the wheel;
* one module per page: `servers.py`, `tools.py`, `tokens.py`, `search.py`, `run.py`, `activity.py`.
  What the Search, Run and Activity pages show is built in modules of its own, plain functions
  tested without a browser: `playground.py` (the ranking and labelled queries), `forms.py` (the form
  from an input schema), `results.py` (a tool's result as HTML), `audit_view.py` (the audit log).

Adding a page: write a module with a function `routes(dashboard: Dashboard) -> list[Route]` whose
handlers take a Starlette `Request` and answer `page(request, "NAME.html", title=..., **values)`
(`render.py`), a template `templates/NAME.html` that starts `{% extends "base.html" %}` and fills
`{% block content %}`, and add the module to `PAGES` in `app.py` (and a `NavItem` to `NAV` in
`render.py` if it belongs in the navigation). Paths in `Route` are relative to `/dashboard` (`Route("/tools", ...)`).

Inside a handler, `principal_of(request)` (toolscout.serve.auth) is who is logged in, and the
gateway is already serving under that principal's scope (`current_scope()`): a client token sees
what it sees on `/mcp`. `require_admin(request)` (context.py) refuses a page to anyone but an admin. A form posts
with `method="post"` and `{{ csrf_field() }}` inside; the check runs before any handler (`auth.py`),
so a handler never sees a forged post. Script `fetch` calls send the same token in `X-CSRF-Token`
(`dashboard.js` does so for any `data-post` element). Refusals are `DashboardError` (context.py), shown
as a page with the status and a message saying what to do.
"""
