"""`toolscout list | search | tools | inspect | execute | tokens` against the demo servers and server-everything."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path
from typing import Any, get_args

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.helpers.cli_sandbox import Sandbox, make_sandbox
from tests.helpers.paths import NPM_BIN, PYTHON, ROOT, npm_tool
from toolscout.config.models import ModeName
from toolscout.demo.config import demo_config
from toolscout.gateway.core import Gateway
from toolscout.modes.costs import listed_tools, server_costs
from toolscout.modes.hints import hinted, native_order, server_loads
from toolscout.naming import native_names
from toolscout.render.text import tool_definitions_json, tool_tokens
from toolscout.serve.server import build_server

CONFIG = """\
# Demo servers and the public reference server, as a user would write it.
mcpServers:
  notes:
    command: {python}
    args: [-m, toolscout.demo.notes]
  units:
    command: {python}
    args: [-m, toolscout.demo.units]
  everything:
    command: npx
    args: [-y, "@modelcontextprotocol/server-everything"]
    cwd: {npm}
  broken:
    command: definitely-not-installed-xyz
toolRules:
  - pattern: ["delete_*"]
    enabled: false
    tags: [dangerous]
"""


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    npm_tool("mcp-server-everything")
    box = make_sandbox(tmp_path_factory.mktemp("cli"))
    box.write("work/toolscout.yaml", CONFIG.format(python=PYTHON, npm=ROOT / "tools" / "npm"))
    return box


def test_list_shows_servers_counts_and_errors(sandbox: Sandbox) -> None:
    # The first command of this module: nothing is stored yet, every server is connected.
    done = sandbox.run("list", "--status", "--tools")
    assert done.returncode == 3, done.stderr  # a server in error
    out = done.stdout
    assert "MCP Servers (4 configured):" in out
    assert "✓ notes (5 tools, 1 disabled)" in out
    assert "✗ broken (0 tools)" in out
    assert "Status: Error — command not found: definitely-not-installed-xyz" in out
    assert "protocol 2025-11-25" in out  # server-everything speaks the handshake era
    assert "Tools: " in out and "convert_units" in out

    live = {s["name"]: s for s in sandbox.json("list", "--refresh", expect=3)["servers"]}
    assert live["everything"]["status"] == "connected" and live["everything"]["toolCount"] > 10
    assert "stale" not in live["everything"] and live["broken"]["status"] == "error"

    # From now on this module's commands answer from the persistent catalog, marked stale.
    stored = {s["name"]: s for s in sandbox.json("list", expect=3)["servers"]}
    assert stored["everything"]["status"] == "idle" and stored["everything"]["stale"] is True
    assert stored["everything"]["toolCount"] == live["everything"]["toolCount"]
    assert stored["everything"]["cachedAt"].endswith("+00:00")
    assert stored["broken"]["status"] == "error" and "failedAt" in stored["broken"]  # remembered, not retried
    assert stored["broken"]["error"].startswith("command not found: definitely-not-installed-xyz")
    human = sandbox.run("list").stdout
    assert "Status: Not connected — tools as listed " in human and " (--refresh connects)" in human
    assert "command not found: definitely-not-installed-xyz (is it installed and on PATH?) (" in human
    assert "; --refresh tries again)" in human


def test_search_ranks_and_exits_2_when_nothing_matches(sandbox: Sandbox) -> None:
    done = sandbox.run("search", "convert kilometers to miles", "--limit", "3")
    assert done.returncode == 0, done.stderr
    assert 'Search results for "convert kilometers to miles" (' in done.stdout
    assert "1. units/convert_units (" in done.stdout and "% match)" in done.stdout
    assert "broken" not in done.stderr  # a failing server is not the search's business
    assert "Nothing fits well" not in done.stdout

    # No server knows stock prices: the closest tools are shown, said to fit none too well.
    weak = sandbox.run("search", "get the stock price", "--limit", "3")
    assert weak.returncode == 0 and "Nothing fits well: the task may need a tool no server offers" in weak.stdout
    assert sandbox.json("search", "get the stock price")["nothingFits"] is True

    data = sandbox.json("search", "tiny image", "--server", "everything")
    assert data["results"][0]["tool"] == "get-tiny-image"
    assert {r["server"] for r in data["results"]} == {"everything"}

    # No word of it in any tool (parameter descriptions are searched too: "patterns" would match
    # server-everything's "annotation patterns", weakly) and nothing close in meaning.
    nothing = sandbox.run("search", "zebra migration")
    assert nothing.returncode == 2
    assert 'No tools found for "zebra migration"' in nothing.stderr

    unknown = sandbox.run("search", "x", "--server", "evrything")
    assert unknown.returncode == 2
    assert "Did you mean 'everything'" in unknown.stderr

    assert sandbox.run("search", "x", "--limit", "0").returncode == 1
    assert sandbox.run("search").returncode == 1


def test_search_all_finds_disabled_tools_marked_disabled(sandbox: Sandbox) -> None:
    enabled_only = [r["tool"] for r in sandbox.json("search", "delete a note", "--server", "notes")["results"]]
    assert "delete_note" not in enabled_only

    found = sandbox.json("search", "delete a note", "--server", "notes", "--all")["results"]
    assert found[0]["tool"] == "delete_note" and found[0]["enabled"] is False
    assert all("enabled" not in r for r in found[1:])  # (said of the disabled ones only)

    shown = sandbox.run("search", "delete a note", "--server", "notes", "--all")
    assert shown.returncode == 0, shown.stderr
    assert "1. notes/delete_note (" in shown.stdout and "(disabled)" in shown.stdout

    # Explained, the disabled tool has its rankers' parts like any other.
    explained = sandbox.json("search", "delete a note", "--server", "notes", "--all", "--explain")["results"]
    assert explained[0]["tool"] == "delete_note" and explained[0]["contributions"]["fusion"] > 0


def test_tools_marks_enabled_and_disabled(sandbox: Sandbox) -> None:
    plain = sandbox.run("tools", "notes")
    assert plain.returncode == 0
    assert "Tools from notes (5 enabled, 1 disabled):" in plain.stdout
    assert "delete_note" not in plain.stdout

    everything = sandbox.run("tools", "notes", "--all", "--tags")
    assert "✗ delete_note (disabled)" in everything.stdout
    assert "Tags: dangerous" in everything.stdout

    data = sandbox.json("tools", "notes")
    assert [t["name"] for t in data["tools"]] == [
        "create_note",
        "get_note",
        "list_notes",
        "search_notes",
        "update_note",
    ]
    assert sandbox.run("tools", "nowhere").returncode == 2


def test_inspect_shows_parameters_hints_and_examples(sandbox: Sandbox) -> None:
    done = sandbox.run("inspect", "units", "convert_units", "--examples")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Tool: units/convert_units" in out
    assert "value (number, required)" in out
    assert "Hints: read-only, idempotent" in out
    # Values that look like real ones (the description's own example, a unit's symbol), not placeholders.
    assert 'toolscout execute units/convert_units --args \'{"value": 26.2, "from_unit": "mi"' in out

    disabled = sandbox.run("inspect", "notes", "delete_note")
    assert disabled.returncode == 0
    assert "(disabled by toolRules)" in disabled.stdout

    data = sandbox.json("inspect", "everything", "get-structured-content")
    assert data["outputSchema"]["type"] == "object"
    assert "examples" not in data

    typo = sandbox.run("inspect", "units", "convert_unit")
    assert typo.returncode == 2
    assert "Did you mean 'convert_units'" in typo.stderr


def test_execute_renders_results_for_people(sandbox: Sandbox, tmp_path: Path) -> None:
    done = sandbox.run("execute", "units", "convert_units", "--args", '{"value": 2, "from_unit": "km", "to_unit": "m"}')
    assert done.returncode == 0, done.stderr
    assert "Executing: units/convert_units" in done.stdout and "✓ Success" in done.stdout
    assert '"result": 2000' in done.stdout

    image = sandbox.run("execute", "everything", "get-tiny-image")
    assert image.returncode == 0, image.stderr
    saved = next(line for line in image.stdout.splitlines() if "saved to" in line)
    path = Path(saved.rsplit("saved to ", 1)[1].rstrip("]"))
    assert path.suffix == ".png" and path.read_bytes().startswith(b"\x89PNG")

    args_file = tmp_path / "args.json"
    args_file.write_text('{"message": "from a file"}')
    from_file = sandbox.run("execute", "everything", "echo", "--args", f"@{args_file}")
    assert "from a file" in from_file.stdout

    from_stdin = sandbox.run("execute", "everything", "echo", "--args", "-", stdin='{"message": "from stdin"}')
    assert "from stdin" in from_stdin.stdout


def test_one_spelling_of_a_tool_is_printed_and_read_everywhere(sandbox: Sandbox) -> None:
    # Read as one argument (or the discovery service design's `server:tool`, or the native
    # `server__tool`), as well as the two-argument form.
    convert = '{"value": 3, "from_unit": "km", "to_unit": "m"}'
    spellings = (["units/convert_units"], ["units:convert_units"], ["units__convert_units"], ["units", "convert_units"])
    for named in spellings:
        done = sandbox.run("execute", *named, "--args", convert)
        assert done.returncode == 0, done.stderr
        assert "Executing: units/convert_units" in done.stdout and '"result": 3000' in done.stdout
        inspected = sandbox.json("inspect", *named)
        assert (inspected["server"], inspected["tool"]) == ("units", "convert_units")
    # The same spelling wherever the command line names a tool to a person.
    explained = sandbox.run("search", "convert kilometers to miles", "--explain", "--limit", "2")
    assert explained.returncode == 0 and "units/convert_units" in explained.stdout, explained.stderr
    floor = sandbox.run("search", "convert kilometers to miles", "--min-relevance", "1", "--server", "units")
    assert floor.returncode == 2 and "the closest is units/convert_units (" in floor.stderr
    invalid = sandbox.run("execute", "units/convert_units", "--args", '{"value": "far"}')
    assert invalid.returncode == 1 and "Arguments for units/convert_units do not match" in invalid.stderr
    typo = sandbox.run("execute", "units/convert_unit")
    assert typo.returncode == 2 and "Did you mean 'convert_units'" in typo.stderr

    # What cannot be read says how to name a tool, and exits 1 (2 for a server that does not exist).
    bare = sandbox.run("execute", "convert_units")
    assert bare.returncode == 1 and "as SERVER/TOOL (for example units/convert_units)" in bare.stderr
    server_only = sandbox.run("inspect", "units")
    assert server_only.returncode == 1 and "`units/TOOL`" in server_only.stderr
    unknown = sandbox.run("execute", "unitz/convert_units")
    assert unknown.returncode == 2 and "No server named 'unitz'. Did you mean 'units'?" in unknown.stderr
    assert "Traceback" not in bare.stderr + server_only.stderr + unknown.stderr


def test_execute_errors_read_as_code_message_server_and_tool(sandbox: Sandbox) -> None:
    failed = sandbox.run("execute", "units/calculate", "--args", '{"expression": "1/0"}')
    assert failed.returncode == 3
    lines = failed.stdout.splitlines()
    start = lines.index("✗ Error")
    assert lines[start + 2 : start + 6] == [
        "Code: TOOL_EXECUTION_ERROR",
        "Message: Error executing tool calculate: Division by zero.",
        "Server: units",
        "Tool: calculate",
    ]
    # An error of the gateway's reads the same, with its own code, on stderr.
    disabled = sandbox.run("execute", "notes/delete_note", "--args", '{"id": "1"}')
    assert disabled.returncode == 4
    said = disabled.stderr.splitlines()
    assert "Code: TOOL_DISABLED" in said and "Server: notes" in said and "Tool: delete_note" in said
    assert any(line.startswith("Message: ") and "disabled by toolRules" in line for line in said)


def test_execute_exit_codes(sandbox: Sandbox) -> None:
    bad_json = sandbox.run("execute", "units", "convert_units", "--args", '{"value": 2')
    assert bad_json.returncode == 1
    assert "not valid JSON (line 1, column 12" in bad_json.stderr

    invalid = sandbox.run("execute", "units", "convert_units", "--args", '{"value": "far"}')
    assert invalid.returncode == 1
    assert "'from_unit' is a required property" in invalid.stderr

    failed = sandbox.run("execute", "units", "calculate", "--args", '{"expression": "1/0"}')
    assert failed.returncode == 3
    assert "✗ Error" in failed.stdout

    disabled = sandbox.run("execute", "notes", "delete_note", "--args", '{"id": "1"}')
    assert disabled.returncode == 4
    assert "disabled by toolRules" in disabled.stderr

    assert sandbox.run("execute", "units", "nope").returncode == 2
    assert sandbox.run("execute", "nowhere", "nope").returncode == 2
    unavailable = sandbox.run("execute", "broken", "anything")
    assert unavailable.returncode == 3
    assert "command not found" in unavailable.stderr

    ok = sandbox.json("execute", "units", "convert_units", "--args", '{"value": 1, "from_unit": "m", "to_unit": "cm"}')
    assert ok["success"] is True and ok["result"]["structuredContent"]["result"] == 100
    tool_error = sandbox.json("execute", "units", "calculate", "--args", '{"expression": "1/0"}', expect=3)
    assert tool_error["success"] is False and tool_error["error"]["code"] == "TOOL_EXECUTION_ERROR"
    refused = sandbox.json("execute", "notes", "delete_note", "--args", '{"id": "1"}', expect=4)
    assert refused["error"]["code"] == "TOOL_DISABLED"


def test_tokens_compares_with_the_meta_tools(sandbox: Sandbox) -> None:
    data = sandbox.json("tokens")
    assert data["encoding"] == "o200k_base"
    per_server = {row["server"]: row for row in data["servers"]}
    assert per_server["everything"]["tokens"] > 1000
    assert data["direct"]["tokens"] == sum(row["tokens"] for row in data["servers"])
    assert data["toolscout"]["tools"] == 5 and data["toolscout"]["tokens"] < data["direct"]["tokens"]
    # A server that failed to start lists nothing in any mode, and takes no mode down with it.
    modes = {row["mode"]: row for row in data["modes"]}
    assert list(modes) == list(get_args(ModeName))
    assert modes["passthrough"]["tools"] == data["direct"]["tools"]
    human = sandbox.run("tokens")
    assert "toolscout meta-tools" in human.stdout and "saves" in human.stdout
    assert "discovery (configured)" in human.stdout and "passthrough" in human.stdout


async def _received(gateway: Gateway, mode: ModeName) -> list[types.Tool]:
    """Every page of `tools/list` as a real 2025-11-25 client receives it from the gateway's server in `mode`."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    async with Client(build_server(gateway, mode), mode="legacy") as client:
        while True:
            listed = await client.list_tools(cursor=cursor, cache_mode="bypass")
            tools += listed.tools
            if not (cursor := listed.next_cursor):
                return tools


async def _measure_demo() -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """The demo gateway measured in process: per server, per mode through a real client, and its tools
    under passthrough names."""
    async with Gateway.from_config(demo_config()) as gateway:
        with anyio.fail_after(60):
            await gateway.settle()
            received = {mode: await _received(gateway, mode) for mode in get_args(ModeName)}
            # What `tokens` counts without a client is what the client receives, tool for tool.
            for mode, tools in received.items():
                assert tool_definitions_json(await listed_tools(gateway, mode)) == tool_definitions_json(tools), mode
        entries = gateway.catalog.tools()
        names = native_names((e.server, e.name) for e in entries)
        loads = server_loads(gateway)
        renamed = [hinted(e, names[(e.server, e.name)], loads) for e in native_order(entries, loads)]
        servers = [cost.to_dict() for cost in server_costs(gateway)]
    modes = [{"mode": mode, "tools": len(tools), "tokens": tool_tokens(tools)} for mode, tools in received.items()]
    return servers, modes, tool_tokens(renamed)


def test_tokens_reports_every_mode_as_a_client_receives_it(tmp_path: Path) -> None:
    data = make_sandbox(tmp_path).json("tokens", "--demo")
    servers, modes, renamed = anyio.run(_measure_demo)
    assert data["servers"] == servers
    assert data["modes"] == modes  # the CLI reports what a real client receives, mode by mode
    by_mode = {row["mode"]: row for row in data["modes"]}
    assert list(by_mode) == list(get_args(ModeName))  # a new mode is measured without being named here
    assert by_mode["discovery"] == {"mode": "discovery", "tools": 5, "tokens": data["toolscout"]["tokens"]}
    assert by_mode["discovery"]["tokens"] <= 450
    assert by_mode["compact"]["tools"] == 2 and by_mode["compact"]["tokens"] < data["direct"]["tokens"]
    # One tool for everything: fewer tokens than the five meta-tools.
    assert by_mode["smart"]["tools"] == 1 and by_mode["smart"]["tokens"] < by_mode["discovery"]["tokens"]
    # Passthrough is the enabled tools exactly as their servers gave them, renamed `server__tool`, with
    # toolscout's search hints (modes/hints.py): the same tools as direct exposure, more tokens.
    assert by_mode["passthrough"]["tools"] == data["direct"]["tools"]
    assert by_mode["passthrough"]["tokens"] == renamed
    assert by_mode["passthrough"]["tokens"] > data["direct"]["tokens"]


def test_progress_is_shown_on_a_terminal_only(sandbox: Sandbox) -> None:
    # A real pseudo-terminal on stderr: the live per-server lines appear there, stdout stays clean.
    controller, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [PYTHON, "-m", "toolscout", "list", "--refresh"],  # (without it, nothing is connected)
            cwd=sandbox.cwd,
            env={**sandbox.env(), "TERM": "xterm", "PATH": f"{NPM_BIN}{os.pathsep}{os.environ['PATH']}"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=terminal,
            text=True,
            timeout=120,
        )
        os.close(terminal)
        terminal = -1
        seen = b""
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if terminal != -1:
            os.close(terminal)
        os.close(controller)
    assert done.returncode == 3  # (the broken server)
    text = seen.decode(errors="replace")
    assert "connecting" in text
    assert "command not found" in text
    assert "connecting" not in done.stdout
    # Without a terminal nothing but the result is printed.
    assert "connecting" not in sandbox.run("list", "--refresh").stderr


def test_usage_errors_exit_1_not_2(sandbox: Sandbox) -> None:
    done = sandbox.run("tools")
    assert done.returncode == 1
    assert "Missing argument" in done.stderr
    assert sandbox.run("list", "--bogus").returncode == 1


def test_config_errors_exit_2_for_every_command(sandbox: Sandbox, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"mcpServers": {"a": {"comand": "x"}}}')
    for args in (["list"], ["search", "x"], ["tools", "a"], ["inspect", "a", "b"], ["execute", "a", "b"], ["tokens"]):
        done = sandbox.run(*args, "--config", str(broken))
        assert done.returncode == 2, args
        assert "did you mean 'command'?" in done.stderr
        assert "Traceback" not in done.stderr
    as_json = json.loads(sandbox.run("list", "--config", str(broken), "--json").stdout)
    assert as_json["error"]["code"] == "CONFIGURATION_ERROR"


def test_eval_on_the_live_catalog_of_the_configured_servers(sandbox: Sandbox) -> None:
    queries = sandbox.write(
        "work/live-queries.jsonl",
        "\n".join(
            json.dumps(q)
            for q in (
                {"query": "convert kilometers to miles", "relevant": [["units", "convert_units"]]},
                {"query": "write down a new note", "relevant": [["notes", "create_note"]]},
                {"query": "print a tiny image", "relevant": [["everything", "get-tiny-image"]]},
            )
        ),
    )
    data = sandbox.json("eval", "--catalog", "live", "--queries", str(queries))
    assert data["catalog"] == "live" and data["queries"] == 3
    assert data["tools"] > 10  # notes + units + everything, enabled tools only
    assert data["hit_5"] == 1.0, data
    missing = sandbox.write("work/missing.jsonl", json.dumps({"query": "x", "relevant": [["units", "nope"]]}))
    done = sandbox.run("eval", "--catalog", "live", "--queries", str(missing))
    assert done.returncode == 2 and "units/nope" in done.stderr.replace(" / ", "/"), done.stderr
