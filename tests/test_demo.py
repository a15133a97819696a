"""`toolscout demo` (the README's first command) runs end to end and shows the agent's path."""

from __future__ import annotations

import os
import re
import subprocess

from tests.conftest import PYTHON
from toolscout.config.loader import CACHE_ENV_VAR


def test_demo_walks_list_search_details_execute() -> None:
    done = subprocess.run(
        [PYTHON, "-m", "toolscout", "demo"],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
        # conftest's cache directory: without HOME, the real user's would be used.
        env={"COLUMNS": "160", "PATH": "/usr/bin:/bin", "TERM": "dumb", CACHE_ENV_VAR: os.environ[CACHE_ENV_VAR]},
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert re.search(r"The agent's tools/list: 5 tools, \d+ tokens", out)
    for step in ("list_mcp_servers()", "search_tools(", "get_tool_details(", "execute_tool("):
        assert step in out
    assert "4 servers, 17 tools enabled of 18." in out
    assert "units / convert_units" in out
    assert "26.2 mi = 42.1648128 km" in out
    for code in ("VALIDATION_ERROR", "TOOL_NOT_FOUND", "TOOL_DISABLED"):
        assert f"Error {code}" in out
    costs = re.search(r"meta-tools cost (\d+) instead of (\d+) tokens", out)
    assert costs is not None and int(costs.group(1)) < int(costs.group(2))
