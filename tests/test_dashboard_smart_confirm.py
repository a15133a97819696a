"""The Run page's smart-mode box in a real browser: a destructive tool is held with its planned call
shown, and the Confirm button runs exactly that call once (a spent or forged id, or a form without
its CSRF token, runs nothing)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.browser import Browser, browser
from tests.helpers.dashboard_site import dashboard_site, log_in, mcp_client, meta, write_dashboard_config

pytestmark = pytest.mark.anyio

REQUEST = 'update note with id "1" and title "Weekend groceries"'


async def _note_title(site: Any) -> str:
    async with mcp_client(site) as client:
        note = await meta(client, "execute_tool", {"server": "notes", "tool": "get_note", "arguments": {"id": "1"}})
    return str(note["title"])


def _ask(page: Browser) -> dict[str, str]:
    """Ask smart mode for `REQUEST` on the Run page; the planned call it shows (the Confirm form's fields)."""
    page.open("/dashboard/run")
    page.fill("#smart-request", REQUEST)
    page.submit("#smart-run", then="#smart-planned")
    fields = page.elements("#smart-confirm-form input[type=hidden]")
    return {str(f.get_attribute("name")): str(f.get_attribute("value")) for f in fields}


async def test_a_destructive_tool_runs_only_after_the_confirm_button(tmp_path: Path) -> None:
    config = write_dashboard_config(tmp_path, "smartTool: true  # smart_tool_discovery beside the meta-tools\n")
    async with dashboard_site(tmp_path, config) as site:
        before = await _note_title(site)
        assert before != "Weekend groceries"
        with browser(site.base_url, tmp_path / "profile") as page:
            log_in(page)
            planned = _ask(page)
            assert page.text("#planned-tool") == "notes/update_note"
            assert planned["tool"] == "notes/update_note" and planned["confirmation_id"].startswith("cf1_")
            arguments = json.loads(planned["arguments"])
            assert arguments == {"id": "1", "title": "Weekend groceries"}
            assert "confirmation_required" in page.text("#smart-answer")
            page.screenshot("run-smart-confirm")
            assert await _note_title(site) == before  # held: nothing ran

            page.submit("#smart-confirm", then="#smart-answer")
            assert page.elements("#smart-planned") == []
            answer = page.text("#smart-answer")
            assert "notes/update_note" in answer and "confirmation_required" not in answer, answer
            assert await _note_title(site) == "Weekend groceries"

            # The id is good once: the same planned call sent again with the spent id runs nothing.
            _ask(page)
            page.script(f"document.querySelector('[name=confirmation_id]').value = {planned['confirmation_id']!r}")
            page.submit("#smart-confirm", then="#smart-planned")
            assert "was used already" in page.text("#smart-answer")

            # A Confirm form without the session's CSRF token is refused before anything runs.
            _ask(page)
            page.script("document.querySelector('#smart-confirm-form [name=csrf_token]').value = 'forged'")
            page.submit("#smart-confirm", then="body")
            assert "security token" in page.text("body")
            assert page.elements("#smart-answer") == []
