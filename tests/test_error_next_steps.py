"""An error says what to do next in its reader's words: commands at the terminal, tools to an agent.

The gateway raises one error; each edge words its next step (errors.py `next_step`): the CLI names
`toolscout` commands, discovery and dynamic modes the meta-tools, compact mode `inspect`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from mcp import Client

from tests.helpers.cli_sandbox import Sandbox, make_sandbox
from tests.helpers.paths import PYTHON
from tests.servers.kitchen import Kitchen
from toolscout.config.models import ModeName
from toolscout.gateway.core import Gateway
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

META_TOOL_NAMES = ("search_tools", "list_tools", "list_mcp_servers", "get_tool_details", "execute_tool")


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    box = make_sandbox(tmp_path_factory.mktemp("steps"))
    box.write(
        "work/toolscout.yaml", f"mcpServers:\n  units:\n    command: {PYTHON}\n    args: [-m, toolscout.demo.units]\n"
    )
    return box


def assert_speaks_to_a_person(text: str) -> None:
    for name in META_TOOL_NAMES:
        assert name not in text, f"a person at the terminal is told to call the agent's {name}: {text}"


def test_a_misspelled_tool_points_to_toolscout_tools(sandbox: Sandbox) -> None:
    done = sandbox.run("inspect", "units", "convert_unit")
    assert done.returncode == 2
    assert "Did you mean 'convert_units' on 'units'?" in done.stderr
    assert "Run `toolscout tools units` to see its tools, or `toolscout search`" in done.stderr
    assert_speaks_to_a_person(done.stderr)

    data = sandbox.json("inspect", "units", "convert_unit", expect=2)
    assert data["error"]["code"] == "TOOL_NOT_FOUND"
    assert "`toolscout tools units`" in data["error"]["message"]
    assert_speaks_to_a_person(data["error"]["message"])


def test_a_misspelled_server_points_to_toolscout_list(sandbox: Sandbox) -> None:
    done = sandbox.run("tools", "unit")
    assert done.returncode == 2
    assert "No server named 'unit'. Did you mean 'units'?" in done.stderr
    assert "Run `toolscout list` to see the configured servers." in done.stderr
    assert_speaks_to_a_person(done.stderr)


def test_wrong_arguments_point_to_toolscout_inspect(sandbox: Sandbox) -> None:
    done = sandbox.run("execute", "units", "convert_units", "--args", '{"value": "far"}')
    assert done.returncode == 1
    assert "Run `toolscout inspect units/convert_units` for its parameters" in done.stderr
    assert_speaks_to_a_person(done.stderr)


async def _error_of(mode: ModeName, tool: str, arguments: dict[str, Any]) -> str:
    kitchen = UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server))
    async with Gateway([kitchen]) as gateway, Client(build_server(gateway, mode)) as client:
        with anyio.fail_after(30):
            result = await client.call_tool(tool, arguments)
    assert result.is_error
    return cast(dict[str, Any], result.structured_content)["error"]["message"]


@pytest.mark.anyio
async def test_an_agent_is_told_which_of_its_own_tools_to_call() -> None:
    typo = await _error_of("discovery", "get_tool_details", {"server": "kitchen", "tool": "get_wether"})
    assert typo.endswith("Call search_tools or list_tools to find the right name.")
    dynamic = await _error_of("dynamic", "get_tool_details", {"server": "kitchen", "tool": "get_wether"})
    assert dynamic.endswith("Call search_tools or list_tools to find the right name.")
    # Compact mode has only inspect and exec: that is what it is told to use.
    compact = await _error_of("compact", "exec", {"server_name": "kitchen", "tool_name": "get_wether"})
    assert compact.endswith("Call inspect with server_name 'kitchen' to see its tools.")
    unknown = await _error_of("compact", "exec", {"server_name": "kitchn", "tool_name": "get_weather"})
    assert unknown.endswith("inspect's description lists every server.")
    wrong = await _error_of("compact", "exec", {"server_name": "kitchen", "tool_name": "get_weather"})
    assert wrong.endswith("Call inspect with server_name and tool_name for its parameters, then retry.")
    for message in (compact, unknown, wrong):
        assert "search_tools" not in message and "get_tool_details" not in message


def test_list_without_servers_says_how_to_add_some(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path)
    config = box.write("work/toolscout.json", '{"mcpServers": {}}')
    done = box.run("list")
    assert done.returncode == 0, done.stderr
    assert f"No MCP servers are configured in {config}." in done.stdout
    assert "toolscout init" in done.stdout
