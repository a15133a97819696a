"""The `code_mode` benchmark's tasks do what they say through toolscout, so its figures come from working legs.

Each task of benchmarks/code_mode_tasks.py runs as the benchmark runs it, through the gateway in
process: the meta-tools leg (search_tools, get_tool_details, one execute_tool per call) and the code-mode
leg (the same discovery, then one run_code), each against fresh upstreams and its own workspace, with
the task's own check of the answer and the state left behind. FastMCP's leg needs its own venv and is
the benchmark's alone; here its dialect is checked to be a program that returns its answer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import anyio
import pytest
from benchmarks.code_mode import Leg, run_task
from benchmarks.code_mode_tasks import QUERIES, SERVERS, TASKS, Workspace, fastmcp_program, identifier
from mcp import Client

from tests.helpers.paths import npm_tool
from toolscout.config import GatewayConfig
from toolscout.gateway.core import Gateway
from toolscout.modes.base import SurfaceOptions
from toolscout.render.text import tool_tokens
from toolscout.serve.server import build_server

pytestmark = pytest.mark.anyio


def test_the_benchmark_has_at_least_twenty_tasks_of_two_to_six_calls_with_a_query_per_tool() -> None:
    assert len(TASKS) >= 20
    assert len({t.name for t in TASKS}) == len(TASKS)
    assert {server for t in TASKS for server, _ in t.tools} == set(SERVERS)
    for task in TASKS:
        assert task.tools, task.name
        for tool in task.tools:
            assert tool in QUERIES, f"{task.name}: no search query for {tool}"


def test_fastmcp_dialect_calls_call_tool_and_returns_the_answer() -> None:
    for task in TASKS:
        names = {(server, function): f"{server}_{function}" for server, function in task.tools}
        program = fastmcp_program(task, names)
        tree = ast.parse(program)
        assert isinstance(tree.body[-1], ast.Return), task.name
        assert not any(isinstance(n, ast.Name) and n.id in SERVERS for n in ast.walk(tree)), task.name


def test_identifier_makes_a_python_name_of_a_tool_name() -> None:
    assert identifier("get-structured-content") == "get_structured_content"
    assert identifier("create_note") == "create_note"


@pytest.mark.parametrize("leg", ["meta", "code"])
async def test_every_task_passes_its_check_through_toolscout(leg: str, tmp_path: Path) -> None:
    npm_tool("mcp-server-memory")  # a clear failure when tools/npm is not installed
    workspace = Workspace(tmp_path / leg)
    workspace.seed()
    config = GatewayConfig.model_validate({"mcpServers": workspace.servers(), "code": {"allowDestructive": True}})
    async with Gateway.from_config(config) as gateway:
        with anyio.fail_after(60):
            await gateway.settle()
        for up in gateway.upstreams:
            assert up.status.value == "connected", f"{up.name}: {up.error}"
        mode = "discovery" if leg == "meta" else "code"
        server = build_server(gateway, mode, SurfaceOptions.from_config(config))
        async with Client(server, mode="legacy") as client:
            listed = tool_tokens((await client.list_tools()).tools)
            opened = Leg(leg, client, workspace, listed)
            for task in TASKS:
                run = await run_task(opened, task)  # raises LegFailed, naming the task, when its check fails
                assert run.execution_trips >= 1
                if leg == "code":
                    assert run.execution_trips == 1, f"{task.name}: one run_code"
