"""`toolscout rules hide | show | status`: tool visibility, edited in the config file itself.

Edits keep the file's formatting and comments and leave a timestamped backup. A rule added
by `hide` or `show` goes first, so it wins over what was there (the first rule that sets
`enabled` decides).
"""

from __future__ import annotations

from typing import Annotated, Any, cast

import typer
from rich.markup import escape
from rich.text import Text

from toolscout.cli.common import EXIT_INVALID, ConfigOption, JsonOption, Output, connected, load, run
from toolscout.config import ToolRule
from toolscout.config.edit import ConfigDocument
from toolscout.config.loader import check_config_text
from toolscout.config.rules import RuleSet, compile_pattern
from toolscout.errors import ConfigurationError, InvalidArguments, ToolscoutError

rules_app = typer.Typer(name="rules", help="Hide and show tools (edits toolRules in the config).", no_args_is_help=True)

ServerOption = Annotated[str | None, typer.Option("--server", "-s", help="Only tools of this server (a glob).")]
PatternArgument = Annotated[str, typer.Argument(help="Tool name, glob (`*delete*`) or /regex/flags.")]
CATCH_ALL: dict[str, Any] = {"pattern": ["*"], "enabled": True}


def register(app: typer.Typer) -> None:
    app.add_typer(rules_app)


def _same_target(rule: dict[str, Any], pattern: str, server: str | None) -> bool:
    return _about_tools(rule) and rule.get("pattern") in ([pattern], pattern) and rule.get("server") == server


def _about_tools(rule: dict[str, Any]) -> bool:
    """Rules of another `kind` (prompts, resources) have their own whitelist and never touch tools."""
    return rule.get("kind") in (None, "tool")


def _tool_whitelist(rules: list[dict[str, Any]]) -> bool:
    return any(r.get("enabled") is True and _about_tools(r) for r in rules)


def _edit(config: Any, output: Output, change: Any) -> None:
    """Load the config file for editing, apply `change(rules, servers) -> message`, validate, save with a backup."""
    gateway_config, source = load(config, output, lenient=True)
    assert source is not None
    try:
        document = ConfigDocument.load(source.path)
        rules = [dict(cast(dict[str, Any], r)) for r in cast(list[Any], document.get(["toolRules"]) or [])]
        message, changed = change(rules, list(gateway_config.mcp_servers))
        backup = None
        if changed:
            document.set(["toolRules"], rules)
            # Never write a file `serve` would then refuse.
            check_config_text(document.text(), document.format, str(source.path))
            backup = document.save()
    except ToolscoutError as exc:
        output.fail(exc)
    if output.json_mode:
        output.data(
            {
                "changed": changed,
                "message": Text.from_markup(message).plain,
                "path": str(source.path),
                "rules": rules,
                "backup": str(backup) if backup else None,
            }
        )
        return
    output.print(message)
    if backup is not None:
        output.note(f"Backup of the previous version: {escape(str(backup))}")


def _check_pattern(pattern: str, server: str | None) -> None:
    for value in (pattern, server):
        if value is not None:
            try:
                compile_pattern(value)
            except ValueError as exc:
                raise InvalidArguments(f"{value!r} is not a usable pattern: {exc}.") from None


def _visible(pattern: str, server: str | None, rules: list[dict[str, Any]], servers: list[str]) -> bool:
    """Whether, under `rules`, the tools `pattern` names are enabled on every server it concerns.

    A plain tool name can be checked without connecting; for a glob or regex that would need
    every tool name, so it counts as visible only when no rule decides anything at all.
    """
    if any(c in pattern for c in "*?[{/!"):
        return not any("enabled" in r and _about_tools(r) for r in rules)
    ruleset = RuleSet([ToolRule.model_validate(r) for r in rules])
    scope = compile_pattern(server) if server else None
    return all(ruleset.verdict(name, pattern).enabled for name in servers if scope is None or scope(name))


def _checked(output: Output, pattern: str, server: str | None) -> str:
    """Exit 1 for a pattern or server glob that cannot compile; else the " on SERVER" of messages."""
    try:
        _check_pattern(pattern, server)
    except ToolscoutError as exc:
        output.fail(exc, EXIT_INVALID)
    return f" on {server}" if server else ""


@rules_app.command()
def hide(
    pattern: PatternArgument, config: ConfigOption = None, server: ServerOption = None, as_json: JsonOption = False
) -> None:
    """Disable the tools matching PATTERN."""
    output = Output(as_json)
    where = _checked(output, pattern, server)

    def change(rules: list[dict[str, Any]], servers: list[str]) -> tuple[str, bool]:
        if rules and _same_target(rules[0], pattern, server) and rules[0].get("enabled") is False:
            return f"{escape(pattern)}{escape(where)} is already hidden by the first rule; nothing changed.", False
        # A `show` of the same pattern would now contradict this rule; drop it.
        rules[:] = [r for r in rules if not (_same_target(r, pattern, server) and r.get("enabled") is True)]
        rule: dict[str, Any] = {"pattern": [pattern], "enabled": False}
        if server:
            rule["server"] = server
        rules.insert(0, rule)
        return f"Hidden: tools matching {escape(pattern)}{escape(where)} (rule 1 of {len(rules)}).", True

    _edit(config, output, change)


@rules_app.command()
def show(
    pattern: PatternArgument, config: ConfigOption = None, server: ServerOption = None, as_json: JsonOption = False
) -> None:
    """Enable the tools matching PATTERN again."""
    output = Output(as_json)
    where = _checked(output, pattern, server)

    def change(rules: list[dict[str, Any]], servers: list[str]) -> tuple[str, bool]:
        kept: list[dict[str, Any]] = []
        unhidden = False
        for rule in rules:
            if _same_target(rule, pattern, server) and rule.get("enabled") is False:
                unhidden = True
                if rule.get("tags"):  # the tags still apply; only the hiding goes
                    kept.append({k: v for k, v in rule.items() if k != "enabled"})
                continue
            kept.append(rule)
        rules[:] = kept
        if unhidden and _visible(pattern, server, rules, servers):
            return f"Shown: removed the rule hiding {escape(pattern)}{escape(where)}.", True
        whitelist = _tool_whitelist(rules)
        rule: dict[str, Any] = {"pattern": [pattern], "enabled": True}
        if server:
            rule["server"] = server
        rules.insert(0, rule)
        note = ""
        if not whitelist and CATCH_ALL not in rules:
            # An `enabled: true` rule turns the rules into a whitelist; this keeps everything else visible.
            rules.append(dict(CATCH_ALL))
            note = " A final `*` rule keeps every other tool enabled."
        return f"Shown: tools matching {escape(pattern)}{escape(where)} (rule 1 of {len(rules)}).{note}", True

    _edit(config, output, change)


@rules_app.command()
def status(
    config: ConfigOption = None,
    detailed: Annotated[bool, typer.Option("--detailed", help="List every tool with its state and tags.")] = False,
    as_json: JsonOption = False,
) -> None:
    """The rules in order, and what they do to each server's tools."""
    output = Output(as_json)
    gateway_config, _ = load(config, output)
    rules = [r.model_dump(exclude_none=True) for r in gateway_config.tool_rules]

    async def body() -> None:
        async with connected(gateway_config, output) as gateway:
            servers: list[dict[str, Any]] = [
                {
                    "server": up.name,
                    "status": up.status.value,
                    "tools": [
                        {"name": t.name, "enabled": t.enabled, "tags": list(t.tags)}
                        for t in gateway.catalog.tools(up.name, include_disabled=True)
                    ],
                }
                for up in gateway.upstreams
            ]
        if as_json:
            output.data({"rules": rules, "whitelist": _tool_whitelist(rules), "servers": servers})
            return
        mode = (
            "whitelist (tools no rule enables are hidden)"
            if _tool_whitelist(rules)
            else ("everything visible unless hidden")
        )
        output.print(f"Tool rules ({len(rules)}), {mode}:")
        for index, rule in enumerate(rules, 1):
            enabled = rule.get("enabled")
            verdict = "show" if enabled is True else "hide" if enabled is False else "tag"
            scope = f" on {rule['server']}" if rule.get("server") else ""
            if not _about_tools(rule):
                verdict += f" {rule['kind']}s"
            tags = f" tags: {', '.join(rule['tags'])}" if rule.get("tags") else ""
            output.print(f"  {index}. {verdict} {escape(', '.join(rule['pattern']))}{escape(scope)}{escape(tags)}")
        output.print("")
        for entry in servers:
            tools = cast(list[dict[str, Any]], entry["tools"])
            hidden = [t["name"] for t in tools if not t["enabled"]]
            output.print(
                f"[bold]{escape(str(entry['server']))}[/bold] ({entry['status']}): "
                f"{len(tools) - len(hidden)} visible, {len(hidden)} hidden"
                + (f": {escape(', '.join(hidden))}" if hidden and not detailed else "")
            )
            if detailed:
                for t in tools:
                    mark = "[green]✓[/green]" if t["enabled"] else "[red]✗[/red]"
                    tags = f"  [{', '.join(t['tags'])}]" if t["tags"] else ""
                    output.print(f"  {mark} {escape(t['name'])}{escape(tags)}")

    try:
        run(body)
    except ConfigurationError as exc:
        output.fail(exc)
