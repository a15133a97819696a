"""`toolscout execute --stream`: a tool's progress and log notifications printed as they come.

Real processes: the command line as a child, server-everything's long-running operation (progress
at each step) and the chatty test server (a log message during its `log` call) behind it, over
stdio; then the same through a running `toolscout serve` on its local socket.
"""

from __future__ import annotations

import json
import subprocess

import anyio
import pytest
from benchmarks.processes import running

from tests.helpers.cli_sandbox import Sandbox, make_sandbox
from tests.helpers.paths import PYTHON, ROOT, npm_tool

pytestmark = pytest.mark.anyio

LONG = "everything/trigger-long-running-operation"
STEPS = '{"duration": 0.3, "steps": 3}'


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    npm_tool("mcp-server-everything")
    box = make_sandbox(tmp_path_factory.mktemp("stream"))
    servers = {
        "chatty": {"command": PYTHON, "args": ["-m", "tests.servers.chatty"], "cwd": str(ROOT)},
        "everything": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-everything"],
            "cwd": str(ROOT / "tools" / "npm"),
        },
    }
    config = box.write("work/toolscout.json", json.dumps({"mcpServers": servers, "catalogCache": False}))
    config.chmod(0o600)
    return box


def test_progress_is_printed_before_the_result(sandbox: Sandbox) -> None:
    done = sandbox.run("execute", LONG, "--args", STEPS, "--stream")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    progress = [line for line in lines if line.startswith("… progress ")]
    assert progress == ["… progress 1/3", "… progress 2/3", "… progress 3/3"]
    assert lines.index(progress[-1]) < lines.index("✓ Success") < lines.index("Result:")

    # Without --stream the same call prints none.
    quiet = sandbox.run("execute", LONG, "--args", STEPS)
    assert quiet.returncode == 0 and "progress" not in quiet.stdout


def test_log_messages_are_printed_with_their_level(sandbox: Sandbox) -> None:
    done = sandbox.run("execute", "chatty/log", "--stream")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines.index("[warning] chatty: oven preheating") < lines.index("✓ Success")


def test_with_json_the_notifications_are_json_lines_on_stderr(sandbox: Sandbox) -> None:
    done = sandbox.run("execute", LONG, "--args", STEPS, "--stream", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["success"] is True  # stdout stays one JSON document
    notices = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert [(n["tool"], n["progress"], n["total"]) for n in notices] == [(LONG, 1, 3), (LONG, 2, 3), (LONG, 3, 3)]


async def test_through_a_running_serve_progress_and_logs_are_printed_too(sandbox: Sandbox) -> None:
    config = sandbox.cwd / "toolscout.json"
    command = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--transport", "http", "--port", "0"]
    async with running(command, ready=r"serving streamable HTTP at", env=sandbox.env(), stdin=subprocess.DEVNULL):
        done = await anyio.to_thread.run_sync(lambda: sandbox.run("execute", LONG, "--args", STEPS, "--stream"))
        assert done.returncode == 0, done.stderr
        progress = [line for line in done.stdout.splitlines() if line.startswith("… progress ")]
        assert progress == ["… progress 1/3", "… progress 2/3", "… progress 3/3"]
        logged = await anyio.to_thread.run_sync(lambda: sandbox.run("execute", "chatty/log", "--stream"))
        assert logged.returncode == 0, logged.stderr
        assert "[warning] chatty: oven preheating" in logged.stdout.splitlines()
        # The serve ran both: its audit has them from an HTTP client (its local socket), the last two calls.
        audit = await anyio.to_thread.run_sync(lambda: sandbox.run("audit", "tail", "--json"))
    calls = [json.loads(line) for line in audit.stdout.splitlines()]
    assert [(c["tool"], c["client"].endswith("(http)")) for c in calls[-2:]] == [
        ("trigger-long-running-operation", True),
        ("log", True),
    ], audit.stdout
