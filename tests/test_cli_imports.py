"""A command imports only what it needs: what is answered from the stored catalog or from the
configuration file never imports the MCP SDK's client and server (`mcp`, and with it uvicorn,
starlette and OpenTelemetry), which would be most of its start.

Each command runs as a real child with Python's own import report (`PYTHONPROFILEIMPORTTIME`, the
`-X importtime` of the environment), which names every module the process imported, and each test
also checks the command answered, so a command that failed early cannot pass.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import get_args

from tests.helpers.cli_sandbox import Sandbox, make_sandbox
from tests.helpers.paths import PYTHON
from toolscout.config.models import ModeName

# Packages only a command that talks MCP (serve, execute, a --refresh) needs.
SERVING_PACKAGES = ("mcp", "uvicorn", "starlette", "opentelemetry", "httpx2")


def imported(done: subprocess.CompletedProcess[str]) -> set[str]:
    """The top-level packages a child run with PYTHONPROFILEIMPORTTIME imported."""
    names: set[str] = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "package":  # the report's header line
                names.add(name.split(".")[0])
    assert "toolscout" in names, done.stderr[-2000:]  # the report is there at all
    return names


def run_reported(sandbox: Sandbox, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    done = sandbox.run(*args, env={"PYTHONPROFILEIMPORTTIME": "1"})
    return done, imported(done)


def test_catalog_commands_answered_from_the_stored_catalog_import_no_mcp(tmp_path: Path) -> None:
    sandbox = make_sandbox(tmp_path)
    units = {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]}
    sandbox.write("work/toolscout.json", json.dumps({"mcpServers": {"units": units}}))
    first, packages = run_reported(sandbox, "list")  # nothing stored yet: it connects, and stores
    assert first.returncode == 0, first.stderr[-2000:]
    assert "mcp" in packages  # (so the report does see the SDK when a command connects)

    for args in (
        ("search", "convert kilometers to miles", "--json"),
        ("tools", "units", "--json"),
        ("inspect", "units", "convert_units", "--json"),
        ("list", "--json"),
    ):
        done, packages = run_reported(sandbox, *args)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "stored catalog" in done.stdout or '"stale": true' in done.stdout, done.stdout
        assert not packages & set(SERVING_PACKAGES), (args, sorted(packages & set(SERVING_PACKAGES)))

    # `tokens` measures every mode's `tools/list` and `smart --suggestions` ranks tools: both from
    # the stored lists, through the gateway's modes, and neither starts a server nor loads the SDK.
    tokens, packages = run_reported(sandbox, "tokens", "--json")
    assert tokens.returncode == 0, tokens.stderr[-2000:]
    counted = json.loads(tokens.stdout)
    assert counted["servers"][0]["cachedAt"] and len(counted["modes"]) == len(get_args(ModeName)), counted
    assert not packages & set(SERVING_PACKAGES), sorted(packages & set(SERVING_PACKAGES))
    ranked, packages = run_reported(sandbox, "smart", "convert 26.2 miles to km", "--suggestions", "3", "--json")
    assert ranked.returncode == 0, ranked.stderr[-2000:]
    assert "convert_units" in ranked.stdout, ranked.stdout
    assert not packages & set(SERVING_PACKAGES), sorted(packages & set(SERVING_PACKAGES))


def test_configuration_commands_import_no_mcp_at_all(tmp_path: Path) -> None:
    sandbox = make_sandbox(tmp_path)
    sandbox.write("work/toolscout.json", json.dumps({"mcpServers": {"units": {"command": PYTHON}}}))
    for args in (
        ("config", "validate"),
        ("config", "show"),
        ("rules", "hide", "units:delete_*"),
        ("--help",),
        ("version",),
        ("--version",),
    ):
        done, packages = run_reported(sandbox, *args)
        assert done.returncode == 0, done.stderr[-2000:]
        # Not even the protocol's types: nothing here reads a tool.
        assert not packages & {*SERVING_PACKAGES, "mcp_types"}, (
            args,
            sorted(packages & {*SERVING_PACKAGES, "mcp_types"}),
        )
