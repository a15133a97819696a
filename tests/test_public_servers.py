"""The gateway in front of the public reference servers (npm and PyPI), results compared with direct calls."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast, get_args

import anyio
import mcp_types as types
import pytest
from benchmarks.processes import SERVE_READY, free_port, running
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client

from tests.helpers.mode_calls import call_in_mode
from tests.helpers.paths import NPM_DIR, PYTHON, node_path, npm_tool
from toolscout.config import GatewayConfig
from toolscout.config.models import ModeName
from toolscout.gateway.core import Gateway
from toolscout.modes.hints import SEARCH_HINT
from toolscout.serve.server import build_server

pytestmark = pytest.mark.anyio

EVERYTHING = "@modelcontextprotocol/server-everything"


def npx_server(package: str, *args: str) -> dict[str, Any]:
    """A stdio server started the way users write it, `npx -y <package>`, on the pinned Node 22."""
    return {"command": "npx", "args": ["-y", package, *args], "cwd": str(NPM_DIR), "env": {"PATH": node_path()}}


@asynccontextmanager
async def gateway_client(servers: Mapping[str, Any], mode: ModeName = "discovery") -> AsyncGenerator[Client]:
    config = GatewayConfig.model_validate({"mcpServers": dict(servers)})
    async with Gateway.from_config(config) as gateway:
        with anyio.fail_after(60):
            await gateway.settle()
        for up in gateway.upstreams:
            assert up.status.value == "connected", f"{up.name}: {up.error}"
        async with Client(build_server(gateway, mode), mode="legacy") as client:
            yield client


def hop_free(result: types.CallToolResult) -> dict[str, Any]:
    """A result as data, without the per-hop serverInfo stamp."""
    dumped = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    meta = dumped.get("_meta", {})
    meta.pop(types.SERVER_INFO_META_KEY, None)
    if not meta:
        dumped.pop("_meta", None)
    return dumped


async def same_through_gateway(
    client: Client, direct: Client, server: str, tool: str, arguments: dict[str, Any]
) -> dict[str, Any]:
    via_gateway = await client.call_tool("execute_tool", {"server": server, "tool": tool, "arguments": arguments})
    straight = await direct.call_tool(tool, arguments)
    assert hop_free(via_gateway) == hop_free(straight)
    return hop_free(via_gateway)


async def check_everything(client: Client, direct: Client) -> None:
    image = await same_through_gateway(client, direct, "everything", "get-tiny-image", {})
    kinds = [block["type"] for block in image["content"]]
    assert "image" in kinds
    png = next(block for block in image["content"] if block["type"] == "image")
    assert png["mimeType"] == "image/png" and len(png["data"]) > 100

    weather = await same_through_gateway(
        client, direct, "everything", "get-structured-content", {"location": "New York"}
    )
    assert set(weather["structuredContent"]) >= {"temperature", "conditions", "humidity"}

    echo = await same_through_gateway(client, direct, "everything", "echo", {"message": "hi there"})
    assert "hi there" in echo["content"][0]["text"]

    details = await client.call_tool("get_tool_details", {"server": "everything", "tool": "get-structured-content"})
    assert cast(dict[str, Any], details.structured_content)["outputSchema"]["type"] == "object"

    # Wrong arguments are stopped by the gateway with every violation, before reaching the server.
    refused = await client.call_tool(
        "execute_tool", {"server": "everything", "tool": "get-sum", "arguments": {"a": "x"}}
    )
    error = cast(dict[str, Any], refused.structured_content)["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert {v["path"] for v in error["violations"]} == {"$", "$.a"}


async def test_server_everything_over_stdio() -> None:
    async with (
        gateway_client({"everything": npx_server(EVERYTHING, "stdio")}) as client,
        Client(
            StdioServerParameters(
                command=str(npm_tool("mcp-server-everything")), args=["stdio"], env={"PATH": node_path()}
            )
        ) as direct,
    ):
        await check_everything(client, direct)


@pytest.mark.parametrize(
    ("mode", "path", "ready"), [("streamableHttp", "/mcp", "listening on port"), ("sse", "/sse", "running on port")]
)
async def test_server_everything_over_the_network(mode: str, path: str, ready: str) -> None:
    port = free_port()
    env = {**os.environ, "PATH": node_path(), "PORT": str(port)}
    async with running([str(npm_tool("mcp-server-everything")), mode], ready=ready, env=env):
        url = f"http://127.0.0.1:{port}{path}"
        direct = Client(sse_client(url)) if mode == "sse" else Client(url)
        async with gateway_client({"everything": {"url": url}}) as client, direct:
            await check_everything(client, direct)


async def test_mcp_server_time_results_and_errors_pass_through() -> None:
    args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
    async with (
        gateway_client({"time": {"command": PYTHON, "args": args}}) as client,
        Client(StdioServerParameters(command=PYTHON, args=args)) as direct,
    ):
        converted = await same_through_gateway(
            client,
            direct,
            "time",
            "convert_time",
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
        )
        assert converted["structuredContent"]["target"]["timezone"] == "Asia/Tokyo"
        failed = await same_through_gateway(
            client, direct, "time", "get_current_time", {"timezone": "Nowhere/Atlantis"}
        )
        assert failed["isError"] is True
        assert "Nowhere/Atlantis" in failed["content"][0]["text"]


async def test_a_realistic_fleet(tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hello from the sandbox", encoding="utf-8")
    servers = {
        "filesystem": npx_server("@modelcontextprotocol/server-filesystem", str(tmp_path)),
        "memory": npx_server("@modelcontextprotocol/server-memory"),
        "everything": npx_server(EVERYTHING),
        "time": {"command": PYTHON, "args": ["-m", "mcp_server_time"]},
    }
    async with gateway_client(servers) as client:
        listing = cast(dict[str, Any], (await client.call_tool("list_mcp_servers", {})).structured_content)
        counts = {s["name"]: s["toolCount"] for s in listing["servers"]}
        assert all(count > 1 for count in counts.values()), counts

        hits = cast(
            dict[str, Any],
            (
                await client.call_tool("search_tools", {"query": "read the contents of a text file", "limit": 5})
            ).structured_content,
        )
        assert ("filesystem", "read_text_file") in {(r["server"], r["tool"]) for r in hits["results"]}

        read = await client.call_tool(
            "execute_tool",
            {"server": "filesystem", "tool": "read_text_file", "arguments": {"path": str(tmp_path / "hello.txt")}},
        )
        assert not read.is_error
        assert "hello from the sandbox" in json.dumps(read.model_dump(mode="json"))

        entity = {"name": "toolscout", "entityType": "project", "observations": ["an MCP gateway"]}
        created = await client.call_tool(
            "execute_tool", {"server": "memory", "tool": "create_entities", "arguments": {"entities": [entity]}}
        )
        assert not created.is_error


async def test_inspector_cli_lists_exactly_the_five_meta_tools(tmp_path: Path) -> None:
    command = [PYTHON, "-m", "toolscout", "serve", "--demo", "--transport", "http", "--port", "0"]
    async with running(command, ready=r"serving streamable HTTP at (http://\S+/mcp)") as gateway:
        url = gateway.match.group(1)
        env = {**os.environ, "PATH": node_path()}
        inspector = ["npx", "-y", "@modelcontextprotocol/inspector", "--cli", url]
        with anyio.fail_after(120):
            listed = await anyio.run_process([*inspector, "--method", "tools/list"], env=env, cwd=NPM_DIR)
            names = [t["name"] for t in json.loads(listed.stdout)["tools"]]
            assert names == ["list_mcp_servers", "search_tools", "list_tools", "get_tool_details", "execute_tool"]
            called = await anyio.run_process(
                [
                    *inspector,
                    "--method",
                    "tools/call",
                    "--tool-name",
                    "search_tools",
                    "--tool-arg",
                    "query=slugify text",
                ],
                env=env,
                cwd=NPM_DIR,
            )
        result = json.loads(called.stdout)
        assert result["structuredContent"]["results"][0]["tool"] == "slugify"


async def test_passthrough_mode_is_the_servers_own_tools_under_prefixed_names() -> None:
    time_args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
    servers = {
        "everything": npx_server(EVERYTHING, "stdio"),
        "time": {"command": PYTHON, "args": time_args},
    }
    async with (
        gateway_client(servers, mode="passthrough") as client,
        Client(
            StdioServerParameters(
                command=str(npm_tool("mcp-server-everything")), args=["stdio"], env={"PATH": node_path()}
            )
        ) as direct,
    ):
        own = (await direct.list_tools()).tools
        listed = {t.name: t for t in (await client.list_tools()).tools}
        for tool in own:
            native = listed[f"everything__{tool.name.replace('.', '_')}"]
            # Schemas, annotations, all as given; toolscout's hints for clients that defer tools are
            # added to `_meta` beside the server's own keys (modes/hints.py).
            assert (native.meta or {}).get(SEARCH_HINT)
            own_meta = {k: v for k, v in (native.meta or {}).items() if k != SEARCH_HINT} or tool.meta
            assert native.model_copy(update={"name": tool.name, "meta": own_meta}) == tool
        assert "time__get_current_time" in listed
        echoed = await client.call_tool("everything__echo", {"message": "hi"})
        assert hop_free(echoed) == hop_free(await direct.call_tool("echo", {"message": "hi"}))
        now = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
        assert not now.is_error
        assert any(isinstance(b, types.TextContent) and "UTC" in b.text for b in now.content)


@pytest.mark.parametrize("mode", get_args(ModeName))
async def test_every_mode_over_stdio_and_http_in_front_of_the_reference_servers(tmp_path: Path, mode: ModeName) -> None:
    (tmp_path / "hello.txt").write_text("hello from the sandbox", encoding="utf-8")
    servers = {
        "filesystem": npx_server("@modelcontextprotocol/server-filesystem", str(tmp_path)),
        "memory": npx_server("@modelcontextprotocol/server-memory"),
        "everything": npx_server(EVERYTHING),
        "time": {"command": PYTHON, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
    }
    config = tmp_path / "toolscout.json"
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    serve = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--mode", mode]

    async def run_each(client: Client) -> None:
        read = await call_in_mode(client, mode, "filesystem", "read_text_file", {"path": str(tmp_path / "hello.txt")})
        assert "hello from the sandbox" in json.dumps(read.model_dump(mode="json"))
        echoed = await call_in_mode(client, mode, "everything", "echo", {"message": "hi"})
        assert not echoed.is_error and "hi" in json.dumps(echoed.model_dump(mode="json"))
        now = await call_in_mode(client, mode, "time", "get_current_time", {"timezone": "UTC"})
        assert not now.is_error, now
        graph = await call_in_mode(client, mode, "memory", "read_graph", {})
        assert not graph.is_error, graph

    with (tmp_path / "gateway.log").open("w") as errlog:
        stdio = stdio_client(StdioServerParameters(command=serve[0], args=serve[1:]), errlog=errlog)
        async with Client(stdio, mode="auto") as client:
            await run_each(client)
    async with (
        running([*serve, "--transport", "http", "--port", "0"], ready=SERVE_READY) as gateway,
        Client(gateway.match.group(1), mode="legacy") as client,
    ):
        await run_each(client)


def test_the_npm_lock_files_commands_point_at_files_that_exist() -> None:
    """Every command the lock file declares resolves to a file npm installed, so `npm ci` links no dead name.

    A search-and-replace over the tree once rewrote the inspector's `bin` paths in the lock file, and
    every inspector test then failed with "inspector: not found" on a fresh install only.
    """
    lock = json.loads((NPM_DIR / "package-lock.json").read_text(encoding="utf-8"))
    dead: list[str] = []
    for where, package in lock["packages"].items():
        commands = cast(dict[str, str], package.get("bin") or {})
        if not where:
            continue
        for name, target in commands.items():
            if not (NPM_DIR / where / target).is_file():
                dead.append(f"{where}: {name} -> {target}")
    assert not dead, dead
