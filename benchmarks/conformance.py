"""The official MCP conformance suite against each upstream directly and through `toolscout serve --mode passthrough`.

    .venv/bin/python -m benchmarks.conformance [--upstreams conformance,everything] [--configs default,legacy,auto]

For each upstream (tests/servers/conformance.py; `server-everything` 2026.8.31) and each suite
(`@modelcontextprotocol/conformance` 0.1.16's default suite and `--suite all`, whose client speaks
2025-11-25; its 0.2.0-alpha.12 prerelease with `--spec-version 2026-07-28`, whose client speaks
2026-07-28), the suite runs against the upstream directly, then through `toolscout serve --transport
http --mode passthrough` configured with the upstream's entry as a user writes it (`{"url": ...}`,
"default") and with `protocol` pinned (`legacy`, `auto`). Prints Markdown: scenarios passed of those
run, and which failed, per row; a scenario the upstream passes directly and the gateway fails is
marked **lost**. tests/test_conformance.py asserts the same comparison (nothing lost with the default
configuration and with `legacy`). The gateway's audit log goes to a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

import anyio
from tests.helpers.conformance import (
    CONFIGS,
    SUITES,
    UPSTREAMS,
    ConfigName,
    SuiteRun,
    UpstreamName,
    passthrough_gateway,
    run_suite,
    upstream_server,
)

ROOT = Path(__file__).resolve().parent.parent


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
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    print(f"{date.today()}, toolscout at {commit.strip() or '?'}, Python {platform.python_version()}, {sys.platform}")
    print()
    print("| upstream | served | suite | scenarios passed |")
    print("|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
