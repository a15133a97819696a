"""`toolscout serve` as a real child process (stdio and HTTP) following edits of its config file, and
SIGHUP, with SDK clients; the demo servers as real stdio upstreams."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
from benchmarks.processes import SERVE_READY, alive, exited, running
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.helpers.list_changes import ListWatcher, watched_client
from tests.helpers.paths import PYTHON
from toolscout.config import StdioServerConfig
from toolscout.config.loader import load_config
from toolscout.gateway.core import Gateway
from toolscout.serve.reload import ConfigReloader
from toolscout.upstream import UpstreamSpec

pytestmark = pytest.mark.anyio

BOUND = 60
"""Every wait here is bounded by this (a loaded machine starts a demo server in seconds, not a minute)."""
POLL = 0.05
PID_WRITER = (
    "import os, sys; open(sys.argv[1], 'w').write(str(os.getpid())); "
    "sys.argv = ['notes']; from toolscout.demo.notes import main; main()"
)


def units() -> dict[str, Any]:
    return {"command": PYTHON, "args": ["-m", "toolscout.demo.units"], "description": "Units!"}


def notes(pid_file: Path) -> dict[str, Any]:
    return {"command": PYTHON, "args": ["-c", PID_WRITER, str(pid_file)]}


def replace_file(path: Path, text: str) -> None:
    """Save as most editors do: write a new file beside it, then rename it over the old one."""
    fresh = path.with_name(path.name + ".tmp")
    fresh.write_text(text, encoding="utf-8")
    os.replace(fresh, path)


def write_config(path: Path, config: dict[str, Any], *, rename: bool = False) -> None:
    if rename:
        replace_file(path, json.dumps(config))
    else:
        path.write_text(json.dumps(config), encoding="utf-8")


async def logged(lines: Sequence[str] | Path, pattern: str, *, after: int = 0) -> int:
    """Wait (bounded) until a line from `after` on matches `pattern`; the index just past it."""
    found = re.compile(pattern)
    with anyio.fail_after(BOUND):
        while True:
            current = await lines_of(lines)
            for index in range(after, len(current)):
                if found.search(current[index]):
                    return index + 1
            await anyio.sleep(POLL)  # the child's log, read as it comes: there is no event to wait on


async def lines_of(lines: Sequence[str] | Path) -> list[str]:
    """The lines a child logged so far (to a file, or read from its stderr as they come)."""
    if isinstance(lines, Path):
        return (await anyio.Path(lines).read_text()).splitlines()
    return list(lines)


def servers_of(result: types.CallToolResult) -> dict[str, dict[str, Any]]:
    assert not result.is_error, result.content
    content = cast(dict[str, Any], result.structured_content)
    return {s["name"]: s for s in content["servers"]}


async def tool_names(client: Client) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


def serve_command(config: Path, *options: str) -> list[str]:
    return [PYTHON, "-m", "toolscout", "serve", "--config", str(config), *options]


def serve_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "TOOLSCOUT_CACHE_DIR": str(tmp_path / "cache"), **extra}


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_http_passthrough_follows_added_and_removed_servers(tmp_path: Path, era: str) -> None:
    path, pid_file = tmp_path / "toolscout.json", tmp_path / "notes.pid"
    write_config(path, {"mcpServers": {"units": units()}})
    command = serve_command(path, "--transport", "http", "--port", "0", "--mode", "passthrough")
    async with running(command, ready=SERVE_READY, env=serve_env(tmp_path)) as gateway:
        watcher = ListWatcher()
        async with watched_client(gateway.match.group(1), era, watcher) as client:
            assert "convert_units" in await tool_names(client)
            assert "create_note" not in await tool_names(client)

            write_config(path, {"mcpServers": {"units": units(), "notes": notes(pid_file)}}, rename=True)
            # `toolNames: auto` in front of two servers: every tool `server__tool` (clients are told).
            with anyio.fail_after(BOUND):
                while "notes__create_note" not in await tool_names(client):
                    await watcher.wait_for(watcher.count + 1)
            seen = await logged(gateway.stderr, r"configuration reloaded \(the file changed\): added notes")
            pid = int(pid_file.read_text())
            assert alive(pid)
            assert "units__convert_units" in await tool_names(client)

            write_config(path, {"mcpServers": {"units": units()}})
            with anyio.fail_after(BOUND):  # one server again: its tools' own names
                while "convert_units" not in (names := await tool_names(client)):
                    await watcher.wait_for(watcher.count + 1)
            assert not any("create_note" in name for name in names)
            await logged(gateway.stderr, r"configuration reloaded \(the file changed\): removed notes", after=seen)
            await exited(pid)
            result = await client.call_tool("convert_units", {"value": 1, "from_unit": "km", "to_unit": "m"})
            assert not result.is_error
        # The server left as it was kept its one connection throughout.
        assert len([line for line in gateway.stderr if "units: connected (" in line]) == 1
        assert not any("Traceback" in line for line in gateway.stderr), "\n".join(gateway.stderr)


async def test_stdio_discovery_lists_an_added_server(tmp_path: Path) -> None:
    path, pid_file = tmp_path / "toolscout.json", tmp_path / "notes.pid"
    write_config(path, {"mcpServers": {"units": units()}})
    params = StdioServerParameters(command=PYTHON, args=serve_command(path)[1:], env=serve_env(tmp_path))
    log = tmp_path / "gateway.log"
    with log.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="auto") as client:
            assert set(servers_of(await client.call_tool("list_mcp_servers", {}))) == {"units"}
            write_config(path, {"mcpServers": {"notes": notes(pid_file), "units": units()}}, rename=True)
            await logged(log, r"configuration reloaded \(the file changed\): added notes")
            with anyio.fail_after(BOUND):
                while True:
                    servers = servers_of(await client.call_tool("list_mcp_servers", {}))
                    if servers.get("notes", {}).get("status") == "connected":
                        break
                    await anyio.sleep(POLL)  # the gateway's status, asked again: no event to wait on
            assert list(servers) == ["notes", "units"]  # the file's order
            hits = await client.call_tool("search_tools", {"query": "create a note", "limit": 3})
            assert cast(dict[str, Any], hits.structured_content)["results"][0]["server"] == "notes"
            pid = int(pid_file.read_text())
    await exited(pid)  # closing stdin ended the gateway, and the server it added with it
    assert "Traceback" not in log.read_text()


async def test_sighup_reads_the_config_again_and_does_not_stop(tmp_path: Path) -> None:
    path = tmp_path / "toolscout.json"
    (tmp_path / ".env").write_text("UNITS_DESCRIPTION=Units, first\n", encoding="utf-8")
    write_config(path, {"mcpServers": {"units": {**units(), "description": "${UNITS_DESCRIPTION}"}}})
    command = serve_command(path, "--transport", "http", "--port", "0")
    async with running(command, ready=SERVE_READY, env=serve_env(tmp_path)) as gateway:
        async with Client(gateway.match.group(1)) as client:
            servers = servers_of(await client.call_tool("list_mcp_servers", {}))
            assert servers["units"]["description"] == "Units, first"
            # The .env beside the file is not watched: SIGHUP is how its change is taken on.
            (tmp_path / ".env").write_text("UNITS_DESCRIPTION=Units, second\n", encoding="utf-8")
            gateway.process.send_signal(signal.SIGHUP)
            await logged(gateway.stderr, r"configuration reloaded \(on SIGHUP\): restarted units")
            servers = servers_of(await client.call_tool("list_mcp_servers", {}))
            assert servers["units"]["description"] == "Units, second"
            gateway.process.send_signal(signal.SIGHUP)
            await logged(gateway.stderr, r"configuration reloaded \(on SIGHUP\): no server changed")
            assert gateway.process.returncode is None
            result = await client.call_tool(
                "execute_tool",
                {
                    "server": "units",
                    "tool": "convert_units",
                    "arguments": {"value": 1, "from_unit": "km", "to_unit": "m"},
                },
            )
            assert not result.is_error
        assert not any("shutting down" in line for line in gateway.stderr)


async def test_a_broken_edit_is_reported_and_the_running_servers_kept(tmp_path: Path) -> None:
    path = tmp_path / "toolscout.json"
    write_config(path, {"mcpServers": {"units": units()}})
    command = serve_command(path, "--transport", "http", "--port", "0")
    env = serve_env(tmp_path)
    env.pop("TOOLSCOUT_TEST_UNSET", None)
    async with running(command, ready=SERVE_READY, env=env) as gateway:
        async with Client(gateway.match.group(1)) as client:
            path.write_text('{"mcpServers": {"units": ', encoding="utf-8")  # bad JSON
            seen = await logged(gateway.stderr, r"configuration not reloaded \(the file changed\): .*toolscout\.json")
            path.write_text(json.dumps({"mcpServers": {"units": {"command": 3}}}), encoding="utf-8")
            seen = await logged(gateway.stderr, r"configuration not reloaded .*mcpServers\.units", after=seen)
            broken = {"mcpServers": {"units": units(), "other": {"url": "${TOOLSCOUT_TEST_UNSET}"}}}
            write_config(path, broken)
            seen = await logged(gateway.stderr, r"configuration not reloaded .*TOOLSCOUT_TEST_UNSET", after=seen)
            servers = servers_of(await client.call_tool("list_mcp_servers", {}))
            assert list(servers) == ["units"] and servers["units"]["status"] == "connected"

            # Fixed, with a setting that takes a restart: the servers follow, the rest is named.
            write_config(path, {"mcpServers": {"units": units()}, "mode": "compact", "maxOutputChars": 500})
            seen = await logged(gateway.stderr, r"configuration reloaded \(the file changed\): no server changed")
            await logged(gateway.stderr, r"restart toolscout serve to apply mode, maxOutputChars", after=seen)
            servers = servers_of(await client.call_tool("list_mcp_servers", {}))
            assert servers["units"]["status"] == "connected"
        assert not any("Traceback" in line for line in gateway.stderr), "\n".join(gateway.stderr)


async def test_tool_rules_apply_live(tmp_path: Path) -> None:
    path = tmp_path / "toolscout.json"
    write_config(path, {"mcpServers": {"units": units()}})
    command = serve_command(path, "--transport", "http", "--port", "0")
    async with (
        running(command, ready=SERVE_READY, env=serve_env(tmp_path)) as gateway,
        Client(gateway.match.group(1)) as client,
    ):
        servers = servers_of(await client.call_tool("list_mcp_servers", {}))
        assert servers["units"]["enabledCount"] == servers["units"]["toolCount"]
        rules = [{"pattern": "calculate", "enabled": False}]
        write_config(path, {"mcpServers": {"units": units()}, "toolRules": rules})
        await logged(gateway.stderr, r"configuration reloaded \(the file changed\): no server changed; toolRules")
        servers = servers_of(await client.call_tool("list_mcp_servers", {}))
        assert servers["units"]["enabledCount"] == servers["units"]["toolCount"] - 1
        refused = await client.call_tool(
            "execute_tool", {"server": "units", "tool": "calculate", "arguments": {"expression": "1+1"}}
        )
        assert refused.is_error
        assert cast(dict[str, Any], refused.structured_content)["error"]["code"] == "TOOL_DISABLED"


async def test_a_file_caught_half_written_is_looked_at_again_before_it_is_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "toolscout.json"
    write_config(path, {"mcpServers": {}})
    async with Gateway.from_config(load_config(path)) as gateway:
        reloader = ConfigReloader(gateway, path, load_config(path))
        whole = json.dumps({"mcpServers": {"units": units()}})
        path.write_text(whole[: len(whole) // 2], encoding="utf-8")
        assert not await reloader.check()  # half-way through a save: nothing said yet
        path.write_text(whole, encoding="utf-8")
        assert await reloader.check()  # the next poll: the whole file
        assert [u.name for u in gateway.upstreams] == ["units"]
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]

        path.write_text(whole[:-3], encoding="utf-8")
        assert not await reloader.check()
        assert not await reloader.check()  # the same broken content twice: reported, once
        assert not await reloader.check()
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1 and "invalid JSON" in errors[0] and "Still serving" in errors[0]
        assert [u.name for u in gateway.upstreams] == ["units"]
        path.unlink()  # (an editor between deleting and writing): as broken as the rest, reported once
        assert not await reloader.check()
        assert len([r for r in caplog.records if r.levelno >= logging.ERROR]) == 1
        assert not await reloader.check() and not await reloader.check()
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 2 and "Cannot read configuration file" in errors[1]
        assert [u.name for u in gateway.upstreams] == ["units"]
        write_config(path, {"mcpServers": {}})
        assert await reloader.check()
        assert gateway.upstreams == []


async def test_a_name_a_registered_server_has_is_refused_and_the_running_set_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "toolscout.json"
    write_config(path, {"mcpServers": {}})
    async with Gateway.from_config(load_config(path)) as gateway:
        reloader = ConfigReloader(gateway, path, load_config(path))
        registered = UpstreamSpec.from_config("units", StdioServerConfig.model_validate(units()))
        await gateway.set_servers([registered], owner="registry")
        write_config(path, {"mcpServers": {"units": units(), "other": {**units(), "description": "Other"}}})
        assert not await reloader.check(asked=True)
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1
        assert "'units' is already there (registered at run time)" in errors[0]
        assert "Still serving the servers it had" in errors[0]
        assert [u.name for u in gateway.upstreams] == ["units"] and gateway.upstream("units").spec is registered
