"""Tools hidden from listings (`hidden: true` in toolRules) and the commands that hide and show them.

A hidden tool is listed nowhere (tools/list, list_tools, a description's catalog) yet search, smart
mode and a call by name still find it: checked over real SDK clients of either era on the gateway's
MCP face. `toolscout status` and `toolscout rules hide-tool | show-tool | hide-server | show-server |
hide-all | show-all` run as child processes on a config file with comments."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import anyio
import pytest
import yaml

from tests.helpers.cli_sandbox import Sandbox, make_sandbox
from tests.helpers.gateway_client import ERAS, structured, text
from tests.helpers.paths import PYTHON
from tests.helpers.smart_gateway import SMART, smart_client, smart_gateway
from toolscout.config import ToolRule
from toolscout.config.rule_edits import conceal, reveal
from toolscout.config.rules import RuleSet

pytestmark = pytest.mark.anyio

WAIT = 30.0
HIDDEN = [ToolRule(pattern=["convert_units"], hidden=True)]
MILES = {"value": 5, "from_unit": "miles", "to_unit": "km"}


async def call(client: Any, name: str, arguments: dict[str, Any]) -> Any:
    with anyio.fail_after(WAIT):
        return await client.call_tool(name, arguments)


@pytest.mark.parametrize("era", ERAS)
async def test_a_hidden_tool_is_listed_nowhere_but_searched_and_called(era: str) -> None:
    async with smart_gateway(rules=HIDDEN) as gateway, smart_client(gateway, era, mode="discovery") as client:
        listed_result = await call(client, "list_tools", {"server": "units", "includeDisabled": True})
        listed = structured(listed_result)
        servers = structured(await call(client, "list_mcp_servers", {}))
        found = structured(await call(client, "search_tools", {"query": "convert 5 miles to km"}))
        ran = await call(client, "execute_tool", {"server": "units", "tool": "convert_units", "arguments": MILES})
        details = await call(client, "get_tool_details", {"server": "units", "tool": "convert_units"})
    names = [t["name"] for t in listed["tools"]]
    assert "convert_units" not in names and "calculate" in names
    # The listings say how many they leave out, so an agent knows search finds more.
    assert listed["hiddenCount"] == 1 and "+1 hidden tool: found by search_tools only" in text(listed_result)
    units = next(s for s in servers["servers"] if s["name"] == "units")
    assert units["hiddenCount"] == 1 and units["enabledCount"] == units["toolCount"]
    assert not any("hiddenCount" in s for s in servers["servers"] if s["name"] != "units")
    hits = [(h["server"], h["tool"]) for h in found["results"]]
    assert ("units", "convert_units") in hits
    assert not ran.is_error, text(ran)
    assert not details.is_error, text(details)


@pytest.mark.parametrize("era", ERAS)
async def test_smart_mode_finds_and_runs_a_hidden_tool(era: str) -> None:
    async with smart_gateway(rules=HIDDEN) as gateway, smart_client(gateway, era) as client:
        data = structured(await call(client, SMART, {"request": "convert 5 miles to km"}))
    assert data["tool_name"] == "units/convert_units"
    assert data["success"] is True


@pytest.mark.parametrize("era", ERAS)
async def test_passthrough_and_compact_leave_a_hidden_tool_out_of_their_lists(era: str) -> None:
    async with smart_gateway(rules=HIDDEN) as gateway:
        async with smart_client(gateway, era, mode="passthrough") as client:
            with anyio.fail_after(WAIT):
                listed = [t.name for t in (await client.list_tools()).tools]
            ran = await call(client, "units__convert_units", MILES)
        async with smart_client(gateway, era, mode="compact") as client:
            with anyio.fail_after(WAIT):
                tools = (await client.list_tools()).tools
            inspected = structured(await call(client, "inspect", {"server_name": "units"}))
    assert "units__convert_units" not in listed and "units__calculate" in listed
    assert not ran.is_error, text(ran)  # called by its name, though not listed
    description = next(t.description or "" for t in tools if t.name == "inspect")
    assert "- calculate" in description and "- convert_units" not in description
    inspected_names = [t["name"] for t in inspected["tools"]]
    assert "calculate" in inspected_names and "convert_units" not in inspected_names


def test_the_first_rule_that_says_hidden_decides() -> None:
    rules = RuleSet(
        [
            ToolRule(pattern=["convert_units"], server="units", hidden=False),
            ToolRule(pattern=["*"], hidden=True),
        ]
    )
    assert not rules.verdict("units", "convert_units").hidden
    assert rules.verdict("units", "calculate").hidden
    assert rules.verdict("units", "calculate").enabled  # hidden is not disabled
    assert rules.hiding("units", "calculate") == 1


def test_conceal_and_reveal_edit_the_rules() -> None:
    rules: list[dict[str, Any]] = [{"pattern": ["delete_*"], "enabled": False}]
    assert conceal(rules, "convert_units", None)[1]
    assert rules[0] == {"pattern": ["convert_units"], "hidden": True}
    assert not conceal(rules, "convert_units", None)[1]  # already hidden: nothing changed
    assert reveal(rules, "convert_units", None)[1]
    assert rules == [{"pattern": ["delete_*"], "enabled": False}]
    conceal(rules, "*", "units")
    assert reveal(rules, "calculate", "units")[1]
    assert rules[0] == {"pattern": ["calculate"], "hidden": False, "server": "units"}  # the server rule stays
    assert reveal(rules, "*", None)[1]  # show-all: every hidden goes
    assert rules == [{"pattern": ["delete_*"], "enabled": False}]


CONFIG = """\
# The demo servers; the rules below are edited by the commands under test.
mcpServers:
  units:
    command: {python}
    args: [-m, toolscout.demo.units]
  text:
    command: {python}
    args: [-m, toolscout.demo.text]
# Keep this comment: the editor must not drop it.
toolRules:
  - pattern: ["calculate"]
    enabled: false
"""


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    box = make_sandbox(tmp_path)
    box.write("work/toolscout.yaml", CONFIG.format(python=PYTHON))
    return box


def rules_of(sandbox: Sandbox) -> list[dict[str, Any]]:
    raw = yaml.safe_load((sandbox.cwd / "toolscout.yaml").read_text())
    return cast(list[dict[str, Any]], raw.get("toolRules") or [])


def states(status: dict[str, Any], server: str) -> dict[str, str]:
    row = next(r for r in status["servers"] if r["server"] == server)
    return {t["name"]: t["state"] for t in row["tools"]}


def test_hide_tool_and_show_tool_edit_the_file_and_status_shows_it(sandbox: Sandbox) -> None:
    before = sandbox.json("status")
    assert states(before, "units")["calculate"] == "disabled"
    assert states(before, "units")["convert_units"] == "listed"

    edited = sandbox.json("rules", "hide-tool", "convert_units")
    assert edited["changed"] is True and edited["backup"]
    assert Path(edited["backup"]).read_text() == CONFIG.format(python=PYTHON)
    text_now = (sandbox.cwd / "toolscout.yaml").read_text()
    assert "# Keep this comment: the editor must not drop it." in text_now
    assert rules_of(sandbox)[0] == {"pattern": ["convert_units"], "hidden": True}

    after = sandbox.json("status")
    assert states(after, "units")["convert_units"] == "hidden"
    row = next(r for r in after["servers"] if r["server"] == "units")
    assert (row["hidden"], row["disabled"]) == (1, 1)
    hidden_entry = next(t for t in row["tools"] if t["name"] == "convert_units")
    assert hidden_entry["rule"] == "toolRules[0]"

    # `toolscout tools` and `list` leave it out as list_tools does, and say so.
    tools = sandbox.run("tools", "units")
    assert tools.returncode == 0, tools.stderr
    assert "✓ list_units" in tools.stdout and "✓ convert_units" not in tools.stdout
    assert "1 more tool hidden from listings" in tools.stdout
    listed = sandbox.json("list", "--tools")
    units = next(s for s in listed["servers"] if s["name"] == "units")
    assert units["hiddenCount"] == 1 and "convert_units" not in units["tools"]
    assert "1 hidden from listings" in sandbox.run("list").stdout

    detailed = sandbox.run("status", "--detailed")
    assert detailed.returncode == 0, detailed.stderr
    assert "1 hidden" in detailed.stdout
    assert any(line.split()[:2] == ["hidden", "convert_units"] for line in detailed.stdout.splitlines())

    assert sandbox.json("rules", "show-tool", "convert_units")["changed"] is True
    assert states(sandbox.json("status"), "units")["convert_units"] == "listed"
    assert rules_of(sandbox) == [{"pattern": ["calculate"], "enabled": False}]


def test_hide_server_hide_all_and_show_all(sandbox: Sandbox) -> None:
    assert sandbox.json("rules", "hide-server", "text")["changed"] is True
    status = sandbox.json("status")
    assert set(states(status, "text").values()) == {"hidden"}
    assert "hidden" not in states(status, "units").values()

    assert sandbox.json("rules", "show-server", "text")["changed"] is True
    assert "hidden" not in states(sandbox.json("status"), "text").values()

    sandbox.json("rules", "hide-all")
    everything = sandbox.json("status")
    assert everything["totals"]["listed"] == 0
    assert states(everything, "units")["calculate"] == "disabled"  # disabled stays disabled

    sandbox.json("rules", "show-all")
    assert sandbox.json("status")["totals"]["hidden"] == 0
    assert rules_of(sandbox) == [{"pattern": ["calculate"], "enabled": False}]


def test_a_bad_pattern_is_refused_without_editing(sandbox: Sandbox) -> None:
    done = sandbox.run("rules", "hide-tool", "/[unclosed/")
    assert done.returncode == 1
    assert "not a usable pattern" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert rules_of(sandbox) == [{"pattern": ["calculate"], "enabled": False}]
