"""`list`, `search`, `tools`, `inspect` and `tokens` answer from the persistent catalog without
starting a server; `execute` and `smart` start only the server of the tool that runs; a hanging
server is tried once and remembered.

Every server here is a real demo server (or a process that never answers) started through
tests/fixtures/counted_server.py, which records each start: the tests count what a command started.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.helpers.cli_sandbox import Sandbox, make_sandbox
from tests.helpers.paths import PYTHON

COUNTED = Path(__file__).parent / "fixtures" / "counted_server.py"
CONVERT = '{"value": 2, "from_unit": "km", "to_unit": "m"}'


def counted(log: Path, module: str, **entry: Any) -> dict[str, Any]:
    """A config entry for `module` (or `hang`) started through counted_server.py, logging to `log`."""
    return {"command": PYTHON, "args": [str(COUNTED), str(log), module], **entry}


def starts(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def configure(sandbox: Sandbox, servers: dict[str, Any]) -> None:
    sandbox.write("work/toolscout.json", json.dumps({"mcpServers": servers}))


def test_catalog_questions_are_answered_from_the_store_without_starting_a_server(tmp_path: Path) -> None:
    sandbox = make_sandbox(tmp_path)
    units, notes = tmp_path / "units.log", tmp_path / "notes.log"
    configure(
        sandbox, {"units": counted(units, "toolscout.demo.units"), "notes": counted(notes, "toolscout.demo.notes")}
    )

    first = {s["name"]: s for s in sandbox.json("list")["servers"]}  # nothing stored: both are connected
    assert first["units"]["status"] == "connected" and "stale" not in first["units"]
    assert (starts(units), starts(notes)) == (1, 1)

    found = sandbox.json("search", "convert kilometers to miles")["results"]
    assert found[0]["tool"] == "convert_units"
    assert all(r["stale"] is True and r["cachedAt"] for r in found)
    listed = sandbox.json("tools", "units")
    assert listed["stale"] is True and "convert_units" in [t["name"] for t in listed["tools"]]
    details = sandbox.json("inspect", "units", "convert_units")
    assert details["stale"] is True and [p["name"] for p in details["parameters"]][:1] == ["value"]
    servers = {s["name"]: s for s in sandbox.json("list")["servers"]}
    assert servers["notes"]["status"] == "idle" and servers["notes"]["stale"] is True
    assert servers["notes"]["toolCount"] == first["notes"]["toolCount"]
    # Every match, so that both servers' stored tools are in it (the floor would leave units' alone).
    people = sandbox.run("search", "convert kilometers to miles", "--min-relevance", "0")
    assert people.returncode == 0 and "1. units/convert_units" in people.stdout
    assert "as listed " in people.stdout and "from the stored catalog; --refresh asks the servers" in people.stdout
    assert "Not connected — tools as listed " in sandbox.run("list").stdout
    assert (starts(units), starts(notes)) == (1, 1)  # none of those started a server

    done = sandbox.json("execute", "units", "convert_units", "--args", CONVERT)
    assert done["success"] is True
    assert (starts(units), starts(notes)) == (2, 1)  # its own server only

    fresh = sandbox.json("search", "convert kilometers to miles", "--refresh")["results"]
    assert fresh[0]["tool"] == "convert_units" and not any("stale" in r for r in fresh)
    assert (starts(units), starts(notes)) == (3, 2)

    typo = sandbox.run("inspect", "units", "convert_unit")  # from the store too, with its suggestions
    assert typo.returncode == 2 and "Did you mean 'convert_units'" in typo.stderr
    assert sandbox.run("tools", "nowhere").returncode == 2
    assert (starts(units), starts(notes)) == (3, 2)


def test_tokens_and_smart_start_only_the_server_of_the_tool_that_runs(tmp_path: Path) -> None:
    sandbox = make_sandbox(tmp_path)
    units, notes = tmp_path / "units.log", tmp_path / "notes.log"
    configure(
        sandbox, {"units": counted(units, "toolscout.demo.units"), "notes": counted(notes, "toolscout.demo.notes")}
    )

    # Nothing stored yet: --tool starts its own server only, and what it listed is stored.
    ran = sandbox.json("smart", "x", "--tool", "units/convert_units", "--arguments", CONVERT)
    assert ran["execution_result"]["structuredContent"]["result"] == 2000
    assert (starts(units), starts(notes)) == (1, 0)
    assert {s["name"]: s["status"] for s in sandbox.json("list")["servers"]} == {"units": "idle", "notes": "connected"}
    assert (starts(units), starts(notes)) == (1, 1)

    stored = sandbox.json("tokens")
    assert {row["server"]: row["status"] for row in stored["servers"]} == {"units": "idle", "notes": "idle"}
    assert all(row["cachedAt"] for row in stored["servers"])
    people = sandbox.run("tokens")
    assert people.returncode == 0 and "from the stored catalog; --refresh asks the servers" in people.stdout
    ranked = sandbox.json("smart", "convert 5 miles to km", "--suggestions", "3")
    assert ranked["suggestions"][0]["tool_name"] == "units/convert_units"
    shown = sandbox.run("smart", "convert 5 miles to km", "--suggestions", "3")
    assert shown.returncode == 0 and "from the stored catalog; --refresh asks the servers" in shown.stdout
    assert (starts(units), starts(notes)) == (1, 1)  # neither measuring nor ranking started a server

    chosen = sandbox.json("smart", "convert 5 miles to km")
    assert chosen["tool_name"] == "units/convert_units" and "execution_result" in chosen
    assert (starts(units), starts(notes)) == (2, 1)  # the server of the tool that ran, alone

    live = sandbox.json("tokens", "--refresh")
    assert (starts(units), starts(notes)) == (3, 2)
    assert {row["server"]: row["status"] for row in live["servers"]} == {"units": "connected", "notes": "connected"}
    assert not any("cachedAt" in row for row in live["servers"])
    # The stored catalog is what the servers list: the same figures either way.
    assert [(r["tools"], r["tokens"]) for r in live["servers"]] == [
        (r["tools"], r["tokens"]) for r in stored["servers"]
    ]
    assert live["modes"] == stored["modes"]


def test_a_hanging_server_is_waited_for_once_and_its_failure_remembered(tmp_path: Path) -> None:
    sandbox = make_sandbox(tmp_path)
    units, hang = tmp_path / "units.log", tmp_path / "hang.log"
    configure(
        sandbox, {"units": counted(units, "toolscout.demo.units"), "hang": counted(hang, "hang", connectTimeout=2)}
    )

    first = {s["name"]: s for s in sandbox.json("list", expect=3)["servers"]}  # 3: a server is in error
    assert first["hang"]["status"] == "error" and first["hang"]["error"] == "did not finish connecting within 2s"
    assert first["units"]["status"] == "connected"
    assert (starts(units), starts(hang)) == (1, 1)

    again = {s["name"]: s for s in sandbox.json("list", expect=3)["servers"]}
    assert again["hang"]["status"] == "error" and again["hang"]["error"] == "did not finish connecting within 2s"
    assert "failedAt" in again["hang"] and again["units"]["stale"] is True
    people = sandbox.run("list")
    assert people.returncode == 3
    assert "✗ hang (0 tools)" in people.stdout and "--refresh tries again" in people.stdout
    found = sandbox.json("search", "convert kilometers to miles")["results"]
    assert found[0]["tool"] == "convert_units"
    assert (starts(units), starts(hang)) == (1, 1)  # neither was started again

    alone = sandbox.run("tools", "hang")  # a command about it alone tries it again
    assert alone.returncode == 3 and "did not finish connecting within 2s" in alone.stderr
    assert (starts(units), starts(hang)) == (1, 2)
    assert sandbox.run("list", "--refresh").returncode == 3
    assert (starts(units), starts(hang)) == (2, 3)


def test_a_failure_is_remembered_until_the_server_is_tried_again_and_works(tmp_path: Path) -> None:
    sandbox = make_sandbox(tmp_path)
    script = tmp_path / "bin" / "units-server"  # not installed yet
    configure(sandbox, {"units": {"command": str(script)}})

    assert sandbox.json("list", expect=3)["servers"][0]["error"].startswith("command not found")
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\nexec {PYTHON} -m toolscout.demo.units\n")
    os.chmod(script, 0o755)
    remembered = sandbox.json("list", expect=3)["servers"][0]  # installed since, but not tried again
    assert remembered["status"] == "error" and "failedAt" in remembered
    assert sandbox.json("list", "--refresh")["servers"][0]["status"] == "connected"
    stored = sandbox.json("list")["servers"][0]  # exit 0: its failure is forgotten with its live list
    assert stored["status"] == "idle" and stored["stale"] is True and "error" not in stored
