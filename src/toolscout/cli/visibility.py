"""The visibility commands: `status`, and `rules hide-tool | show-tool | hide-server | show-server |
hide-all | show-all`.

A tool is in one of three states: listed (in tools/list, list_tools and the catalog of a mode's
description), hidden (`hidden: true` in toolRules: listed nowhere, yet found by search and smart mode
and callable by name) or disabled (`enabled: false`: not listed, found nor run). `status` counts them
per server, and with `--detailed` names each tool's state and the rule that decided it. The `hide-*`
and `show-*` commands set `hidden` by editing toolRules as `rules hide | show` set `enabled`: the
file's comments kept, a backup written, the new rule first (config/rule_edits.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.markup import escape

from toolscout.cli.common import ConfigOption, JsonOption, Output, connected, load, run
from toolscout.cli.config import RuleServerOption, checked_pattern, edit_rules, rules_app
from toolscout.config.rule_edits import conceal, reveal
from toolscout.errors import ConfigurationError

if TYPE_CHECKING:
    from toolscout.catalog import CatalogTool
    from toolscout.config.rules import RuleSet

ToolArgument = Annotated[str, typer.Argument(help="Tool name, glob (`*delete*`) or /regex/flags.")]
ServerArgument = Annotated[str, typer.Argument(help="Server name (a glob: `git*`).")]


def register(app: typer.Typer) -> None:
    """Add `status` to `app`, and the hide/show commands to `toolscout rules`."""
    app.command("status")(status)
    rules_app.command("hide-tool")(hide_tool)
    rules_app.command("show-tool")(show_tool)
    rules_app.command("hide-server")(hide_server)
    rules_app.command("show-server")(show_server)
    rules_app.command("hide-all")(hide_all)
    rules_app.command("show-all")(show_all)


def state_of(tool: CatalogTool) -> str:
    """`listed`, `hidden` (from listings only) or `disabled`."""
    if not tool.enabled:
        return "disabled"
    return "hidden" if tool.hidden else "listed"


def deciding_rule(rules: RuleSet, tool: CatalogTool) -> str | None:
    """Which rule (`toolRules[i]`, 0-based as the dashboard says it) makes the tool what it is, if one does."""
    if not tool.enabled:
        index = rules.deciding(tool.server, tool.name)
        return f"toolRules[{index}]" if index is not None else ("toolRules (a whitelist)" if rules.whitelist else None)
    if tool.hidden:
        index = rules.hiding(tool.server, tool.name)
        return f"toolRules[{index}]" if index is not None else None
    return None


def status(
    config: ConfigOption = None,
    detailed: Annotated[bool, typer.Option("--detailed", help="Name every tool, its state and the rule.")] = False,
    as_json: JsonOption = False,
) -> None:
    """How many tools each server lists, hides from listings and disables (connects to every server)."""
    output = Output(as_json)
    gateway_config, _ = load(config, output)

    async def body() -> None:
        async with connected(gateway_config, output) as gateway:
            rules = gateway.rules
            servers: list[dict[str, Any]] = []
            for upstream in gateway.upstreams:
                tools = gateway.catalog.tools(upstream.name, include_disabled=True)
                entries = [
                    {"name": t.name, "state": state_of(t), "rule": deciding_rule(rules, t), "tags": list(t.tags)}
                    for t in tools
                ]
                counts = {s: sum(1 for e in entries if e["state"] == s) for s in ("listed", "hidden", "disabled")}
                row: dict[str, Any] = {"server": upstream.name, "status": upstream.status.value, **counts}
                if detailed or as_json:
                    row["tools"] = entries
                servers.append(row)
        totals = {s: sum(int(row[s]) for row in servers) for s in ("listed", "hidden", "disabled")}
        if as_json:
            output.data({"mode": gateway_config.mode, "totals": totals, "servers": servers})
            return
        output.print(
            f"Mode {gateway_config.mode}: {totals['listed']} tools listed, {totals['hidden']} hidden from listings "
            f"(found by search), {totals['disabled']} disabled."
        )
        for row in servers:
            output.print(
                f"[bold]{escape(str(row['server']))}[/bold] ({row['status']}): {row['listed']} listed, "
                f"{row['hidden']} hidden, {row['disabled']} disabled"
            )
            for entry in cast(list[dict[str, Any]], row.get("tools", [])) if detailed else []:
                rule = f"  by {entry['rule']}" if entry["rule"] else ""
                output.print(f"  {entry['state']:<8} {escape(entry['name'])}{escape(rule)}")

    try:
        run(body)
    except ConfigurationError as exc:
        output.fail(exc)


def _conceal(config: Any, output: Output, pattern: str, server: str | None) -> None:
    checked_pattern(output, pattern, server)

    def change(rules: list[dict[str, Any]], servers: list[str]) -> tuple[str, bool]:
        return conceal(rules, pattern, server, quote=escape)

    edit_rules(config, output, change)


def _reveal(config: Any, output: Output, pattern: str, server: str | None) -> None:
    checked_pattern(output, pattern, server)

    def change(rules: list[dict[str, Any]], servers: list[str]) -> tuple[str, bool]:
        return reveal(rules, pattern, server, quote=escape)

    edit_rules(config, output, change)


def hide_tool(
    tool: ToolArgument, config: ConfigOption = None, server: RuleServerOption = None, as_json: JsonOption = False
) -> None:
    """Hide the tools matching TOOL from every listing (search and smart mode still find them)."""
    _conceal(config, Output(as_json), tool, server)


def show_tool(
    tool: ToolArgument, config: ConfigOption = None, server: RuleServerOption = None, as_json: JsonOption = False
) -> None:
    """List the tools matching TOOL again."""
    _reveal(config, Output(as_json), tool, server)


def hide_server(server: ServerArgument, config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Hide every tool of SERVER from listings."""
    _conceal(config, Output(as_json), "*", server)


def show_server(server: ServerArgument, config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """List every tool of SERVER again."""
    _reveal(config, Output(as_json), "*", server)


def hide_all(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Hide every tool from listings (smart mode and search still find them)."""
    _conceal(config, Output(as_json), "*", None)


def show_all(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """List every tool again: every `hidden` in toolRules goes."""
    _reveal(config, Output(as_json), "*", None)
