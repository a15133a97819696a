"""`toolscout config show` with the discovery spec's lines and totals, and `toolscout config reload`
asking a running `toolscout serve` over its local socket.

Real processes: the command line and `toolscout serve` as children, the units and notes demo servers
behind them over stdio.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import anyio
import httpx2
import pytest
from benchmarks.processes import running

from tests.helpers.cli_sandbox import Sandbox, make_sandbox
from tests.helpers.paths import PYTHON

pytestmark = pytest.mark.anyio

SERVERS = {
    "units": {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]},
    "notes": {"command": PYTHON, "args": ["-m", "toolscout.demo.notes"]},
    "broken": {"command": "definitely-not-installed-xyz"},
}
RULES = [{"pattern": ["delete_*"], "enabled": False, "tags": ["dangerous"]}]


def write(sandbox: Sandbox, **extra: Any) -> None:
    config = {"mcpServers": SERVERS, "toolRules": RULES, "catalogCache": False, **extra}
    sandbox.write("work/toolscout.json", json.dumps(config, indent=2)).chmod(0o600)


def test_show_prints_status_cache_sources_rules_and_totals(tmp_path: Any) -> None:
    sandbox = make_sandbox(tmp_path)
    write(sandbox)
    sandbox.write("home/.codeium/windsurf/mcp_config.json", '{"mcpServers": {}}')

    done = sandbox.run("config", "show")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "Status: Enabled" in lines
    assert (
        "Cache: Disabled (catalogCache: false; every start waits for the servers; tool lists relisted after 3600s)"
        in lines
    )
    sources = lines[lines.index(next(line for line in lines if line.startswith("Sources ("))) :]
    assert f"  ✓ toolscout ({sandbox.cwd / 'toolscout.json'}) - in use" in sources
    assert "  ✓ windsurf (~/.codeium/windsurf/mcp_config.json)" in sources
    assert "  ✗ windsurf (~/.windsurf/mcp.json) - not found" in sources
    assert "  ✗ claude-desktop (~/.config/Claude/claude_desktop_config.json) - not found" in sources
    assert "Tool Rules (1):" in lines and "  1. delete_* → disabled, tags: [dangerous]" in lines
    # Without --status it reads the file only: no server is started for the totals.
    assert "Servers: 3 configured (--status adds how many are connected, and their tools)" in lines

    counted = sandbox.run("config", "show", "--status")
    assert counted.returncode == 0, counted.stderr
    # The totals are what `list` finds: broken does not start, notes' delete_note is disabled by the rule.
    rows = sandbox.json("list", expect=3)["servers"]
    tools, enabled = sum(r["toolCount"] for r in rows), sum(r["enabledCount"] for r in rows)
    assert enabled == tools - 1 and tools > 0
    assert "Servers: 3 configured, 2 connected" in counted.stdout.splitlines()
    assert f"Tools: {tools} total, {enabled} enabled" in counted.stdout.splitlines()
    data = sandbox.json("config", "show", "--status")
    assert data["totals"] == {"configured": 3, "connected": 2, "tools": tools, "enabled": enabled, "stored": []}
    windsurf = [s for s in data["sources"] if s["name"] == "windsurf"]
    assert [s["exists"] for s in windsurf] == [True, False]

    # The files the config's `sources` name are in use too (their servers are served), found or not.
    sandbox.write("home/.cursor/mcp.json", '{"mcpServers": {}}')
    write(sandbox, sources=[{"type": "cursor", "path": "~/.cursor/mcp.json"}, {"type": "custom", "path": "gone.yaml"}])
    with_sources = sandbox.run("config", "show").stdout.splitlines()
    assert "  ✓ cursor (~/.cursor/mcp.json) - in use" in with_sources
    assert f"  ✗ custom ({sandbox.cwd / 'gone.yaml'}) - in use, not found" in with_sources

    write(sandbox, mode="passthrough", catalogCache=True, cache={"enabled": False})
    passthrough = sandbox.run("config", "show").stdout.splitlines()
    assert "Status: Disabled (passthrough lists every tool natively)" in passthrough
    assert any(
        line.startswith("Cache: Enabled (the catalog, kept until a server's entry changes; tool lists asked for every")
        for line in passthrough
    )


def test_reload_without_a_serve_says_none_runs(tmp_path: Any) -> None:
    sandbox = make_sandbox(tmp_path)
    write(sandbox)
    done = sandbox.run("config", "reload")
    assert done.returncode == 3
    assert f"No toolscout serve of {sandbox.cwd / 'toolscout.json'} runs on this machine" in done.stderr
    assert "Traceback" not in done.stderr
    write(sandbox, cli={"exitCodes": "spec"})  # the spec's codes for `config`: 0, 1, 2
    assert sandbox.run("config", "reload").returncode == 2


async def test_reload_asks_the_running_serve_and_says_what_it_did(tmp_path: Any) -> None:
    sandbox = make_sandbox(tmp_path)
    write(sandbox)
    config = sandbox.cwd / "toolscout.json"
    command = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--transport", "http", "--port", "0"]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return sandbox.run(*args, "--config", str(config))

    ready = r"serving streamable HTTP at (http://\S+)/mcp"
    async with (
        running(command, ready=ready, env=sandbox.env(), stdin=subprocess.DEVNULL) as serve,
        httpx2.AsyncClient(base_url=serve.match[1]) as http,
    ):
        # Only the command line's socket takes it: the HTTP face has no such route.
        assert (await http.post("/api/v1/config/reload", json={"path": str(config)})).status_code == 404

        same = await anyio.to_thread.run_sync(cli, "config", "reload")
        assert same.returncode == 0, same.stderr
        assert f"✓ Reloaded {config} (asked by `toolscout config reload`): no server changed." in same.stdout

        # A server removed and the rule dropped: the reload (or the serve's own watch, a moment
        # earlier) applies both, and the command says so.
        write(sandbox, mcpServers={"units": SERVERS["units"]}, toolRules=[], mode="compact")
        done = await anyio.to_thread.run_sync(lambda: sandbox.json("config", "reload", "--config", str(config)))
        (answer,) = done["serves"]
        assert answer["applied"] is True and answer["error"] is None
        assert "notes" in answer["changes"] and "toolRules applied" in answer["changes"], answer
        assert answer["restartNeeded"] == ["mode"]
        served = (await http.get("/api/v1/servers")).json()["servers"]
        assert [s["name"] for s in served] == ["units"]  # the serve's own set, changed

        config.write_text('{"mcpServers": {"units": {"command": 7}}}')
        broken = await anyio.to_thread.run_sync(cli, "config", "reload")
        assert broken.returncode == 2
        assert "✗ Not reloaded: " in broken.stderr and "The serve keeps the servers it had" in broken.stderr
        assert "mcpServers.units.command" in broken.stderr and "Traceback" not in broken.stderr
