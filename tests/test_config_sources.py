"""The design's configuration shape and sources: `discovery:`, client files read beside `mcpServers`
and again when edited, the built-in empty configuration (and `--require-config`), and
`configReload: restart`; `toolscout serve` as a real child process with the demo servers upstream."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from benchmarks.processes import SERVE_READY, running
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.helpers.cli_sandbox import make_sandbox
from tests.helpers.config_files import (
    BOUND,
    POLL,
    logged,
    serve_command,
    serve_env,
    servers_of,
    units,
    write_config,
)
from tests.helpers.paths import PYTHON
from toolscout.config.loader import parse_config
from toolscout.config.models import StdioServerConfig
from toolscout.config.sources import load_with_sources, with_sources
from toolscout.errors import ConfigurationError

NOTES = {"command": PYTHON, "args": ["-m", "toolscout.demo.notes"]}


def test_the_discovery_section_reads_as_top_level_keys() -> None:
    config = parse_config(
        json.dumps(
            {
                "discovery": {
                    "enabled": True,
                    "cache": {"enabled": True, "ttl": 60},
                    "sources": [{"type": "claude-desktop", "path": "claude.json"}],
                    "toolRules": [{"pattern": ["*delete*"], "enabled": False}],
                }
            }
        ),
        "json",
        "toolscout.json",
    )
    assert (config.cache.enabled, config.cache.ttl) == (True, 60)
    assert [(s.type, s.path) for s in config.sources] == [("claude-desktop", "claude.json")]
    assert [r.pattern for r in config.tool_rules] == [["*delete*"]]


def test_a_disabled_discovery_section_is_left_out() -> None:
    text = json.dumps({"discovery": {"enabled": False, "toolRules": [{"pattern": "*", "enabled": False}]}})
    config = parse_config(text, "json", "toolscout.json")
    assert config.tool_rules == [] and not config.discovery.enabled


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            {"toolRules": [], "discovery": {"toolRules": []}},
            "toolRules is written both at the top level and under discovery: keep one of the two",
        ),
        ({"discovery": {"enabeld": True}}, "discovery.enabeld: unknown key (did you mean 'enabled'?)"),
        ({"sources": [{"type": "claude", "path": "x"}]}, "sources[0].type: Input should be 'claude-desktop'"),
        ({"cache": {"ttl": 0}}, "cache.ttl: Input should be greater than 0"),
    ],
)
def test_mistakes_in_the_shape_are_named(document: dict[str, object], expected: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        parse_config(json.dumps(document), "json", "toolscout.json")
    assert expected in refused.value.message


def test_client_files_and_a_custom_yaml_become_servers(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "claude.json").write_text(
        json.dumps({"mcpServers": {"units": {**units(), "alwaysAllow": ["x"]}, "mine": {"command": "other"}}}),
        encoding="utf-8",
    )
    (tmp_path / "servers.yaml").write_text(
        "servers:\n"
        "  notes:\n"
        "    name: Notes MCP Server\n"
        "    connection: {type: stdio, command: notes-server, args: [--quiet]}\n"
        "    tools: [{name: create_note, description: Create a note}]\n",
        encoding="utf-8",
    )
    path = tmp_path / "toolscout.json"
    sources = [
        {"type": "claude-desktop", "path": "claude.json"},
        {"type": "windsurf", "path": str(tmp_path / "nowhere.json")},
        {"type": "custom", "path": "servers.yaml"},
    ]
    write_config(path, {"mcpServers": {"mine": {"command": "mine"}}, "sources": sources})
    with caplog.at_level(logging.INFO, logger="toolscout.config.sources"):
        config, states = with_sources(load_with_sources(path, env={}), path, env={})
    assert list(config.mcp_servers) == ["mine", "units", "notes"]
    mine, notes = config.mcp_servers["mine"], config.mcp_servers["notes"]
    assert isinstance(mine, StdioServerConfig) and mine.command == "mine"  # the config's own wins
    assert isinstance(notes, StdioServerConfig) and (notes.command, notes.args) == ("notes-server", ["--quiet"])
    assert notes.description == "Notes MCP Server" and [t.name for t in notes.tools] == ["create_note"]
    assert [(s.type, s.found) for s in states] == [("claude-desktop", True), ("windsurf", False), ("custom", True)]
    assert "alwaysAllow" in caplog.text and "nowhere.json not found" in caplog.text


def test_a_broken_source_names_the_file_and_the_entry(tmp_path: Path) -> None:
    (tmp_path / "claude.json").write_text(json.dumps({"mcpServers": {"bad": {"command": 3}}}), encoding="utf-8")
    path = tmp_path / "toolscout.json"
    write_config(path, {"sources": [{"type": "claude-desktop", "path": "claude.json"}]})
    with pytest.raises(ConfigurationError) as refused:
        load_with_sources(path, env={})
    assert "claude.json (source claude-desktop)" in refused.value.message
    assert "mcpServers.bad.command" in refused.value.message


@pytest.mark.anyio
async def test_a_source_edited_while_serving_is_picked_up_and_a_broken_one_kept(tmp_path: Path) -> None:
    claude = tmp_path / "claude_desktop_config.json"
    write_config(claude, {"mcpServers": {"units": units()}})
    path = tmp_path / "toolscout.yaml"
    path.write_text(f"discovery:\n  sources:\n    - type: claude-desktop\n      path: {claude}\n", encoding="utf-8")
    command = serve_command(path, "--transport", "http", "--port", "0")
    async with running(command, ready=SERVE_READY, env=serve_env(tmp_path)) as gateway:
        async with Client(gateway.match.group(1)) as client:
            assert list(servers_of(await client.call_tool("list_mcp_servers", {}))) == ["units"]
            write_config(claude, {"mcpServers": {"units": units(), "notes": NOTES}}, rename=True)
            seen = await logged(gateway.stderr, r"configuration reloaded \(the file changed\): added notes")
            assert list(servers_of(await client.call_tool("list_mcp_servers", {}))) == ["units", "notes"]
            claude.write_text('{"mcpServers": {', encoding="utf-8")  # the client saving a broken file
            await logged(gateway.stderr, r"configuration not reloaded .*claude_desktop_config\.json", after=seen)
            assert list(servers_of(await client.call_tool("list_mcp_servers", {}))) == ["units", "notes"]
        assert not any("Traceback" in line for line in gateway.stderr), "\n".join(gateway.stderr)


@pytest.mark.anyio
async def test_serve_without_a_config_serves_none_and_takes_one_written_later(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**serve_env(tmp_path), "HOME": str(home), "XDG_CONFIG_HOME": str(home / "xdg")}
    env.pop("TOOLSCOUT_CONFIG", None)
    params = StdioServerParameters(command=PYTHON, args=["-m", "toolscout", "serve"], env=env, cwd=str(tmp_path))
    log = tmp_path / "gateway.log"
    expected = home / "xdg" / "toolscout" / "config.json"
    with log.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            assert servers_of(await client.call_tool("list_mcp_servers", {})) == {}
            assert f"no configuration file found; serving none until one is written to {expected}" in log.read_text()
            expected.parent.mkdir(parents=True)
            write_config(expected, {"mcpServers": {"units": units()}}, rename=True)
            await logged(log, r"configuration reloaded \(the file changed\): added units")
            with anyio.fail_after(BOUND):
                while True:
                    servers = servers_of(await client.call_tool("list_mcp_servers", {}))
                    if servers.get("units", {}).get("status") == "connected":
                        break
                    await anyio.sleep(POLL)  # the gateway's status, asked again: no event to wait on
    assert "Traceback" not in log.read_text()


def test_require_config_exits_2_with_the_places_looked_in(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolscout", "serve", "--require-config"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")},
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "No configuration file found" in done.stderr and "Traceback" not in done.stderr
    assert str(tmp_path / "xdg" / "toolscout" / "config.json") in done.stderr


@pytest.mark.anyio
async def test_restart_mode_neither_watches_nor_reads_on_sighup(tmp_path: Path) -> None:
    path = tmp_path / "toolscout.json"
    write_config(path, {"mcpServers": {"units": units()}, "configReload": "restart"})
    command = serve_command(path, "--transport", "http", "--port", "0")
    async with running(command, ready=SERVE_READY, env=serve_env(tmp_path)) as gateway:
        assert any("configReload is restart" in line for line in gateway.stderr)
        async with Client(gateway.match.group(1)) as client:
            write_config(path, {"mcpServers": {"units": units(), "notes": NOTES}, "configReload": "restart"})
            gateway.process.send_signal(signal.SIGHUP)
            await logged(gateway.stderr, r"received SIGHUP; configReload is restart")
            assert list(servers_of(await client.call_tool("list_mcp_servers", {}))) == ["units"]
            assert gateway.process.returncode is None
        assert not any("configuration reloaded" in line for line in gateway.stderr)


def test_config_sources_lists_each_source_with_its_servers(tmp_path: Path) -> None:
    sandbox = make_sandbox(tmp_path)
    sandbox.write("work/claude.json", json.dumps({"mcpServers": {"units": units()}}))
    sandbox.write("work/broken.json", '{"mcpServers": {')
    sources = [
        {"type": "claude-desktop", "path": "claude.json"},
        {"type": "windsurf", "path": "nowhere.json"},
        {"type": "cursor", "path": "broken.json"},
    ]
    sandbox.write("work/toolscout.json", json.dumps({"discovery": {"sources": sources}}))
    listed = sandbox.json("config", "sources")["sources"]
    assert [(s["type"], s["found"], s.get("servers")) for s in listed] == [
        ("claude-desktop", True, ["units"]),
        ("windsurf", False, None),
        ("cursor", True, None),
    ]
    assert "invalid JSON" in listed[2]["error"]
    shown = sandbox.run("config", "sources", env={"COLUMNS": "1000"})  # one line per entry, unwrapped
    assert shown.returncode == 0, shown.stderr
    assert f"claude-desktop ({sandbox.cwd / 'claude.json'}): units" in shown.stdout
    assert "nowhere.json) — not found" in shown.stdout
