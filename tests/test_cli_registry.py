"""`toolscout registry ...` as a real child process on this machine's registry (no `--url`): what it
writes, what it refuses and how (exit codes, one line, never a traceback). With `--url` against a
running gateway: tests/test_registration_http.py."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from benchmarks.processes import free_port

from tests.helpers.cli_sandbox import Sandbox, make_sandbox
from tests.servers.schema_bomb import CYCLE_SCHEMA, bomb_schema


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    box = make_sandbox(tmp_path)
    config = {"mcpServers": {"notes": {"command": "notes-server"}}, "registry": {"path": str(tmp_path / "reg.db")}}
    box.write("work/toolscout.json", json.dumps(config))
    return box


def refused(done: subprocess.CompletedProcess[str], code: int, said: str) -> None:
    assert done.returncode == code, done.stdout + done.stderr
    assert said in done.stderr
    assert "Traceback" not in done.stderr


def test_add_list_and_remove_in_the_local_registry(sandbox: Sandbox, tmp_path: Path) -> None:
    added = sandbox.run("registry", "add", "cloudtrail", "http://127.0.0.1:9001/mcp", "-n", "run-1", "--ttl", "600")
    assert added.returncode == 0, added.stderr
    assert "Registered run-1.cloudtrail in this machine's registry (expires in 10 min)." in added.stdout
    schema = sandbox.write("schema.json", json.dumps({"type": "object", "properties": {"ip": {"type": "string"}}}))
    tool = sandbox.run(
        "registry", "add-tool", "abuseipdb", "--global", "--callback-url", "http://127.0.0.1:9/cb",
        "--description", "Check an IP.", "--input-schema", f"@{schema}",
    )  # fmt: skip
    assert tool.returncode == 0, tool.stderr

    listed = sandbox.json("registry", "list")
    assert [(s["shownAs"], s["url"]) for s in listed["servers"]] == [("run-1.cloudtrail", "http://127.0.0.1:9001/mcp")]
    assert [(t["shownAs"], t["inputSchema"]["properties"]) for t in listed["tools"]] == [
        ("abuseipdb", {"ip": {"type": "string"}})
    ]
    assert sandbox.json("registry", "list", "-n", "run-2") == {"servers": [], "tools": []}
    with sqlite3.connect(tmp_path / "reg.db") as db:  # the file the config names
        assert db.execute("SELECT namespace, name FROM server_v1").fetchall() == [("run-1", "cloudtrail")]

    removed = sandbox.run("registry", "remove", "cloudtrail", "-n", "run-1")
    assert removed.returncode == 0, removed.stderr
    refused(sandbox.run("registry", "remove", "cloudtrail", "-n", "run-1"), 2, "No server 'cloudtrail' is registered")
    assert sandbox.run("registry", "remove-tool", "abuseipdb", "--global").returncode == 0
    assert sandbox.json("registry", "list") == {"servers": [], "tools": []}


URL = "http://127.0.0.1:9001/mcp"


def test_mistakes_in_a_server_are_one_line_and_an_exit_code(sandbox: Sandbox) -> None:
    refused(sandbox.run("registry", "add", "x", URL), 1, "name the namespace (--namespace NS), or --global")
    refused(sandbox.run("registry", "add", "x", URL, "-n", "a", "--global"), 1, "name the namespace")
    refused(sandbox.run("registry", "add", "x", "ftp://h/mcp", "-n", "a"), 1, '"url" must be an http:// or https://')
    refused(sandbox.run("registry", "add", "x", URL, "-n", "a", "-H", "nocolon"), 1, "--header must be NAME: VALUE")
    refused(sandbox.run("registry", "add", "a.b", URL, "-n", "a"), 1, '"name" must be 1-64 letters')
    refused(sandbox.run("registry", "add", "notes", URL, "--global"), 1, "'notes' is the name of a configured server")


def test_mistakes_in_a_tool_are_one_line_and_an_exit_code(sandbox: Sandbox) -> None:
    assert sandbox.run("registry", "add", "lookup", URL, "-n", "a").returncode == 0
    tool = ["registry", "add-tool", "lookup", "-n", "a", "--callback-url", "http://h/cb", "--description", "d"]
    refused(sandbox.run(*tool), 1, "'a.lookup' is already registered as a server")
    refused(sandbox.run(*tool, "--input-schema", "{nope"), 1, "--input-schema is not JSON")
    refused(sandbox.run(*tool, "--input-schema", "@/nonexistent.json"), 1, "cannot read the input schema")
    refused(sandbox.run(*tool, "--input-schema", '{"type": "array"}'), 1, '"inputSchema" must be a JSON Schema object')
    bomb = sandbox.write("bomb.json", json.dumps(bomb_schema()))
    refused(sandbox.run(*tool, "--input-schema", f"@{bomb}"), 1, "more than 1,000 subschema evaluations")
    refused(sandbox.run(*tool, "--input-schema", json.dumps(CYCLE_SCHEMA)), 1, "$ref cycle")


def test_mistakes_in_a_listing_are_one_line_and_an_exit_code(sandbox: Sandbox) -> None:
    refused(sandbox.run("registry", "list", "-n", "a.b"), 1, "--namespace must be 1-64 letters")
    gateway = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    refused(sandbox.run("registry", "list", "--url", gateway), 3, "Cannot reach the gateway at")
    refused(sandbox.run("registry", "list", "--url", "localhost:8765"), 1, "--url must be the gateway's http://")
