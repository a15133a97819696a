"""Serving the dashboard for real: its "Connect now" button connects a real upstream, its session
cookie is `Secure` behind a TLS-terminating proxy (Debian's nginx with a self-signed certificate,
`X-Forwarded-Proto`) and not over plain http, and `toolscout serve --transport http` with `/metrics`
works where the OpenTelemetry SDK cannot be imported (the `otel` extra not installed)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import httpx2
import pytest
from benchmarks.processes import SERVE_READY, balancer, running, self_signed, trusting
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.browser import browser
from tests.helpers.dashboard_site import (
    ADMIN_KEY,
    dashboard_site,
    log_in,
    server_statuses,
    wait_status,
    write_dashboard_config,
)
from tests.helpers.paths import PYTHON

pytestmark = pytest.mark.anyio

LATER = f"""\
mcpServers:
  later:  # not connected at start: its tools are declared, so it waits to be needed
    command: {PYTHON}
    args: [-m, toolscout.demo.units]
    connect: lazy
    tools:
      - name: convert_units
"""


async def test_connect_now_connects_a_waiting_server(tmp_path: Path) -> None:
    config = write_dashboard_config(tmp_path)
    config.write_text(config.read_text(encoding="utf-8").replace("mcpServers:\n", LATER, 1), encoding="utf-8")
    async with dashboard_site(tmp_path, config) as site:
        with browser(site.base_url, tmp_path / "profile") as page:
            log_in(page)
            wait_status(page, "connected", "units")
            assert server_statuses(page)["later"] == "idle"
            assert "units" not in page.text('tr.server[data-server="later"] td:nth-child(3)')  # no serverInfo yet
            page.submit('tr.server[data-server="later"] form[action$="/reconnect"] button', then="#message")
            assert page.text("#message") == "Connecting to later now."
            wait_status(page, "connected", "later")
            assert page.elements('tr.server[data-server="later"] form[action$="/reconnect"] button') == []
            assert "units" in page.text('tr.server[data-server="later"] td:nth-child(3)')  # its serverInfo


def _cookie(response: httpx2.Response) -> str:
    [cookie] = response.headers.get_list("set-cookie")
    return cookie


async def test_the_session_cookie_is_secure_behind_a_tls_terminating_proxy(tmp_path: Path) -> None:
    tls = await self_signed(tmp_path / "tls")
    async with (
        dashboard_site(tmp_path) as site,
        balancer(tmp_path / "nginx", [site.base_url], tls=tls) as front,
    ):
        assert front.startswith("https://")
        async with httpx2.AsyncClient(verify=trusting(tls[0]), timeout=30) as http:
            login = await http.post(f"{front}/dashboard/login", data={"key": ADMIN_KEY}, headers={"Origin": front})
            assert login.status_code == 303, login.text
            cookie = _cookie(login)
            assert "; Secure" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
            assert (await http.get(f"{front}/dashboard/servers")).status_code == 200  # the cookie works through it
        async with httpx2.AsyncClient(timeout=30) as http:  # the same gateway over plain http: not Secure
            login = await http.post(
                f"{site.base_url}/dashboard/login", data={"key": ADMIN_KEY}, headers={"Origin": site.base_url}
            )
            assert login.status_code == 303 and "Secure" not in _cookie(login)


BLOCKER = '''\
"""Makes the OpenTelemetry SDK and exporter unimportable in this process, as when the `otel` extra is
not installed (the trace API stays: the MCP SDK itself depends on it)."""
import sys

EXTRA = ("opentelemetry.sdk", "opentelemetry.exporter", "opentelemetry.proto")


class _NoOtelExtra:
    def find_spec(self, name, path=None, target=None):
        if any(name == top or name.startswith(top + ".") for top in EXTRA):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoOtelExtra())
'''


async def test_serving_http_and_metrics_work_without_opentelemetry(tmp_path: Path) -> None:
    blocker = tmp_path / "site"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    paths = [str(blocker), *filter(None, [os.environ.get("PYTHONPATH")])]
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    refused = await anyio.run_process([PYTHON, "-c", "import opentelemetry.sdk.trace"], check=False, env=environ)
    assert refused.returncode != 0 and b"No module named 'opentelemetry.sdk'" in refused.stderr
    config = write_dashboard_config(tmp_path)
    command = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--transport", "http", "--port", "0"]
    async with running(command, ready=SERVE_READY, env=environ) as served:
        mcp_url = served.match.group(1)
        base = mcp_url.removesuffix("/mcp")
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=30) as http,
            Client(streamable_http_client(mcp_url, http_client=http)) as client,
        ):
            result = await client.call_tool("search_tools", {"query": "convert miles"})
            assert not result.is_error, result.content
            metrics = await http.get(f"{base}/metrics")
            assert metrics.status_code == 200, metrics.text
            assert 'mcp_method_name="tools/call"' in metrics.text, metrics.text[:2000]
            assert (await http.get(f"{base}/dashboard/servers")).status_code == 200
    assert not any("Traceback" in line for line in served.stderr), "\n".join(served.stderr)

    # Asking for traces without the extra: a clear refusal that says what to install, no traceback.
    asked = {**environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    done = await anyio.run_process(command, check=False, env=asked)
    said = done.stderr.decode()
    assert done.returncode != 0 and "toolscout[otel]" in said and "Traceback" not in said, said
