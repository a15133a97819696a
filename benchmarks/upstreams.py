"""Real upstream processes for the process benchmarks (cold_start, memory): catalogs served over HTTP, RSS.

Not a benchmark itself: helpers to write an eval-format catalog, serve it with
`toolscout.demo.catalog_server` (one process, every server at `/servers/<name>/mcp`), and read a
process's memory from /proc.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types

from benchmarks.processes import PYTHON, UVICORN_READY, running
from toolscout.demo.catalog_server import server_path

ROOT = Path(__file__).resolve().parent.parent
HANG = "import time; time.sleep(3600)"
"""A stdio server that never answers: it starts and reads nothing (arguments after it are ignored: a marker)."""


def copies(servers: Mapping[str, list[types.Tool]], count: int) -> dict[str, list[types.Tool]]:
    """`count` servers: the catalog's own, then copies named `<name> #<k>` until there are enough."""
    out: dict[str, list[types.Tool]] = {}
    copy = 0
    while len(out) < count:
        for name, tools in servers.items():
            if len(out) == count:
                break
            out[name if copy == 0 else f"{name} #{copy}"] = tools
        copy += 1
    return out


def write_catalog(servers: Mapping[str, Sequence[types.Tool]], path: Path) -> Path:
    """`servers` as a catalog file in the eval format (JSON Lines, one tool a line)."""
    with path.open("w", encoding="utf-8") as out:
        for server, tools in servers.items():
            for tool in tools:
                row = {
                    "server": server,
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.input_schema,
                }
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


@asynccontextmanager
async def catalog_over_http(catalog: Path) -> AsyncGenerator[str]:
    """Serve every server of `catalog` from one process; yields the base URL (`http://127.0.0.1:<port>`)."""
    command = [PYTHON, "-m", "toolscout.demo.catalog_server", "--catalog", str(catalog), "--http", "--port", "0"]
    async with running(command, ready=UVICORN_READY, startup_timeout=300) as served:
        yield f"http://127.0.0.1:{served.match.group(1)}"


def http_servers(base: str, names: Sequence[str]) -> dict[str, Any]:
    """Config entries (`mcpServers`) for catalog servers served at `base`."""
    return {name: {"url": base + server_path(name)} for name in names}


def rss_kib(pid: int) -> dict[str, int]:
    """VmRSS (resident now) and VmHWM (peak resident) of `pid`, in KiB, from /proc/<pid>/status."""
    found: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


def reap(marker: str) -> int:
    """SIGTERM every process whose command line holds `marker` (upstreams a gateway left behind); how many."""
    found = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue  # gone already
        if marker in cmdline:
            try:
                os.kill(int(entry.name), signal.SIGTERM)
                found += 1
            except ProcessLookupError:
                pass
    return found
