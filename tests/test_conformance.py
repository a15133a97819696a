"""The official MCP conformance suite, run against an upstream directly and through the gateway.

The rule (issue "Nothing lost through the gateway"): every server scenario the upstream passes,
toolscout in passthrough mode in front of it passes too. The upstreams are tests/conformance_server.py,
which offers what the scenarios ask for (so it passes them all), and `server-everything` over
streamable HTTP, which has tools of its own and passes the protocol-level scenarios; the suite is
`@modelcontextprotocol/conformance` from tools/npm, on its pinned Node 22.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from tests.conftest import NPM_BIN, PYTHON, ROOT, npm_tool
from tests.procs import free_port, running
from tests.test_e2e_subprocess import SERVE_READY, UVICORN_READY
from tests.test_public_servers import node_path

pytestmark = pytest.mark.anyio

SUITE_TIMEOUT = 120
SUMMARY_LINE = re.compile(r"^([✓✗]) (\S+): (\d+) passed, (\d+) failed", re.MULTILINE)
RESULT_DIR = re.compile(r"^server-(.+)-\d{4}-\d{2}-\d{2}T")


@dataclass
class SuiteRun:
    verdicts: dict[str, bool]
    """Each scenario run, and whether it passed (no failed check), as the suite's summary says."""
    failures: dict[str, list[str]]
    """The failed checks of each scenario that failed: `id: message`."""
    output: str

    @property
    def passed(self) -> set[str]:
        return {name for name, ok in self.verdicts.items() if ok}


def failed_checks(out: Path) -> dict[str, list[str]]:
    """The failed checks of each scenario with any, from its `checks.json` under `out`."""
    failures: dict[str, list[str]] = {}
    for result in sorted(out.iterdir()) if out.is_dir() else []:
        match = RESULT_DIR.match(result.name)
        checks_file = result / "checks.json"
        if match is None or not checks_file.is_file():
            continue
        checks = cast(list[dict[str, Any]], json.loads(checks_file.read_text(encoding="utf-8")))
        failed = [
            f"{c.get('id')}: {c.get('errorMessage') or c.get('description')}"
            for c in checks
            if c.get("status") == "FAILURE"
        ]
        if failed:
            failures[match.group(1)] = failed
    return failures


async def run_suite(url: str, out: Path) -> SuiteRun:
    """`conformance server --url URL` (the default, active suite), its verdicts and failed checks."""
    conformance = npm_tool("conformance")
    env = {**os.environ, "PATH": f"{NPM_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    with anyio.fail_after(SUITE_TIMEOUT):
        done = await anyio.run_process(
            [str(conformance), "server", "--url", url, "-o", str(out)], env=env, cwd=ROOT / "tools" / "npm", check=False
        )
    output = done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
    verdicts = {m.group(2): m.group(1) == "✓" for m in SUMMARY_LINE.finditer(output)}
    assert verdicts, f"no scenario summary in the conformance suite's output (exit {done.returncode}):\n{output}"
    return SuiteRun(verdicts, failed_checks(out), output)


@asynccontextmanager
async def upstream_server(name: str) -> AsyncGenerator[tuple[str, int]]:
    """The upstream's URL, and how many scenarios it must pass itself for the comparison to be worth making."""
    if name == "conformance":
        command = [PYTHON, "-m", "tests.conformance_server", "--port", "0"]
        async with running(command, ready=UVICORN_READY) as upstream:
            yield f"http://127.0.0.1:{upstream.match.group(1)}/mcp", 25
    else:
        port = free_port()
        env = {**os.environ, "PATH": node_path(), "PORT": str(port)}
        command = [str(npm_tool("mcp-server-everything")), "streamableHttp"]
        async with running(command, ready="listening on port", env=env):
            yield f"http://127.0.0.1:{port}/mcp", 3  # it offers its own tools, not the suite's


@pytest.mark.parametrize("upstream_name", ["conformance", "everything"])
async def test_passthrough_passes_every_scenario_its_upstream_passes(tmp_path: Path, upstream_name: str) -> None:
    async with upstream_server(upstream_name) as (upstream_url, baseline):
        direct = await run_suite(upstream_url, tmp_path / "direct")
        # The baseline is only worth comparing against when the upstream passes enough of it.
        assert len(direct.passed) >= baseline, f"the upstream itself fails the suite:\n{direct.output}"

        config = tmp_path / "toolscout.json"
        # The suite's client speaks 2025-11-25, so the gateway speaks that era to the upstream too: the
        # same conversation as the direct run, one hop longer.
        upstream_entry = {"url": upstream_url, "protocol": "legacy"}
        config.write_text(json.dumps({"mcpServers": {upstream_name: upstream_entry}}), encoding="utf-8")
        serve = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--mode", "passthrough"]
        # Ready once the upstream is connected; the URL was printed before that (it is printed on start).
        ready = rf"{upstream_name}: connected"
        async with running([*serve, "--transport", "http", "--port", "0"], ready=ready) as gateway:
            url = next(m.group(1) for line in gateway.stderr if (m := re.search(SERVE_READY, line)))
            through = await run_suite(url, tmp_path / "gateway")

    lost = sorted(direct.passed - through.passed)
    report = "\n".join(
        f"  {name}: " + "; ".join(through.failures.get(name, ["(not run through the gateway)"]))[:250] for name in lost
    )
    assert not lost, (
        f"{len(lost)} of the {len(direct.passed)} scenarios the upstream passes fail through toolscout "
        f"(passthrough):\n{report}"
    )
