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
from typing import Any, cast

import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from toolscout.demo.config import DEMO_SERVERS
from toolscout.tokens import ENCODING, tool_tokens


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


async def _upstream_catalog(client: Client) -> dict[str, list[types.Tool]]:
    """Every enabled upstream tool as the server defined it, fetched through the meta-tools."""
    catalog: dict[str, list[types.Tool]] = {}
    for server in DEMO_SERVERS:
        listing = await client.call_tool("list_tools", {"server": server})
        tools: list[types.Tool] = []
        for entry in cast(dict[str, Any], listing.structured_content)["tools"]:
            details = await client.call_tool("get_tool_details", {"server": server, "tool": entry["name"]})
            d = cast(dict[str, Any], details.structured_content)
            tools.append(
                types.Tool(
                    name=d["tool"],
                    title=d.get("title"),
                    description=d["description"] or None,
                    input_schema=d["inputSchema"],
                    output_schema=d.get("outputSchema"),
                    annotations=types.ToolAnnotations.model_validate(d["annotations"]) if "annotations" in d else None,
                )
            )
        catalog[server] = tools
    return catalog


async def run_demo() -> None:
    console = Console(highlight=False)
    console.print(
        "[bold]toolscout demo[/bold]: an MCP client starts [cyan]toolscout serve --demo[/cyan] over stdio; "
        f"behind it run {len(DEMO_SERVERS)} demo MCP servers ({', '.join(DEMO_SERVERS)}) as child processes.\n"
    )
    # The SDK passes a child only a few variables; toolscout's own settings ($TOOLSCOUT_CACHE_DIR) go along.
    own = {k: v for k, v in os.environ.items() if k.startswith("TOOLSCOUT_")}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscout", "serve", "--demo", "--log-level", "warning"],
        env={**get_default_environment(), **own},
    )
    with tempfile.TemporaryFile("w+") as gateway_log:
        try:
            async with Client(stdio_client(params, errlog=gateway_log)) as client:
                await _walk(_Demo(client, console))
        except Exception:
            gateway_log.seek(0)
            console.print(Panel(Text(gateway_log.read() or "(no output)"), title="gateway log", border_style="red"))
            raise


async def _walk(demo: _Demo) -> None:
    client, console = demo.client, demo.console
    listed = await client.list_tools()
    meta_cost = tool_tokens(listed.tools)
    console.print(
        f"The agent's tools/list: {len(listed.tools)} tools, [bold]{meta_cost} tokens[/bold] "
        f"({', '.join(t.name for t in listed.tools)}).\n"
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

    catalog = await _upstream_catalog(client)
    table = Table(title=f"What the agent carries in every request ({ENCODING} tokens)", title_justify="left")
    table.add_column("exposed directly")
    table.add_column("tools", justify="right")
    table.add_column("tokens", justify="right")
    for server, tools in catalog.items():
        table.add_row(server, str(len(tools)), str(tool_tokens(tools)))
    all_tools = [t for tools in catalog.values() for t in tools]
    direct = tool_tokens(all_tools)
    table.add_row("[bold]all servers[/bold]", str(len(all_tools)), f"[bold]{direct}[/bold]")
    table.add_row("[bold]toolscout meta-tools[/bold]", str(len(listed.tools)), f"[bold]{meta_cost}[/bold]")
    console.print()
    console.print(table)
    saved = 1 - meta_cost / direct if direct else 0.0
    console.print(
        f"With {len(all_tools)} enabled tools the meta-tools cost {meta_cost} instead of {direct} tokens "
        f"({saved:.0%} less); the gap grows with every server you add, while the meta-tools stay {meta_cost}."
    )
