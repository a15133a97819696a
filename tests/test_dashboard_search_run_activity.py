"""The dashboard's Run, Search and Activity pages in a real browser, over a served gateway in front of
the demo servers and `@modelcontextprotocol/server-everything` (its `get-sum` and `get-tiny-image`)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from selenium.webdriver.support.select import Select

from tests.helpers.browser import Browser, browser
from tests.helpers.dashboard_site import (
    ADMIN_KEY,
    CLIENT_KEY,
    dashboard_site,
    mcp_client,
    wait_status,
    write_dashboard_config,
)
from tests.helpers.paths import PYTHON, node_path, npm_tool

pytestmark = pytest.mark.anyio

CONVERT = {"server": "units", "tool": "convert_units", "arguments": {"value": 26.2, "from_unit": "mi", "to_unit": "km"}}


def _config(directory: Path) -> Path:
    """The dashboard tests' config with server-everything added (its image and sum tools)."""
    path = write_dashboard_config(directory)
    everything = (
        "mcpServers:\n"
        "  everything:  # the MCP reference server: an image tool among others\n"
        f"    command: {npm_tool('mcp-server-everything')}\n"
        "    args: [stdio]\n"
        f"    env: {{PATH: {json.dumps(node_path())}}}\n"
    )
    text = path.read_text(encoding="utf-8").replace("mcpServers:\n", everything, 1)
    path.write_text(text + "smartTool: true  # smart_tool_discovery beside the meta-tools\n", encoding="utf-8")
    return path


def log_in(page: Browser, key: str = ADMIN_KEY) -> None:
    page.open("/dashboard/login")
    page.fill("#key", key)
    page.submit("#login", then="nav")


async def test_run_a_tool_through_its_form_with_a_validation_error_and_an_image(tmp_path: Path) -> None:
    async with dashboard_site(tmp_path, _config(tmp_path)) as site:
        with browser(site.base_url, tmp_path / "profile") as page:
            log_in(page)
            # The forms below need these servers connected, and smart mode picks among connected ones:
            # wait for that state on the Servers page rather than on a form's connect timeout (which a
            # loaded machine starting Node can outlast).
            wait_status(page, "connected", "everything", "units")
            page.open("/dashboard/run?server=everything&tool=get-sum")
            assert [a.text for a in page.elements("nav a")][2:5] == ["Search", "Run", "Activity"]
            page.fill('input[name="arg:a"]', "2")
            # `b` is left empty: the gateway's validation (as for execute_tool) refuses, beside the field.
            page.submit(".run-form button[type=submit]", then='.field[data-field="b"] .error')
            assert page.text('.field[data-field="b"] .error') == "This parameter is required."
            assert page.element('input[name="arg:a"]').get_attribute("value") == "2"
            page.screenshot("run-validation")
            page.fill('input[name="arg:b"]', "3")
            page.submit(".run-form button[type=submit]", then=".result")
            assert "5" in page.text(".result pre.text")

            page.open("/dashboard/run?server=units&tool=convert_units")
            page.fill("#smart-request", "convert 26.2 miles to km")
            page.submit("#smart-run", then="#smart-answer")
            answer = page.text("#smart-answer")
            assert "42.16" in answer and "units" in answer, answer
            Select(page.element("#pick")).select_by_value("everything/get-tiny-image")
            page.wait_text(".tool h2", "everything.get-tiny-image")
            page.submit(".run-form button[type=submit]", then=".result img")
            image = page.element(".result img")
            assert str(image.get_attribute("src")).startswith("data:image/png;base64,")
            page.until(lambda d: d.execute_script("return arguments[0].naturalWidth", image) > 0, "the image decoded")
            page.until(
                lambda d: d.execute_script("arguments[0].scrollIntoView({block: 'end'}); return true", image), ""
            )
            page.screenshot("run")


async def test_the_activity_tail_follows_a_clients_execution(tmp_path: Path) -> None:
    async with dashboard_site(tmp_path) as site:
        with browser(site.base_url, tmp_path / "profile") as page:
            log_in(page)
            page.open("/dashboard/activity")
            page.element("#audit")
            page.element("#mode-costs")
            assert "discovery" in page.text("#mode-costs")
            assert page.elements("#audit tbody tr") == []
            async with mcp_client(site) as client:
                result = await client.call_tool("execute_tool", CONVERT)
                assert not result.is_error, result.content
            page.wait_text("#audit tbody", "units.convert_units")
            assert "ok" in page.text("#audit tbody tr")
            page.open("/dashboard/activity")
            assert "units.convert_units" in page.text("#tool-stats")
            page.screenshot("activity")
            page.open("/dashboard/activity?outcome=error")
            assert page.elements("#audit tbody tr") == []


async def test_a_should_have_been_found_label_feeds_toolscout_eval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLSCOUT_STATE_DIR", str(tmp_path / "state"))  # the served gateway's, inherited
    async with dashboard_site(tmp_path) as site:
        with browser(site.base_url, tmp_path / "profile") as page:
            log_in(page)
            page.open("/dashboard/search?q=how+many+words+are+in+this+paragraph")
            page.element("#hits")
            # Each ranker's part in the ranking, a column each, from the gateway's own explanation.
            header = page.text("#hits thead")
            assert all(ranker in header for ranker in ("lexical", "embeddings", "fusion")), header
            assert "not available" not in page.text("body")
            Select(page.element("#expected")).select_by_visible_text("text.word_count")
            page.submit(".label button[type=submit]", then="#recorded")
            assert "text.word_count" in page.text("#recorded")
            page.screenshot("search")
    labels = tmp_path / "state" / "labelled_queries.jsonl"
    assert [json.loads(line) for line in labels.read_text().splitlines()] == [
        {"query": "how many words are in this paragraph", "relevant": [["text", "word_count"]]}
    ]
    command = ["eval", "--catalog", "live", "--queries", str(labels), "--config", str(site.config), "--json"]
    done = await anyio.run_process([PYTHON, "-m", "toolscout", *command], check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["queries"] == 1


async def test_a_client_key_runs_within_its_scope_and_is_audited_under_its_label(tmp_path: Path) -> None:
    async with dashboard_site(tmp_path) as site:
        async with mcp_client(site) as client:  # an admin's execution, which the client key must not read
            result = await client.call_tool("execute_tool", CONVERT)
            assert not result.is_error, result.content
        with browser(site.base_url, tmp_path / "profile") as page:
            log_in(page, CLIENT_KEY)
            page.open("/dashboard/run")
            picked = [o.get_attribute("value") for o in page.elements("#pick option")]
            assert picked[0] == "" and {str(v).split("/")[0] for v in picked[1:]} == {"units"}
            page.open("/dashboard/run?server=text&tool=word_count")  # outside the key's servers
            assert page.text(".error") == "No server named 'text'. (SERVER_NOT_FOUND)"  # as on /mcp: not revealed
            assert page.elements(".run-form") == []
            page.open("/dashboard/run?server=units&tool=convert_units")
            page.fill('input[name="arg:value"]', "26.2")
            page.fill('input[name="arg:from_unit"]', "mi")
            page.fill('input[name="arg:to_unit"]', "km")
            page.submit(".run-form button[type=submit]", then=".result")
            assert "42.16" in page.text(".result")
            page.open("/dashboard/activity")
            rows = [row.text for row in page.elements("#audit tbody tr")]
            assert len(rows) == 1 and "units-reader" in rows[0] and "team" in rows[0], rows
            assert "units.convert_units" in rows[0]
            page.open("/dashboard/activity?label=")  # asking for every label changes nothing
            assert len(page.elements("#audit tbody tr")) == 1
            page.open("/dashboard/search?q=convert+miles")
            page.element("#hits")
            assert page.elements("#expected") == []  # labels are the operator's (an admin's) to record
