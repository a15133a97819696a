"""`toolscout smart REQUEST...` and `toolscout smart forget`, run as a real command against the demo servers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers.cli_sandbox import Sandbox, make_sandbox
from tests.helpers.paths import PYTHON, npm_tool

CONFIG = """\
mcpServers:
  units:
    command: {python}
    args: [-m, toolscout.demo.units]
  notes:
    command: {python}
    args: [-m, toolscout.demo.notes]
toolRules:
  - pattern: ["delete_*"]
    enabled: false
    tags: [dangerous]
"""
LEARNING = """\
mcpServers:
  units:
    command: {python}
    args: [-m, toolscout.demo.units]
smart:
  enableLearning: true
  learningPath: {path}
"""
REQUEST = "convert 5 miles to km"
SLOW = """\
mcpServers:
  everything:
    command: {command}
    timeout: 1
"""


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    box = make_sandbox(tmp_path_factory.mktemp("smart-cli"))
    box.write("work/toolscout.yaml", CONFIG.format(python=PYTHON))
    return box


def _json(sandbox: Sandbox, *args: str, expect: int) -> dict[str, Any]:
    done = sandbox.run("smart", *args, "--json")
    assert done.returncode == expect, done.stdout + done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_smart_runs_the_tool_it_chose_and_says_why(sandbox: Sandbox) -> None:
    done = sandbox.run("smart", *REQUEST.split())  # the words, unquoted, are one request
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "Chose units/convert_units (hybrid, confidence " in out
    assert "Reasoning: Hybrid(Semantic: " in out
    assert "Arguments (read from the request by the extractor):" in out
    assert "  value: 5" in out and '  to_unit: "km"' in out
    assert "✓ Success" in out and "5 mi = 8.04672 km" in out
    assert "Traceback" not in done.stderr


def test_json_is_the_smart_tools_structured_content(sandbox: Sandbox) -> None:
    data = _json(sandbox, REQUEST, expect=0)
    assert data["success"] is True and data["method"] == "hybrid"
    assert data["tool_name"] == "units/convert_units"
    assert 0.5 <= data["confidence_score"] <= 1.0
    assert data["discovery_reasoning"].startswith("Hybrid(")
    assert data["parameters"] == {"value": 5, "from_unit": "miles", "to_unit": "km"}
    assert data["execution_result"]["isError"] is False
    assert data["execution_result"]["structuredContent"]["result"] == pytest.approx(8.04672)
    assert data["parameter_extraction"]["source"] == "rules"
    assert data["parameter_extraction"]["status"] == "success"

    # --mode overrides smart.toolSelectionMode.
    by_rules = _json(sandbox, REQUEST, "--mode", "rule_based", expect=0)
    assert by_rules["method"] == "rule" and by_rules["tool_name"] == "units/convert_units"
    assert sandbox.run("smart", REQUEST, "--mode", "psychic").returncode == 1  # a usage error


def test_suggestions_rank_tools_and_run_none(sandbox: Sandbox) -> None:
    data = _json(sandbox, REQUEST, "--suggestions", "3", expect=0)
    assert "execution_result" not in data
    ranked = data["suggestions"]
    assert len(ranked) == 3 and ranked[0]["tool_name"] == "units/convert_units"
    assert [s["confidence_score"] for s in ranked] == sorted((s["confidence_score"] for s in ranked), reverse=True)
    assert ranked[0]["arguments"] == {"value": 5, "from_unit": "miles", "to_unit": "km"}

    done = sandbox.run("smart", REQUEST, "--suggestions", "3")
    assert done.returncode == 0, done.stderr
    assert f'3 tools for "{REQUEST}" (hybrid), none run:' in done.stdout
    assert "1. units/convert_units  " in done.stdout and "✓ Success" not in done.stdout
    assert (
        "Run it: toolscout smart 'convert 5 miles to km' --tool units/convert_units "
        """--arguments '{"from_unit": "miles", "to_unit": "km", "value": 5}'""" in done.stdout
    )


def test_tool_not_found_exits_2_and_runs_nothing(sandbox: Sandbox) -> None:
    done = sandbox.run("smart", "zebra", "migration")
    assert done.returncode == 2, done.stdout + done.stderr
    assert 'No tool reached confidence 0.50 for "zebra migration" (TOOL_NOT_FOUND;' in done.stderr
    assert "Nothing was run." in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""

    data = _json(sandbox, "zebra migration", expect=2)
    assert data["success"] is False and data["error"]["code"] == "TOOL_NOT_FOUND"

    # A bar no tool reaches: the closest are named, nothing runs.
    strict = sandbox.run("smart", REQUEST, "--threshold", "1.0")
    assert strict.returncode == 2, strict.stdout + strict.stderr
    assert "No tool reached confidence 1.00" in strict.stderr
    assert "Closest:\n  1. units/convert_units  " in strict.stderr
    assert sandbox.run("smart", REQUEST, "--threshold", "1.5").returncode == 1  # out of range: a usage error


def test_an_explicit_tool_runs_with_the_arguments_given(sandbox: Sandbox) -> None:
    args = '{"value": 2, "from_unit": "km", "to_unit": "m"}'
    done = sandbox.run("smart", "two km in metres", "--tool", "units/convert_units", "--arguments", args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Chose units/convert_units (explicit, confidence 1.00)" in done.stdout
    assert "Arguments (given with --arguments):" in done.stdout and "2 km = 2000 m" in done.stdout

    piped = sandbox.run("smart", "x", "--tool", "units/convert_units", "--arguments", "-", "--json", stdin=args)
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["execution_result"]["structuredContent"]["result"] == 2000

    # The tool ran and reported an error: exit 3, as `execute` does.
    failed = sandbox.run("smart", "x", "--tool", "units/calculate", "--arguments", '{"expression": "1/0"}')
    assert failed.returncode == 3, failed.stdout + failed.stderr
    assert "✗ Error" in failed.stdout and "Division by zero" in failed.stdout
    # Disabled by toolRules (4), a tool the server lacks (2).
    disabled = sandbox.run("smart", "x", "--tool", "notes/delete_note", "--arguments", '{"id": "1"}', "--confirm")
    assert disabled.returncode == 4 and "disabled by toolRules" in disabled.stderr
    unknown = sandbox.run("smart", "x", "--tool", "units/nope")
    assert unknown.returncode == 2 and "has no tool 'nope'" in unknown.stderr


def test_command_line_mistakes_exit_1_without_a_traceback(sandbox: Sandbox) -> None:
    bad = sandbox.run("smart", "x", "--tool", "units/convert_units", "--arguments", '{"value": 2')
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Arguments from --arguments are not valid JSON (line 1, column 12" in bad.stderr
    assert "Traceback" not in bad.stderr and bad.stdout == ""

    not_object = _json(sandbox, "x", "--tool", "units/convert_units", "--arguments", "[1]", expect=1)
    assert not_object["error"]["code"] == "INVALID_ARGUMENTS"

    alone = sandbox.run("smart", REQUEST, "--arguments", "{}")
    assert alone.returncode == 1 and "--arguments goes with --tool" in alone.stderr
    assert "Traceback" not in alone.stderr
    assert sandbox.run("smart").returncode == 1  # no request


def test_nothing_runs_without_its_arguments_or_a_confirmation(sandbox: Sandbox) -> None:
    missing = sandbox.run("smart", "convert", "miles")
    assert missing.returncode == 1, missing.stdout + missing.stderr
    assert "Chose units/convert_units" in missing.stdout
    assert "✗ Not run: missing value, from_unit, to_unit." in missing.stderr
    assert "Give the complete arguments: toolscout smart 'convert miles' --tool units/convert_units" in missing.stderr

    # update_note is annotated destructive: not run from plain words, nor named without --confirm.
    args = '{"id": "1", "title": "Renamed"}'
    unconfirmed = sandbox.run("smart", "rename note 1", "--tool", "notes/update_note", "--arguments", args)
    assert unconfirmed.returncode == 1, unconfirmed.stdout + unconfirmed.stderr
    assert "notes/update_note can destroy data, so it was not run" in unconfirmed.stderr
    assert "--confirm" in unconfirmed.stderr and "✓ Success" not in unconfirmed.stdout
    planned = _json(sandbox, "rename note 1", "--tool", "notes/update_note", "--arguments", args, expect=1)
    assert planned["status"] == "confirmation_required"
    call = planned["planned_call"]
    assert call == {**call, "tool": "notes/update_note", "arguments": json.loads(args), "confirm": True}

    confirmed = _json(sandbox, "rename", "--tool", "notes/update_note", "--arguments", args, "--confirm", expect=0)
    assert confirmed["execution_result"]["structuredContent"]["title"] == "Renamed"


def test_forget_clears_what_was_learnt(sandbox: Sandbox) -> None:
    memory = sandbox.root / "learning" / "m.json"
    config = sandbox.write("learning.yaml", LEARNING.format(python=PYTHON, path=json.dumps(str(memory))))
    ran = sandbox.run("smart", REQUEST, "--config", str(config))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    learnt = json.loads(memory.read_text(encoding="utf-8"))
    assert [list(tools) for tools in learnt["requests"].values()] == [["units/convert_units"]]

    # Options of a request are not forget's.
    wrong = sandbox.run("smart", "forget", "--tool", "units/convert_units", "--config", str(config))
    assert wrong.returncode == 1 and "takes only --config, --demo and --json, not --tool" in wrong.stderr
    assert memory.exists()

    done = sandbox.run("smart", "forget", "--config", str(config))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Forgot 1 learnt request ({memory})." in done.stdout
    assert not memory.exists()
    again = sandbox.json("smart", "forget", "--config", str(config))
    assert again == {"success": True, "forgotten": 0, "path": str(memory)}


def test_a_chosen_tool_that_fails_in_the_gateway_exits_as_execute_does(sandbox: Sandbox) -> None:
    # server-everything's long operation takes ten minutes; the server's call timeout is 1 s.
    config = sandbox.write("slow.yaml", SLOW.format(command=npm_tool("mcp-server-everything")))
    args = ("x", "--tool", "everything/trigger-long-running-operation", "--arguments", '{"duration": 600, "steps": 2}')
    done = sandbox.run("smart", *args, "--config", str(config))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Chose everything/trigger-long-running-operation (explicit, confidence 1.00)" in done.stdout
    assert "did not answer within 1s; the call was cancelled upstream" in done.stderr
    assert "smart_tool_discovery" not in done.stderr  # worded for the terminal, not for an agent

    data = _json(sandbox, *args, "--config", str(config), expect=3)
    assert data["success"] is False and data["error"]["code"] == "TIMEOUT"
    assert data["tool_name"] == "everything/trigger-long-running-operation"
