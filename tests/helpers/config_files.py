"""Config files written the way editors and MCP clients save them, and what a `toolscout serve`
child logs and answers about them (the config and sources tests share these)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types

from tests.helpers.paths import PYTHON

BOUND = 60
"""Every wait is bounded by this (a loaded machine starts a demo server in seconds, not a minute)."""
POLL = 0.05


def units() -> dict[str, Any]:
    """The demo units server's entry."""
    return {"command": PYTHON, "args": ["-m", "toolscout.demo.units"], "description": "Units!"}


def write_config(path: Path, config: dict[str, Any], *, rename: bool = False) -> None:
    """Write `config` as JSON; `rename`: as most editors save, a new file renamed over the old one."""
    if not rename:
        path.write_text(json.dumps(config), encoding="utf-8")
        return
    fresh = path.with_name(path.name + ".tmp")
    fresh.write_text(json.dumps(config), encoding="utf-8")
    os.replace(fresh, path)


def serve_command(config: Path, *options: str) -> list[str]:
    """`toolscout serve --config FILE` with `options`."""
    return [PYTHON, "-m", "toolscout", "serve", "--config", str(config), *options]


def serve_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a serve child, with a persistent catalog of its own."""
    return {**os.environ, "TOOLSCOUT_CACHE_DIR": str(tmp_path / "cache"), **extra}


def servers_of(result: types.CallToolResult) -> dict[str, dict[str, Any]]:
    """list_mcp_servers' servers by name."""
    assert not result.is_error, result.content
    content = cast(dict[str, Any], result.structured_content)
    return {s["name"]: s for s in content["servers"]}


async def logged(lines: Sequence[str] | Path, pattern: str, *, after: int = 0) -> int:
    """Wait (bounded) until a line from `after` on matches `pattern`; the index just past it."""
    found = re.compile(pattern)
    with anyio.fail_after(BOUND):
        while True:
            current = (await anyio.Path(lines).read_text()).splitlines() if isinstance(lines, Path) else list(lines)
            for index in range(after, len(current)):
                if found.search(current[index]):
                    return index + 1
            await anyio.sleep(POLL)  # the child's log, read as it comes: there is no event to wait on
