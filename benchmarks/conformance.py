"""The official MCP conformance suite against each upstream directly and through `toolscout serve --mode passthrough`.

    python -m benchmarks conformance [--upstreams conformance,everything] [--configs default,legacy,auto]

Suites (`SUITES`): `@modelcontextprotocol/conformance` 0.1.16 from tools/npm, its default (`active`)
suite and `--suite all`, whose client speaks 2025-11-25; and the 0.2.0-alpha.12 prerelease, installed
as `conformance-2026`, with `--spec-version 2026-07-28`, whose client speaks 2026-07-28 (0.1.16 has no
scenario of that era). Upstreams (`UPSTREAMS`): tests/servers/conformance.py, written to pass the
scenarios, and `server-everything` 2026.8.31, which has tools of its own and passes the protocol-level
ones. Gateway configurations (`CONFIGS`): the upstream's entry as a user writes it, `{"url": ...}`
("default"), and with `protocol` pinned to `legacy` or `auto`.

For each upstream and suite, the suite runs against the upstream directly, then through `toolscout
serve --transport http --mode passthrough` in each configuration. The benchmark prints Markdown:
scenarios passed of those run, and which failed, per row; a scenario the upstream passes directly and
the gateway fails is marked **lost**. tests/test_conformance.py uses the same helpers and asserts the
same comparison (nothing lost with the default configuration and with `legacy`). The gateway's audit
log goes to a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import anyio

from benchmarks import harness
from benchmarks.processes import PYTHON, SERVE_READY, UVICORN_READY, free_port, running

ROOT = Path(__file__).resolve().parent.parent
NPM_DIR = ROOT / "tools" / "npm"
NPM_BIN = NPM_DIR / "node_modules" / ".bin"
SUITE_TIMEOUT = 180
SUMMARY_LINE = re.compile(r"^([✓✗]) (\S+): (\d+) passed, (\d+) failed", re.MULTILINE)
RESULT_DIR = re.compile(r"^server-(.+)-\d{4}-\d{2}-\d{2}T")
CONFORMANCE_2026 = NPM_DIR / "node_modules" / "conformance-2026" / "dist" / "index.js"

Suite = Literal["active", "all", "2026-07-28"]
SUITES: tuple[Suite, ...] = ("active", "all", "2026-07-28")
UpstreamName = Literal["conformance", "everything"]
UPSTREAMS: tuple[UpstreamName, ...] = ("conformance", "everything")
ConfigName = Literal["default", "legacy", "auto"]
CONFIGS: tuple[ConfigName, ...] = ("default", "legacy", "auto")


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

    @property
    def failed(self) -> set[str]:
        return {name for name, ok in self.verdicts.items() if not ok}


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


def node_env() -> dict[str, str]:
    """The environment with tools/npm's binaries (its pinned Node 22 among them) first on PATH."""
    node = NPM_BIN / "node"
    if not node.exists():
        raise AssertionError(f"{node} is missing: run ./scripts/test (it installs the npm test peers).")
    return {**os.environ, "PATH": f"{NPM_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def suite_command(suite: Suite, url: str, out: Path) -> list[str]:
    """The command line that runs `suite` against the server at `url`, results under `out`."""
    if suite == "2026-07-28":
        return [
            str(NPM_BIN / "node"),
            str(CONFORMANCE_2026),
            "server",
            "--url",
            url,
            "--spec-version",
            suite,
            "-o",
            str(out),
        ]
    return [str(NPM_BIN / "conformance"), "server", "--url", url, "--suite", suite, "-o", str(out)]


async def run_suite(suite: Suite, url: str, out: Path) -> SuiteRun:
    """Run `suite` against `url`: its verdicts and failed checks."""
    env = node_env()
    with anyio.fail_after(SUITE_TIMEOUT):
        done = await anyio.run_process(suite_command(suite, url, out), env=env, cwd=NPM_DIR, check=False)
    output = done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
    verdicts = {m.group(2): m.group(1) == "✓" for m in SUMMARY_LINE.finditer(output)}
    if not verdicts:
        raise AssertionError(
            f"no scenario summary in the conformance suite's output (exit {done.returncode}):\n{output}"
        )
    return SuiteRun(verdicts, failed_checks(out), output)


@asynccontextmanager
async def upstream_server(name: UpstreamName) -> AsyncGenerator[str]:
    """The upstream running over streamable HTTP: its URL."""
    if name == "conformance":
        command = [PYTHON, "-m", "tests.servers.conformance", "--port", "0"]
        async with running(command, ready=UVICORN_READY) as upstream:
            yield f"http://127.0.0.1:{upstream.match.group(1)}/mcp"
    else:
        port = free_port()
        env = {**node_env(), "PORT": str(port)}
        command = [str(NPM_BIN / "mcp-server-everything"), "streamableHttp"]
        async with running(command, ready="listening on port", env=env):
            yield f"http://127.0.0.1:{port}/mcp"


def upstream_entry(url: str, config: ConfigName) -> dict[str, Any]:
    """The upstream's entry in the gateway's config: as a user writes it, or with `protocol` pinned."""
    return {"url": url} if config == "default" else {"url": url, "protocol": config}


@asynccontextmanager
async def passthrough_gateway(
    directory: Path, upstream: UpstreamName, url: str, config: ConfigName
) -> AsyncGenerator[str]:
    """`toolscout serve --transport http --mode passthrough` in front of the upstream: its URL, once the
    upstream is connected. `directory` holds its config."""
    path = directory / f"toolscout-{config}.json"
    entry = upstream_entry(url, config)
    # The suite opens a session per scenario, dozens a second from one address: more than a client
    # may by default (http.sessionOpeningRate, a guard against floods that is not what this measures).
    http = {"sessionOpeningRate": 1000}
    document = {"mcpServers": {upstream: entry}, "catalogCache": False, "http": http}
    path.write_text(json.dumps(document), encoding="utf-8")
    serve = [PYTHON, "-m", "toolscout", "serve", "--config", str(path), "--mode", "passthrough"]
    # Ready once the upstream is connected; the URL was printed before that (it is printed on start).
    async with running([*serve, "--transport", "http", "--port", "0"], ready=rf"{upstream}: connected") as gateway:
        yield next(m.group(1) for line in gateway.stderr if (m := re.search(SERVE_READY, line)))


def _cell(run: SuiteRun, direct: SuiteRun | None) -> str:
    failed = sorted(run.failed)
    lost: set[str] = set() if direct is None else direct.passed - run.passed
    names = ", ".join(f"**{name}** (lost)" if name in lost else name for name in failed)
    return f"{len(run.passed)}/{len(run.verdicts)}" + (f" — failed: {names}" if names else "")


async def measure(upstreams: list[UpstreamName], configs: list[ConfigName], work: Path) -> list[str]:
    rows: list[str] = []
    for upstream in upstreams:
        async with upstream_server(upstream) as url:
            direct = {suite: await run_suite(suite, url, work / upstream / "direct" / suite) for suite in SUITES}
            rows += [f"| {upstream} | directly | {suite} | {_cell(run, None)} |" for suite, run in direct.items()]
            for config in configs:
                async with passthrough_gateway(work, upstream, url, config) as gateway_url:
                    for suite in SUITES:
                        through = await run_suite(suite, gateway_url, work / upstream / config / suite)
                        rows.append(f"| {upstream} | toolscout, {config} | {suite} | {_cell(through, direct[suite])} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--upstreams", default=",".join(UPSTREAMS))
    parser.add_argument("--configs", default=",".join(CONFIGS))
    args = parser.parse_args()
    upstreams: list[UpstreamName] = [u for u in UPSTREAMS if u in str(args.upstreams).split(",")]
    configs: list[ConfigName] = [c for c in CONFIGS if c in str(args.configs).split(",")]
    with tempfile.TemporaryDirectory(prefix="toolscout-conformance-") as work:
        os.environ["XDG_STATE_HOME"] = work  # the gateway's audit log (inherited by `toolscout serve`)
        rows = anyio.run(measure, upstreams, configs, Path(work))
    print(f"{harness.today()}, toolscout at {harness.commit()}, Python {platform.python_version()}, {sys.platform}")
    print()
    print("| upstream | served | suite | scenarios passed |")
    print("|---|---|---|---|")
    print("\n".join(rows))
