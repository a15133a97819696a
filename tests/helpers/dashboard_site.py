"""A gateway for the dashboard's tests: `toolscout serve --transport http` as a child process in
front of the demo servers, from a YAML config with comments (what the dashboard's buttons edit), an
admin key and a client key scoped to one server."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import httpx2
from benchmarks.processes import SERVE_READY, running
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from selenium.webdriver.support import expected_conditions

from tests.helpers.browser import Browser, replaced
from tests.helpers.paths import PYTHON, ROOT

ADMIN_KEY = "admin-key-for-the-dashboard-0123456789"
CLIENT_KEY = "client-key-for-the-dashboard-0123456789"

CONFIG = """\
# The dashboard's test gateway: the demo servers behind two keys.
mcpServers:
  notes:  # a small notes store
    command: {python}
    args: [-m, toolscout.demo.notes]
  units:
    command: {python}
    args: [-m, toolscout.demo.units]
  text:
    command: {python}
    args: [-m, toolscout.demo.text]
  files:
    command: {python}
    args: [-m, toolscout.demo.files]
  words:  # its tool `lookup` is defined by lookup.json, read on every listing
    command: {python}
    args: [{shifting}, {directory}/lookup.json]

# Deletes stay away from agents.
toolRules:
  - pattern: ["delete_*"]
    enabled: false
    tags: [dangerous]

auth:
  adminKeys: ["{admin}"]
  keys:
    - key: "{client}"
      label: units-reader  # sees the units server only
      namespace: team
      servers: [units]

registry:
  path: {directory}/registry.sqlite3
audit:
  path: {directory}/audit.jsonl
catalogCache:
  path: {directory}/catalog.sqlite3
"""
LOOKUP = {
    "description": "Look up a word. <script>window.injected = true</script><b>bold</b>",
    "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
}
"""`lookup` as first listed: its description carries markup, which the dashboard must show as text."""


@dataclass(frozen=True)
class DashboardSite:
    """The served gateway: where its MCP endpoint and dashboard are, and its config file."""

    base_url: str
    mcp_url: str
    config: Path


def write_dashboard_config(directory: Path, extra: str = "") -> Path:
    """The test gateway's config (YAML, with comments), in `directory`."""
    path = directory / "toolscout.yaml"
    (directory / "lookup.json").write_text(json.dumps(LOOKUP), encoding="utf-8")
    text = CONFIG.format(
        python=PYTHON,
        admin=ADMIN_KEY,
        client=CLIENT_KEY,
        directory=directory,
        shifting=ROOT / "tests/servers/shifting.py",
    )
    path.write_text(text + extra, encoding="utf-8")
    return path


@asynccontextmanager
async def dashboard_site(directory: Path, config: Path | None = None) -> AsyncGenerator[DashboardSite]:
    """`toolscout serve --transport http` on a free port with the test config (or `config`)."""
    config = config or write_dashboard_config(directory)
    command = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--transport", "http", "--port", "0"]
    async with running(command, ready=SERVE_READY) as process:
        mcp_url = process.match.group(1)
        yield DashboardSite(mcp_url.removesuffix("/mcp"), mcp_url, config)


@asynccontextmanager
async def mcp_client(site: DashboardSite, key: str = ADMIN_KEY) -> AsyncGenerator[Client]:
    """A real MCP client (the SDK's) of the site's gateway, over HTTP with `key` as its bearer credential."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http,
        Client(streamable_http_client(site.mcp_url, http_client=http)) as client,
    ):
        yield client


def log_in(page: Browser, key: str = ADMIN_KEY) -> None:
    page.open("/dashboard/login")
    page.fill("#key", key)
    page.submit("#login", then="nav")


async def meta(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    return cast(dict[str, Any], result.structured_content)


def confirm(page: Browser, css: str, then: str) -> None:
    """Click `css`, accept the confirm dialog it opens, and wait for the next page to show `then`."""
    old = page.element("html")
    page.click(css)
    page.until(expected_conditions.alert_is_present(), "the confirm dialog")
    page.driver.switch_to.alert.accept()
    page.until(replaced(old), "the next page")
    page.element(then)


def server_statuses(page: Browser) -> dict[str, str]:
    """Each server's status on the Servers page shown (its rows' `data-status`)."""
    rows = page.elements("tr.server")
    return {str(row.get_attribute("data-server")): str(row.get_attribute("data-status")) for row in rows}


def wait_status(page: Browser, status: str, *servers: str) -> None:
    """Load the Servers page again until each of `servers` shows `status` (bounded, as `Browser.until`)."""

    def shown(_: object) -> bool:
        page.open("/dashboard/servers")  # the page is the gateway's state when served: asked again
        found = server_statuses(page)
        return all(found.get(server) == status for server in servers)

    page.until(shown, f"{', '.join(servers)} {status} on the Servers page")
