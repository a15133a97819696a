"""The dashboard's Servers and Tokens pages in a real browser, and its refusals over plain HTTP: the demo
servers' status, disabling one (written to the config file), issuing a token that a real MCP client
then uses and revoking it; a cross-site form post, one without its CSRF token, and a wrong key."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx2
import pytest
from benchmarks.processes import running

from tests.helpers.browser import Browser, browser
from tests.helpers.dashboard_site import (
    ADMIN_KEY,
    DashboardSite,
    confirm,
    dashboard_site,
    log_in,
    mcp_client,
    meta,
    write_dashboard_config,
)
from tests.helpers.paths import PYTHON

pytestmark = pytest.mark.anyio

DEMO = ["notes", "units", "text", "files", "words"]


def statuses(page: Browser) -> dict[str, str]:
    return {
        str(row.get_attribute("data-server")): str(row.get_attribute("data-status"))
        for row in page.elements("tr.server")
    }


def all_connected(page: Browser) -> bool:
    page.driver.refresh()  # the page is the gateway's state when served: asked again, as a person would
    return set(statuses(page).values()) == {"connected"}


async def test_the_servers_page_shows_the_demo_servers_and_disables_one(tmp_path: Path) -> None:
    async with dashboard_site(tmp_path) as site:
        with browser(site.base_url, tmp_path / "profile") as page:
            log_in(page)
            page.open("/dashboard/servers")
            page.until(lambda _: all_connected(page), "every demo server to connect")
            assert list(statuses(page)) == DEMO
            assert "2025-" in page.text('tr.server[data-server="units"]') or "2026-" in page.text(
                'tr.server[data-server="units"]'
            )
            page.screenshot("servers")
            confirm(page, 'tr.server[data-server="text"] button.danger', then="#message")
            assert "Disabled text" in page.text("#message")
            assert statuses(page)["text"] == "disabled"
    text = site.config.read_text(encoding="utf-8")
    assert re.search(r"  text:\n(    .*\n)*    disabled: true", text), text
    assert "# a small notes store" in text


async def test_a_token_issued_on_the_page_serves_a_client_until_it_is_revoked(tmp_path: Path) -> None:
    async with dashboard_site(tmp_path) as site:
        with browser(site.base_url, tmp_path / "profile") as page:
            log_in(page)
            page.open("/dashboard/tokens")
            page.fill("#label", "ci-run-7")
            page.fill("#token-namespace", "run-7")
            page.fill("#token-servers", "units")
            page.submit("#issue-token", then="#secret")
            secret = str(page.element("#secret").get_attribute("value"))
            assert secret.startswith("ts_")
            async with mcp_client(site, secret) as client:
                listed = await meta(client, "list_mcp_servers", {})
                assert [server["name"] for server in listed["servers"]] == ["units"]
            page.open("/dashboard/tokens")
            page.screenshot("tokens")
            confirm(page, "tr.token button.revoke", then="#message")
            assert "Revoked" in page.text("#message")
            assert not page.elements("tr.token")
        async with httpx2.AsyncClient(timeout=30) as http:
            refused = await http.get(site.mcp_url, headers={"Authorization": f"Bearer {secret}"})
        assert refused.status_code == 401


async def log_in_over_http(http: httpx2.AsyncClient, site: DashboardSite) -> str:
    """Log in over HTTP as the form does (the client keeps the session cookie); the page's CSRF token."""
    origin = {"Origin": site.base_url}
    answer = await http.post(
        f"{site.base_url}/dashboard/login", data={"key": ADMIN_KEY, "next": "/dashboard/tools"}, headers=origin
    )
    assert answer.status_code == 303, answer.text
    assert "toolscout_dashboard" in http.cookies
    tools = await http.get(f"{site.base_url}/dashboard/tools")
    found = re.search(r'data-csrf="([^"]+)"', tools.text)
    assert found is not None
    return found.group(1)


async def test_cross_site_posts_and_posts_without_the_token_are_refused(tmp_path: Path) -> None:
    async with dashboard_site(tmp_path) as site, httpx2.AsyncClient(timeout=30) as http:
        before = site.config.read_bytes()
        token = await log_in_over_http(http, site)
        hide: dict[str, Any] = {"action": "hide", "pattern": "*", "server": "", "csrf_token": token}
        rules = f"{site.base_url}/dashboard/tools/rules"
        elsewhere = await http.post(rules, data=hide, headers={"Origin": "http://evil.example"})
        assert elsewhere.status_code == 403
        no_token = {key: value for key, value in hide.items() if key != "csrf_token"}
        unsigned = await http.post(rules, data=no_token, headers={"Origin": site.base_url})
        assert unsigned.status_code == 403 and "security token" in unsigned.text
        forged = await http.post(rules, data={**hide, "csrf_token": "x" * 43})
        assert forged.status_code == 403
        async with httpx2.AsyncClient(timeout=30) as stranger:
            without_session = await stranger.post(rules, data=hide, headers={"Origin": site.base_url})
        assert without_session.status_code == 303 and "/dashboard/login" in without_session.headers["location"]
        assert site.config.read_bytes() == before

        no_origin_login = await http.post(f"{site.base_url}/dashboard/login", data={"key": ADMIN_KEY})
        assert no_origin_login.status_code == 403
        wrong = await http.post(
            f"{site.base_url}/dashboard/login",
            data={"key": "wrong-key-0123456789abcdef"},
            headers={"Origin": site.base_url},
        )
        assert wrong.status_code == 401 and "not accepted" in wrong.text
        script = await http.get(f"{site.base_url}/dashboard/servers", headers={"Authorization": f"Bearer {ADMIN_KEY}"})
        assert script.status_code == 200 and 'id="servers"' in script.text
        bad_script = await http.get(
            f"{site.base_url}/dashboard/servers", headers={"Authorization": "Bearer nope-nope-nope-nope"}
        )
        assert bad_script.status_code == 401


async def test_an_anonymous_gateway_opens_the_dashboard_and_still_checks_posts(tmp_path: Path) -> None:
    config = tmp_path / "open.yaml"
    config.write_text(
        "# no keys: loopback only\nmcpServers:\n  units:\n    command: python3\n    args: [-m, toolscout.demo.units]\n",
        encoding="utf-8",
    )
    async with dashboard_site(tmp_path, config) as site, httpx2.AsyncClient(timeout=30) as http:
        page = await http.get(f"{site.base_url}/dashboard/servers")
        assert page.status_code == 200 and "toolscout_dashboard" in page.cookies
        unsigned = await http.post(
            f"{site.base_url}/dashboard/servers/units/disable", headers={"Origin": site.base_url}
        )
        assert unsigned.status_code == 403


async def test_the_dashboard_command_serves_the_dashboard_alone_on_loopback(tmp_path: Path) -> None:
    config = write_dashboard_config(tmp_path)
    command = [PYTHON, "-m", "toolscout", "dashboard", "--config", str(config), "--port", "0"]
    async with running(command, ready=r"dashboard at (http://127\.0\.0\.1:\d+/dashboard)") as process:
        url = process.match.group(1)
        async with httpx2.AsyncClient(timeout=30) as http:
            login = await http.get(f"{url}/servers")
            assert login.status_code == 303 and "/dashboard/login" in login.headers["location"]
            servers = await http.get(f"{url}/servers", headers={"Authorization": f"Bearer {ADMIN_KEY}"})
            assert servers.status_code == 200 and 'data-server="units"' in servers.text
            assert (await http.get(url.removesuffix("/dashboard") + "/mcp")).status_code == 404
