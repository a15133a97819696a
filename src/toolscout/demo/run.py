"""`toolscout demo`: a real MCP client drives `toolscout serve --demo` over stdio.

It walks the path an agent takes (list, search, details, execute), shows what
the agent reads at each step, a few mistakes the gateway catches, and what the
catalog would cost if every tool were exposed instead of the five meta-tools.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from toolscout.config.locations import CACHE_ENV_VAR, STATE_ENV_VAR
from toolscout.demo.config import DEMO_SERVERS, demo_config
from toolscout.modes.costs import COUNTED_ERA, ServerCost, server_costs
from toolscout.modes.discovery import META_TOOLS
from toolscout.render.text import ENCODING, tool_tokens

CONNECT_BOUND = 120
"""The longest the demo waits for its servers to connect (each also has its own connect timeout)."""


def _text_of(result: types.CallToolResult) -> str:
    parts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    return "\n".join(parts)


class _Demo:
    def __init__(self, client: Client, console: Console) -> None:
        self.client = client
        self.console = console
        self.step = 0

    async def call(self, tool: str, arguments: dict[str, Any], note: str = "") -> types.CallToolResult:
        self.step += 1
        shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())
        result = await self.client.call_tool(tool, arguments)
        title = f"{self.step}. {tool}({shown})" + (f"  — {note}" if note else "")
        style = "red" if result.is_error else "green"
        self.console.print(Panel(Text(_text_of(result)), title=Text(title), title_align="left", border_style=style))
        return result


async def _direct_costs() -> list[ServerCost]:
    """What each demo server's enabled tools cost exposed directly: counted as `toolscout tokens --demo`
    counts them (the same code, on the servers' own definitions), so the two always agree."""
    from toolscout.gateway.core import Gateway

    async with Gateway.from_config(demo_config()) as gateway:
        with anyio.fail_after(CONNECT_BOUND):
            await gateway.settle()
        return server_costs(gateway)


async def run_demo() -> None:
    console = Console(highlight=False)
    console.print(
        "[bold]toolscout demo[/bold]: an MCP client starts [cyan]toolscout serve --demo[/cyan] over stdio; "
        f"behind it run {len(DEMO_SERVERS)} demo MCP servers ({', '.join(DEMO_SERVERS)}) as child processes.\n"
    )
    # The SDK passes a child only a few variables; toolscout's own settings go along. The catalog,
    # embeddings and audit log of the demo live in a directory of its own, deleted at the end:
    # the demo leaves the user's home as it found it.
    with tempfile.TemporaryDirectory(prefix="toolscout-demo-") as scratch, tempfile.TemporaryFile("w+") as gateway_log:
        private = {CACHE_ENV_VAR: os.path.join(scratch, "cache"), STATE_ENV_VAR: os.path.join(scratch, "state")}
        own = {k: v for k, v in os.environ.items() if k.startswith("TOOLSCOUT_")} | private
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "toolscout", "serve", "--demo", "--log-level", "warning"],
            env={**get_default_environment(), **own},
        )
        before = {name: os.environ.get(name) for name in private}
        os.environ.update(private)  # for the gateway this process measures the tokens with, too
        try:
            async with Client(stdio_client(params, errlog=gateway_log)) as client:
                await _walk(_Demo(client, console))
        except Exception:
            gateway_log.seek(0)
            console.print(Panel(Text(gateway_log.read() or "(no output)"), title="gateway log", border_style="red"))
            raise
        finally:
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def _as_counted(listed: Sequence[types.Tool]) -> list[types.Tool]:
    """The meta-tools as a client of `COUNTED_ERA` receives them: their definitions, with the
    annotations `listed` gave each (execute_tool's depend on the tools it reaches)."""
    given = {tool.name: tool.annotations for tool in listed}
    return [t.definition().model_copy(update={"annotations": given.get(t.name)}) for t in META_TOOLS]


async def _walk(demo: _Demo) -> None:
    client, console = demo.client, demo.console
    listed = await client.list_tools()
    meta_cost = tool_tokens(listed.tools)
    era = client.protocol_version
    # The eras serialise schemas with their keys in another order, which shifts the count a little.
    other = "" if era == COUNTED_ERA else f"; {tool_tokens(_as_counted(listed.tools))} at {COUNTED_ERA}"
    console.print(
        f"The agent's tools/list: {len(listed.tools)} tools, [bold]{meta_cost} tokens[/bold] at protocol {era}"
        f"{other} ({', '.join(t.name for t in listed.tools)}).\n"
    )
    await demo.call("list_mcp_servers", {})
    await demo.call("search_tools", {"query": "convert a marathon distance from miles to kilometers", "limit": 3})
    await demo.call("get_tool_details", {"server": "units", "tool": "convert_units"})
    await demo.call(
        "execute_tool",
        {"server": "units", "tool": "convert_units", "arguments": {"value": 26.2, "from_unit": "mi", "to_unit": "km"}},
    )
    await demo.call("search_tools", {"query": "find notes about groceries", "limit": 3})
    console.print("\n[bold]Mistakes the gateway answers before anything reaches a server:[/bold]")
    await demo.call(
        "execute_tool",
        {"server": "units", "tool": "convert_units", "arguments": {"value": "far", "from_unit": "mi"}},
        "wrong arguments",
    )
    await demo.call("get_tool_details", {"server": "units", "tool": "convert_unit"}, "a typo")
    await demo.call(
        "execute_tool", {"server": "notes", "tool": "delete_note", "arguments": {"id": "1"}}, "disabled by toolRules"
    )

    costs = await _direct_costs()
    # Counted in one era (the eras serialise schemas differently): the meta-tools as `toolscout tokens` counts them.
    meta = tool_tokens(_as_counted(listed.tools))
    table = Table(
        title=f"What the agent carries in every request ({ENCODING} tokens, protocol {COUNTED_ERA})",
        title_justify="left",
    )
    table.add_column("exposed directly")
    table.add_column("tools", justify="right")
    table.add_column("tokens", justify="right")
    for cost in costs:
        table.add_row(cost.server, str(cost.tools), str(cost.tokens))
    tools, direct = sum(c.tools for c in costs), sum(c.tokens for c in costs)
    table.add_row("[bold]all servers[/bold]", str(tools), f"[bold]{direct}[/bold]")
    table.add_row("[bold]toolscout meta-tools[/bold]", str(len(listed.tools)), f"[bold]{meta}[/bold]")
    console.print()
    console.print(table)
    saved = 1 - meta / direct if direct else 0.0
    console.print(
        f"With {tools} enabled tools the meta-tools cost {meta} instead of {direct} tokens "
        f"({saved:.0%} less); the gap grows with every server you add, while the meta-tools stay {meta}. "
        "`toolscout tokens` measures your own servers, in every mode."
    )
