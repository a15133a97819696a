"""`toolscout doctor`: each server configured → started → listed → searchable, and why a step fails.

Real processes: the command line as a child; the units and notes demo servers, a server with no
tools, and one that fails at start with a message on stderr, over stdio; a running `toolscout serve`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from benchmarks.processes import running

from tests.helpers.cli_sandbox import Sandbox, make_sandbox
from tests.helpers.paths import PYTHON

pytestmark = pytest.mark.anyio

EMPTY_SERVER = 'from mcp.server import MCPServer\nMCPServer("empty").run()\n'
CRASH = "import sys; sys.stderr.write('Error: GITHUB_TOKEN is not set\\n'); sys.exit(1)"


def units() -> dict[str, Any]:
    return {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]}


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    box = make_sandbox(tmp_path)
    empty = box.write("work/empty_server.py", EMPTY_SERVER)
    servers = {
        "units": units(),
        "notes": {"command": PYTHON, "args": ["-m", "toolscout.demo.notes"]},
        "empty": {"command": PYTHON, "args": [str(empty)]},
        "crash": {"command": PYTHON, "args": ["-c", CRASH]},
        "off": {"command": PYTHON, "disabled": True},
    }
    rules = [{"pattern": ["*"], "server": "notes", "enabled": False}, {"pattern": ["calculate"], "enabled": False}]
    config = {"mcpServers": servers, "toolRules": rules, "catalogCache": False}
    box.write("work/toolscout.json", json.dumps(config))
    return box


def test_each_server_stops_at_the_step_it_fails_with_the_reason(sandbox: Sandbox) -> None:
    data = sandbox.json("doctor", expect=3)
    assert data["ok"] is False
    found = {row["server"]: row for row in data["servers"]}
    assert found["units"]["ok"] is True and set(found["units"]["steps"].values()) == {"ok"}
    assert "1 of its 3 tools are disabled by toolRules" in found["units"]["notes"]

    assert found["off"]["failedStep"] == "configured" and "`disabled: true`" in found["off"]["reason"]
    assert found["off"]["steps"] == {
        "configured": "failed",
        "started": "not tried",
        "listed": "not tried",
        "searchable": "not tried",
    }
    # The server's own words on stderr are the reason it did not start.
    assert found["crash"]["failedStep"] == "started" and "GITHUB_TOKEN is not set" in found["crash"]["reason"]
    assert found["empty"]["failedStep"] == "listed" and "lists no tools" in found["empty"]["reason"]
    assert found["notes"]["failedStep"] == "searchable"
    assert found["notes"]["reason"].startswith("all 6 of its tools are disabled: toolRules #1 (*) disable them.")
    assert found["notes"]["steps"]["listed"] == "ok" and found["notes"]["enabled"] == 0

    human = sandbox.run("doctor")
    assert human.returncode == 3, human.stderr
    out = human.stdout.splitlines()
    assert "crash  ✓ configured → ✗ started → · listed → · searchable" in out
    assert "units  ✓ configured → ✓ started → ✓ listed → ✓ searchable" in out
    assert any(line.startswith("  started: ") and "GITHUB_TOKEN is not set" in line for line in out)
    assert "4 of 5 servers fail a step." in out


def test_a_whitelist_that_enables_none_of_a_servers_tools_is_named(sandbox: Sandbox) -> None:
    config = json.loads((sandbox.cwd / "toolscout.json").read_text())
    config["toolRules"] = [{"pattern": ["convert_*"], "enabled": True}]
    sandbox.write("work/toolscout.json", json.dumps(config))
    (notes,) = sandbox.json("doctor", "--server", "notes", expect=3)["servers"]
    assert "the rules are a whitelist and none enables them" in notes["reason"]
    assert sandbox.run("doctor", "--server", "nowhere").returncode == 2


async def test_a_healthy_config_passes_and_the_running_serve_is_asked_too(tmp_path: Path) -> None:
    sandbox = make_sandbox(tmp_path)
    config = sandbox.write("work/toolscout.json", json.dumps({"mcpServers": {"units": units()}, "catalogCache": False}))
    config.chmod(0o600)
    alone = sandbox.run("doctor")
    assert alone.returncode == 0, alone.stdout + alone.stderr
    assert "Every server's tools can be found." in alone.stdout
    assert "running toolscout serve" not in alone.stdout

    command = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--transport", "http", "--port", "0"]
    # Ready once its own connection to units is up (the line its log writes then).
    async with running(command, ready=r"units: connected", env=sandbox.env(), stdin=subprocess.DEVNULL):
        data = await anyio.to_thread.run_sync(lambda: sandbox.json("doctor"))
    (row,) = data["servers"]
    assert row["ok"] is True and "found by the running toolscout serve's search too" in row["notes"]
