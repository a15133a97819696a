"""`cli.exitCodes`: toolscout's exit codes (the default) or only those the discovery spec lists per command.

The real command line as a child process, against the units demo server and a server that cannot start.
"""

from __future__ import annotations

import json

import pytest

from tests.helpers.cli_sandbox import Sandbox, make_sandbox
from tests.helpers.paths import PYTHON


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    box = make_sandbox(tmp_path_factory.mktemp("exit-codes"))
    servers = {
        "units": {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]},
        "broken": {"command": "definitely-not-installed-xyz"},
    }
    for name, codes in (("toolscout", None), ("spec", "spec")):
        config = {"mcpServers": servers, "catalogCache": False} | ({"cli": {"exitCodes": codes}} if codes else {})
        box.write(f"work/{name}.json", json.dumps(config))
    return box


def codes(sandbox: Sandbox, config: str) -> dict[str, int]:
    runs = {
        "list": ("list",),
        "tools": ("tools", "broken"),
        "inspect": ("inspect", "broken/anything"),
        "execute": ("execute", "broken/anything"),
        "not found": ("inspect", "units/nope"),
        "no results": ("search", "zzqx", "--server", "units"),
        "invalid": ("execute", "units/convert_units", "--args", "[1]"),
    }
    return {what: sandbox.run(*args, "--config", f"{config}.json").returncode for what, args in runs.items()}


def test_the_default_codes_say_a_server_is_unreachable(sandbox: Sandbox) -> None:
    assert codes(sandbox, "toolscout") == {
        "list": 3,
        "tools": 3,
        "inspect": 3,
        "execute": 3,
        "not found": 2,
        "no results": 2,
        "invalid": 1,
    }


def test_the_spec_codes_keep_each_command_to_its_own(sandbox: Sandbox) -> None:
    # list: 0/1/2; tools and inspect: 2 for a server not found (or not reachable); execute: 3 the call failed.
    assert codes(sandbox, "spec") == {
        "list": 0,
        "tools": 2,
        "inspect": 2,
        "execute": 3,
        "not found": 2,
        "no results": 2,
        "invalid": 1,
    }
    listed = sandbox.run("list", "--config", "spec.json")
    assert "✗ broken" in listed.stdout and "command not found" in listed.stdout  # the row still says so


def test_a_wrong_value_is_a_configuration_error(sandbox: Sandbox) -> None:
    sandbox.write("work/wrong.json", json.dumps({"mcpServers": {}, "cli": {"exitCodes": "posix"}}))
    done = sandbox.run("list", "--config", "wrong.json")
    assert done.returncode == 2 and "cli.exitCodes" in done.stderr and "'toolscout' or 'spec'" in done.stderr
    assert "Traceback" not in done.stderr


def test_execute_json_answers_the_designs_envelope_when_the_config_asks_for_it(sandbox: Sandbox) -> None:
    # `executeResult: envelope` gives `toolscout execute --json` the shape `execute_tool` answers in that
    # mode: `result` is the tool's value, not the MCP result around it.
    servers = {"units": {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]}}
    config = {"mcpServers": servers, "catalogCache": False, "executeResult": "envelope"}
    sandbox.write("work/envelope.json", json.dumps(config))
    convert = ("units/convert_units", "--args", '{"value": 1, "from_unit": "m", "to_unit": "cm"}')
    ok = sandbox.json("execute", *convert, "--config", "envelope.json")
    assert set(ok) == {"success", "result"} and ok["success"] is True
    assert ok["result"]["result"] == 100 and ok["result"]["to_unit"] == "cm"
    native = sandbox.json("execute", *convert, "--config", "toolscout.json")
    assert native["success"] is True and native["result"]["structuredContent"] == ok["result"]
    failed = sandbox.json(
        "execute", "units/calculate", "--args", '{"expression": "1/0"}', "--config", "envelope.json", expect=3
    )
    assert failed["success"] is False and "result" not in failed
    assert failed["error"]["code"] == "TOOL_EXECUTION_ERROR" and "Division by zero" in failed["error"]["message"]
