"""`toolscout tokens`: what the catalog costs an agent, exposed directly and through toolscout's modes."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from toolscout.cli.common import ConfigOption, JsonOption, Output, connected, load, run


def tokens(
    config: ConfigOption = None,
    demo: Annotated[bool, typer.Option(help="Measure the bundled demo servers instead of a config file.")] = False,
    as_json: JsonOption = False,
) -> None:
    """What the catalog costs an agent exposed directly, and toolscout's `tools/list` in every mode."""
    from toolscout.modes.base import SurfaceOptions
    from toolscout.modes.discovery import META_TOOLS
    from toolscout.render.tokens import ENCODING, tool_tokens
    from toolscout.serve.server import COUNTED_ERA, mode_tokens, server_costs

    output = Output(as_json)
    gateway_config, _ = load(config, output, demo=demo)

    async def body() -> None:
        async with connected(gateway_config, output) as gateway:
            per_server = [cost.to_dict() for cost in server_costs(gateway)]
            measured = await mode_tokens(gateway, options=SurfaceOptions.from_config(gateway_config))
            modes = [cost.to_dict() for cost in measured]
        meta = tool_tokens([t.definition() for t in META_TOOLS])
        total = sum(row["tokens"] for row in per_server)
        summary: dict[str, Any] = {
            "encoding": ENCODING,
            "protocolVersion": COUNTED_ERA,
            "servers": per_server,
            "direct": {"tools": sum(row["tools"] for row in per_server), "tokens": total},
            "toolscout": {"tools": len(META_TOOLS), "tokens": meta},
            "saved": round(1 - meta / total, 4) if total else 0.0,
            "modes": modes,
        }
        if as_json:
            output.data(summary)
            return
        table = Table(
            title=f"Tokens an agent carries in every request ({ENCODING}, protocol {COUNTED_ERA})",
            title_justify="left",
        )
        table.add_column("exposed directly")
        table.add_column("status")
        table.add_column("tools", justify="right")
        table.add_column("tokens", justify="right")
        for row in per_server:
            table.add_row(escape(row["server"]), row["status"], str(row["tools"]), str(row["tokens"]))
        table.add_row("[bold]all servers[/bold]", "", str(summary["direct"]["tools"]), f"[bold]{total}[/bold]")
        table.add_row("[bold]toolscout meta-tools[/bold]", "", str(len(META_TOOLS)), f"[bold]{meta}[/bold]")
        output.out.print(table)
        by_mode = Table(
            title=f"toolscout's tools/list in each mode, as a {COUNTED_ERA} client receives it", title_justify="left"
        )
        by_mode.add_column("mode")
        by_mode.add_column("tools", justify="right")
        by_mode.add_column("tokens", justify="right")
        by_mode.add_column("of direct", justify="right")
        for row in modes:
            share = f"{row['tokens'] / total:.0%}" if total else "—"
            mode = row["mode"] + (" (configured)" if row["mode"] == gateway_config.mode else "")
            by_mode.add_row(mode, str(row["tools"]), str(row["tokens"]), share)
        output.out.print(by_mode)
        if total:
            output.print(f"In discovery mode toolscout saves {summary['saved']:.0%} of the tool definition tokens.")

    run(body)
