"""`toolscout serve --transport http` as a child process with its registry in the test's directory,
its HTTP API at hand, and an MCP client's view of its servers (waited on, bounded)."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import mcp_types as types
from mcp import Client

from tests.helpers.paths import PYTHON
from tests.helpers.procs import SERVE_READY, Running, running

POLL_SECONDS = 0.2
"""How often a test asks the gateway again while waiting for a server's state to change."""


def write_config(directory: Path, **extra: Any) -> Path:
    """A config fronting the units demo (stdio) as `units`, its registry and audit log in `directory`."""
    config: dict[str, Any] = {
        "mcpServers": {"units": {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]}},
        "registry": {"path": str(directory / "registry.sqlite3")},
        "audit": {"path": str(directory / "audit.jsonl")},
        **extra,
    }
    path = directory / "toolscout.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


@dataclass
class ServedGateway:
    process: Running
    mcp_url: str
    api_url: str
    """`http://127.0.0.1:PORT/api/v1`"""
    base_url: str
    """`http://127.0.0.1:PORT`: what `toolscout registry --url` takes."""

    async def api(self, method: str, path: str, body: Any = None, *, content: bytes | None = None) -> httpx2.Response:
        """One request to the gateway's HTTP API."""
        async with httpx2.AsyncClient(timeout=30) as http:
            if content is not None:
                return await http.request(method, self.api_url + path, content=content)
            return await http.request(method, self.api_url + path, json=body)


@asynccontextmanager
async def served_gateway(config: Path, *extra_args: str) -> AsyncGenerator[ServedGateway]:
    """`toolscout serve --transport http --port 0 --config CONFIG` until the block ends."""
    command = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--transport", "http", "--port", "0"]
    async with running([*command, *extra_args], ready=SERVE_READY) as process:
        mcp_url = process.match.group(1)
        base = mcp_url.removesuffix("/mcp")
        yield ServedGateway(process, mcp_url, base + "/api/v1", base)


def structured(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    content: Any = result.structured_content
    assert isinstance(content, dict)
    return cast(dict[str, Any], content)


async def servers(client: Client) -> dict[str, dict[str, Any]]:
    """`list_mcp_servers` by name."""
    listed = structured(await client.call_tool("list_mcp_servers", {}))["servers"]
    return {entry["name"]: entry for entry in listed}


async def until(
    client: Client, wanted: Callable[[dict[str, dict[str, Any]]], bool], *, seconds: float = 60
) -> dict[str, dict[str, Any]]:
    """`list_mcp_servers` by name, once `wanted` says yes (asked again every `POLL_SECONDS`, at most `seconds`)."""
    with anyio.fail_after(seconds):
        while True:  # another process's state: asked for, as a client would
            found = await servers(client)
            if wanted(found):
                return found
            await anyio.sleep(POLL_SECONDS)


def status_of(name: str) -> Callable[[dict[str, dict[str, Any]]], str | None]:
    return lambda found: found[name]["status"] if name in found else None
