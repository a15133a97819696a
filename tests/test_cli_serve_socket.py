"""A running `toolscout serve` answers this machine's command line on a local socket
(local_socket.py): the CLI asks it instead of starting upstream servers of its own.

Real processes throughout: `toolscout serve` and the `toolscout` commands as children, a demo
server behind them started through tests/fixtures/counted_server.py (which records each start).
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from benchmarks.processes import running, stop

from tests.helpers.cli_sandbox import Sandbox, make_sandbox
from tests.helpers.paths import PYTHON
from toolscout.cli.answers import META_SEARCH_LIMIT
from toolscout.config import GatewayConfig, load_config
from toolscout.config.models import DEFAULT_MIN_RELEVANCE
from toolscout.modes.discovery import SearchToolsArgs
from toolscout.serve.local_socket import listen, release, runtime_dir, serving, socket_lock, socket_mode, socket_path

pytestmark = pytest.mark.anyio

COUNTED = Path(__file__).parent / "fixtures" / "counted_server.py"
SERVE_READY = r"serving streamable HTTP at (http://\S+/mcp)"
CONVERT = '{"value": 2, "from_unit": "km", "to_unit": "m"}'


def starts(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def write_config(sandbox: Sandbox, log: Path, settings: dict[str, Any] | None = None, **extra: Any) -> Path:
    # Nothing stored (catalogCache off): every command would have to start the server itself.
    units = {"command": PYTHON, "args": [str(COUNTED), str(log), "toolscout.demo.units"], **extra}
    document = {"mcpServers": {"units": units}, "catalogCache": False, **(settings or {})}
    path = sandbox.write("work/toolscout.json", json.dumps(document))
    path.chmod(0o600)
    return path


async def cli(sandbox: Sandbox, *args: str, expect: int = 0) -> Any:
    return await anyio.to_thread.run_sync(lambda: sandbox.json(*args, expect=expect))


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_the_command_line_asks_a_running_serve_of_its_config(tmp_path: Path, transport: str) -> None:
    sandbox = make_sandbox(tmp_path)
    log = tmp_path / "units.log"
    # The agents' execute_tool answers in envelopes over HTTP; the serve hands the command line the native
    # result, and `execute --json` writes that config's envelope itself (`result`: the tool's value).
    settings: dict[str, Any] = {"toolRules": [{"pattern": "list_units", "enabled": False}]}
    if transport == "http":
        settings["executeResult"] = "envelope"
    config = write_config(sandbox, log, settings)
    command = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--transport", transport]
    if transport == "http":
        command += ["--port", "0"]
    ready = SERVE_READY if transport == "http" else r"serving MCP on stdio"
    # A stdio serve runs as long as its client keeps its stdin open: here, as long as the test.
    stdin = subprocess.PIPE if transport == "stdio" else subprocess.DEVNULL
    async with running(command, ready=ready, env=sandbox.env(), stdin=stdin) as serve:
        # The first call waits (within its connect timeout) for the serve's own connection to it.
        done = await cli(sandbox, "execute", "units", "convert_units", "--args", CONVERT)
        value = done["result"] if transport == "http" else done["result"]["structuredContent"]
        assert done["success"] is True and value["result"] == 2000
        assert starts(log) == 1  # the serve's: none of the command's own

        (row,) = (await cli(sandbox, "list"))["servers"]
        assert row["status"] == "connected" and "convert_units" in row["tools"]
        found = (await cli(sandbox, "search", "convert kilometers to miles"))["results"]
        assert found[0]["tool"] == "convert_units" and "stale" not in found[0]
        # The relevance floor reaches the serve: 0 gives back the weak matches it leaves out by default.
        weak = "what time is it"  # (nothing of the units server's is about the time of day)
        floored = await cli(sandbox, "search", weak, expect=2)  # nothing at the default floor
        every = (await cli(sandbox, "search", weak, "--min-relevance", "0"))["results"]
        assert floored["results"] == [] and every
        assert all(r["relevance"] < DEFAULT_MIN_RELEVANCE for r in every)
        assert "calculate" in [t["name"] for t in (await cli(sandbox, "tools", "units"))["tools"]]
        # The serve's search_tools finds a disabled tool when asked, saying it is.
        plain = (await cli(sandbox, "search", "list the units"))["results"]
        assert "list_units" not in [r["tool"] for r in plain]
        (first, *_) = (await cli(sandbox, "search", "list the units", "--all"))["results"]
        assert (first["tool"], first["enabled"]) == ("list_units", False)
        assert (await cli(sandbox, "inspect", "units", "convert_units"))["parameters"][0]["name"] == "value"
        refused = await cli(sandbox, "execute", "units", "nope", expect=2)  # its errors keep their codes
        assert refused["error"]["code"] == "TOOL_NOT_FOUND"
        # ... and say what to do next in a person's words, not in the serve's agent's.
        assert "`toolscout tools units`" in refused["error"]["message"]
        assert "search_tools" not in refused["error"]["message"]
        assert starts(log) == 1

        # Its socket is the config file's: owner-only, as the config is.
        sock = socket_path(config, load_config(config))  # (other tests' serves may have left theirs)
        assert sock is not None and stat.S_IMODE(sock.stat().st_mode) == 0o600

        # The same file with other contents is another config: that serve is never asked. (The change is
        # one the serve takes only on a restart, so that its reload leaves its own connection alone.)
        changed = {**json.loads(config.read_text()), "maxOutputChars": 5000}
        config.write_text(json.dumps(changed), encoding="utf-8")
        assert (await cli(sandbox, "list"))["servers"][0]["status"] == "connected"
        assert starts(log) == 2  # started by the command itself
        write_config(sandbox, log, settings)

        serve.process.kill()  # gone without removing its socket
        await stop(serve.process)
        assert sock.exists()
        (row,) = (await cli(sandbox, "list"))["servers"]  # answered without it, at once
        assert row["status"] == "connected" and starts(log) == 3
        assert not sock.exists()  # the stale socket was removed, and its lock file
        assert not sock.with_suffix(".lock").exists()


def test_the_longest_search_asked_of_a_serve_is_the_meta_tools_own() -> None:
    # (A longer one is answered by the command itself: search_tools would refuse it.)
    assert SearchToolsArgs.model_json_schema()["properties"]["limit"]["maximum"] == META_SEARCH_LIMIT


def test_a_socket_has_the_config_files_permissions_and_one_serve_per_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_file = tmp_path / "toolscout.json"
    config_file.write_text(json.dumps({"mcpServers": {}}))
    config = load_config(config_file)
    path = socket_path(config_file, config)
    assert path is not None and path.parent == runtime_dir()
    assert path != socket_path(config_file, GatewayConfig.model_validate({"mcpServers": {}, "mode": "compact"}))
    # A serve started by a desktop client may see another environment: defaults drawn from it (the
    # audit log's path under $XDG_STATE_HOME) do not make it another config.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "elsewhere"))
    assert socket_path(config_file, load_config(config_file)) == path

    for config_mode, expected in ((0o600, 0o600), (0o640, 0o640), (0o644, 0o644), (0o400, 0o600)):
        config_file.chmod(config_mode)
        assert socket_mode(config_file) == expected
    config_file.chmod(0o640)
    first = listen(path, config_file)
    assert first is not None
    try:
        assert stat.S_IMODE(path.stat().st_mode) == 0o640
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700  # only its owner enters the directory
        assert serving(path)
        assert listen(path, config_file) is None  # a second serve of the same config leaves it to the first
    finally:
        release(path, first)
    assert not path.exists() and not path.with_suffix(".lock").exists()  # nothing left behind
    assert serving(path) is False


def test_a_lock_file_removed_while_another_waits_for_it_is_not_trusted(tmp_path: Path) -> None:
    # A serve leaving removes the lock file it holds; one that opened the file meanwhile and waited
    # must lock the file at the path afterwards, not the removed one, or two would hold "the" lock.
    path = tmp_path / "s.sock"
    lock = path.with_suffix(".lock")
    locked_inode: list[int] = []

    def other() -> None:
        with socket_lock(path, wait=True) as got:
            assert got
            locked_inode.append(os.stat(lock).st_ino)  # (raises if what it holds is gone)

    def opened_by_both() -> bool:
        fds = Path("/proc/self/fd")
        return sum(1 for fd in fds.iterdir() if os.path.realpath(fd) == str(lock.resolve())) == 2

    with socket_lock(path, wait=True):
        thread = threading.Thread(target=other)
        thread.start()
        deadline = time.monotonic() + 10  # (a bound on the wait, never a figure asserted)
        while not opened_by_both() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert opened_by_both(), "the second locker never opened the lock file"  # it waits on its lock now
        lock.unlink()
    thread.join(10)
    assert not thread.is_alive() and locked_inode
    assert lock.exists() and lock.stat().st_ino == locked_inode[0]  # it locked a file at the path, made anew


def test_a_stale_socket_is_found_and_removed(tmp_path: Path) -> None:
    config_file = tmp_path / "toolscout.json"
    config_file.write_text(json.dumps({"mcpServers": {}}))
    path = socket_path(config_file, load_config(config_file))
    assert path is not None
    abandoned = listen(path, config_file)
    assert abandoned is not None
    abandoned.close()  # as a killed serve leaves it: the file, nothing accepting on it
    replacement = listen(path, config_file)  # a new serve takes its place
    assert replacement is not None and serving(path)
    replacement.close()

    assert path.exists() and not serving(path)  # the command line's look
    assert not path.exists() and not path.with_suffix(".lock").exists()


def test_a_socket_in_a_directory_others_may_enter_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = runtime_dir().parent / "shared"  # (pytest's tmp_path would make too long a socket path)
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(shared))
    (shared / "toolscout").mkdir(mode=0o777)
    (shared / "toolscout").chmod(0o777)
    config_file = tmp_path / "toolscout.json"
    config_file.write_text(json.dumps({"mcpServers": {}}))
    path = socket_path(config_file, load_config(config_file))
    assert path is not None
    assert listen(path, config_file) is None
    planted = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # someone else's, say
    try:
        planted.bind(str(path))
        planted.listen(1)
        assert not serving(path)
    finally:
        planted.close()
        os.unlink(path)
