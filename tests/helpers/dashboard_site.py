"""A gateway for the dashboard's tests: `toolscout serve --transport http` as a child process in
front of the demo servers, from a YAML config with comments (what the dashboard's buttons edit), an
admin key and a client key scoped to one server."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from benchmarks.processes import SERVE_READY, running

from tests.helpers.paths import PYTHON

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
"""


@dataclass(frozen=True)
class DashboardSite:
    """The served gateway: where its MCP endpoint and dashboard are, and its config file."""

    base_url: str
    mcp_url: str
    config: Path


def write_dashboard_config(directory: Path, extra: str = "") -> Path:
    """The test gateway's config (YAML, with comments), in `directory`."""
    path = directory / "toolscout.yaml"
    text = CONFIG.format(python=PYTHON, admin=ADMIN_KEY, client=CLIENT_KEY, directory=directory)
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
