"""Logging in to the dashboard in a real browser: the right key opens it, a wrong key is refused
with a message saying so, and a client key sees its scope only and not the admin pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.browser import browser
from tests.helpers.dashboard_site import ADMIN_KEY, CLIENT_KEY, dashboard_site

pytestmark = pytest.mark.anyio


async def test_a_wrong_key_is_refused_and_the_right_one_logs_in(tmp_path: Path) -> None:
    async with dashboard_site(tmp_path) as site:
        with browser(site.base_url, tmp_path / "profile") as page:
            page.open("/dashboard/servers")
            page.element("#login-form")
            assert page.path == "/dashboard/login"
            page.screenshot("login")
            page.fill("#key", "not-a-key-of-this-gateway")
            page.submit("#login", then="#login-error")
            assert "not accepted" in page.text("#login-error")
            page.screenshot("login-refused")
            page.fill("#key", ADMIN_KEY)
            page.submit("#login", then="nav")
            assert page.path == "/dashboard/servers"
            assert "Tokens" in page.text("nav")
            cookies = page.cookies()
            assert [c["httpOnly"] for c in cookies] == [True]
            assert ADMIN_KEY not in str(cookies)


async def test_a_client_key_sees_no_admin_page(tmp_path: Path) -> None:
    async with dashboard_site(tmp_path) as site:
        with browser(site.base_url, tmp_path / "profile") as page:
            page.open("/dashboard/login")
            page.fill("#key", CLIENT_KEY)
            page.submit("#login", then="nav")
            assert "Tokens" not in page.text("nav")
            page.open("/dashboard/tools")

            def listed(_: object) -> bool:
                page.driver.refresh()  # the page is the catalog when served: asked again until units connected
                return bool(page.elements("tr.tool"))

            page.until(listed, "the units server's tools")
            shown = {str(row.get_attribute("data-tool")).split("/")[0] for row in page.elements("tr.tool")}
            assert shown == {"units"}  # the key's scope: one server
            assert not page.elements("button.toggle") and not page.elements("#bulk")  # no rule changes
            page.open("/dashboard/tokens")
            assert "needs an admin key" in page.text("#refusal")
