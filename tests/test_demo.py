"""`toolscout demo` (the README's first command) runs end to end, shows the agent's path, and leaves
the user's home as it found it."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from tests.helpers.paths import PYTHON


def run_toolscout(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Only HOME says where the user's files are: no $TOOLSCOUT_CACHE_DIR or $XDG_* from the test run.
    return subprocess.run(
        [PYTHON, "-m", "toolscout", *args],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
        env={"COLUMNS": "160", "PATH": "/usr/bin:/bin", "TERM": "dumb", "HOME": str(home)},
    )


def test_demo_walks_list_search_details_execute(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = run_toolscout(home, "demo")
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert list(home.rglob("*")) == []  # no cache, no audit log, nothing left in the user's home

    # Its client speaks 2026-07-28, whose serialiser orders schema keys differently: both eras are named.
    listed = re.search(r"tools/list: 5 tools, (\d+) tokens at protocol 2026-07-28; (\d+) at 2025-11-25", out)
    assert listed is not None, out
    for step in ("list_mcp_servers()", "search_tools(", "get_tool_details(", "execute_tool("):
        assert step in out
    assert "4 servers, 17 tools enabled of 18." in out
    assert "units / convert_units" in out
    assert "26.2 mi = 42.1648128 km" in out
    for code in ("VALIDATION_ERROR", "TOOL_NOT_FOUND", "TOOL_DISABLED"):
        assert f"Error {code}" in out
    # A description reads as its server wrote it, without the line breaks of the source it came from.
    assert "temperature (C, F, K), time (s, min, h, day)" in out

    # The token table counts what `toolscout tokens --demo` counts, in its era.
    tokens = run_toolscout(home, "tokens", "--demo", "--json")
    assert tokens.returncode == 0, tokens.stderr
    measured = json.loads(tokens.stdout)
    assert measured["protocolVersion"] == "2025-11-25"
    costs = re.search(r"meta-tools cost (\d+) instead of (\d+) tokens", out)
    assert costs is not None
    assert int(costs.group(1)) == measured["toolscout"]["tokens"] == int(listed.group(2))
    assert int(costs.group(2)) == measured["direct"]["tokens"]
