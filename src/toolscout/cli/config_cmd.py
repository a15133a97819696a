"""`toolscout config show | validate | sources | path` (and `config import`, from cli/import_cmd.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, cast

import typer
from rich.markup import escape

from toolscout.cli.common import ConfigOption, JsonOption, Output, load
from toolscout.cli.import_cmd import discover_here, import_command
from toolscout.config import (
    CONFIG_ENV_VAR,
    GatewayConfig,
    HttpServerConfig,
    SseServerConfig,
    StdioServerConfig,
    find_config,
)
from toolscout.config.loader import environment_for, read_raw
from toolscout.config.locations import candidate_paths
from toolscout.config.secrets import mask_auth, mask_server
from toolscout.errors import ConfigurationError
from toolscout.render.text import counted

_KINDS = {StdioServerConfig: "stdio", HttpServerConfig: "http", SseServerConfig: "sse"}

config_app = typer.Typer(name="config", help="Show, check and locate the configuration.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(config_app)
    config_app.command("import")(import_command)  # after show, validate, sources and path, as --help lists them


def _rule_text(rule: dict[str, Any]) -> str:
    patterns = ", ".join(rule["pattern"])
    scope = f" (server {rule['server']})" if rule.get("server") else ""
    enabled = rule.get("enabled")
    verdict = "enabled" if enabled is True else "disabled" if enabled is False else "no change"
    tags = f", tags: [{', '.join(rule['tags'])}]" if rule.get("tags") else ""
    return f"{patterns}{scope} → {verdict}{tags}"


def _effective(config: GatewayConfig, raw: dict[str, Any]) -> dict[str, Any]:
    """The validated configuration with defaults, values as written where they were references, secrets masked."""
    dumped = config.model_dump(by_alias=True, exclude_none=True, exclude={"schema_url"})
    raw_servers = cast(dict[str, Any], raw.get("mcpServers") or {})
    servers: dict[str, Any] = {}
    for name, entry in cast(dict[str, dict[str, Any]], dumped["mcpServers"]).items():
        entry.pop("kind", None)
        written = cast(dict[str, Any], raw_servers.get(name) or {})
        for key in ("env", "headers"):
            if key in entry and isinstance(written.get(key), dict):
                entry[key] = {**entry[key], **{k: v for k, v in written[key].items() if "${" in str(v)}}
        # A reference says where a secret lives; its value is not printed (masked, should it show).
        for key in ("command", "url"):
            if isinstance(written.get(key), str) and "${" in written[key]:
                entry[key] = written[key]
        args = written.get("args")
        if isinstance(args, list) and len(cast(list[Any], args)) == len(entry.get("args", [])):
            pairs = zip(cast(list[Any], args), entry["args"], strict=True)
            entry["args"] = [w if isinstance(w, str) and "${" in w else a for w, a in pairs]
        servers[name] = mask_server(entry)
    dumped["mcpServers"] = servers
    dumped["auth"] = mask_auth(dumped["auth"], cast(dict[str, Any], raw.get("auth") or {}))
    return dumped


@config_app.command()
def show(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Print the effective configuration, with secrets masked."""
    output = Output(as_json)
    gateway_config, source = load(config, output, lenient=True)
    assert source is not None
    effective = _effective(gateway_config, read_raw(source.path))
    if as_json:
        output.data({"path": str(source.path), "config": effective})
        return
    output.print("MCP Discovery Configuration:\n")
    output.print(f"File: {escape(str(source.path))} (from {escape(source.origin)})")
    output.print(f"Mode: {gateway_config.mode}\n")
    servers = cast(dict[str, dict[str, Any]], effective["mcpServers"])
    output.print(f"Servers ({len(servers)}):")
    for name, entry in servers.items():
        mark = "[dim]-[/dim]" if entry.get("disabled") else "[green]✓[/green]"
        where = " ".join([entry["command"], *entry.get("args", [])]) if "command" in entry else entry["url"]
        kind = _KINDS[type(gateway_config.mcp_servers[name])]
        output.print(
            f"  {mark} [bold]{escape(name)}[/bold] ({kind}): {escape(where)}"
            + (" — disabled" if entry.get("disabled") else "")
        )
        for key in ("env", "headers"):
            for k, v in cast(dict[str, str], entry.get(key, {})).items():
                output.print(f"      {key} {escape(k)}={escape(v)}")
    rules = cast(list[dict[str, Any]], effective["toolRules"])
    output.print(f"\nTool Rules ({len(rules)}):")
    for index, rule in enumerate(rules, 1):
        output.print(f"  {index}. {escape(_rule_text(rule))}")


def _warnings(config: GatewayConfig, path: Path) -> list[str]:
    """Things that are valid but probably not what the user meant."""
    found: list[str] = []
    names = set(config.mcp_servers)
    for index, rule in enumerate(config.tool_rules, 1):
        if rule.server and not any(c in rule.server for c in "*?[{") and rule.server not in names:
            found.append(f"toolRules[{index - 1}]: no server named {rule.server!r}, so this rule never applies")
    env = environment_for(path)
    for name, server in config.mcp_servers.items():
        if isinstance(server, StdioServerConfig) and not server.disabled:
            search_path = server.env.get("PATH", env.get("PATH", os.defpath))
            if shutil.which(server.command, path=search_path) is None:
                found.append(
                    f"mcpServers.{name}.command: {server.command!r} is not on PATH; the server will fail to start"
                )
    return found


@config_app.command()
def validate(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Check the configuration (exit 2 with precise messages when it is invalid)."""
    output = Output(as_json)
    gateway_config, source = load(config, output)
    assert source is not None
    warnings = _warnings(gateway_config, source.path)
    disabled = sum(1 for s in gateway_config.mcp_servers.values() if s.disabled)
    if as_json:
        output.data(
            {
                "valid": True,
                "path": str(source.path),
                "servers": len(gateway_config.mcp_servers),
                "disabled": disabled,
                "toolRules": len(gateway_config.tool_rules),
                "warnings": warnings,
            }
        )
        return
    output.print(
        f"[green]✓[/green] {escape(str(source.path))} is valid: {counted(len(gateway_config.mcp_servers), 'server')}"
        + (f" ({disabled} disabled)" if disabled else "")
        + f", {counted(len(gateway_config.tool_rules), 'tool rule')}."
    )
    for warning in warnings:
        output.print(f"[yellow]![/yellow] {escape(warning)}")


@config_app.command()
def sources(as_json: JsonOption = False) -> None:
    """Where configuration is looked for, which file is used, and which MCP clients' configs exist to import."""
    output = Output(as_json)
    lookup: list[dict[str, Any]] = []
    if os.environ.get(CONFIG_ENV_VAR):
        env_path = Path(os.environ[CONFIG_ENV_VAR]).expanduser()
        lookup.append({"path": str(env_path), "origin": f"${CONFIG_ENV_VAR}", "exists": env_path.is_file()})
    lookup += [{"path": str(c.path), "origin": c.origin, "exists": c.path.is_file()} for c in candidate_paths()]
    try:
        used: str | None = str(find_config().path)
    except ConfigurationError:
        used = None
    clients = [
        {"client": fmt.id, "name": fmt.display_name, "path": str(loc.path), "scope": loc.scope}
        for fmt, loc in discover_here()
    ]
    if as_json:
        output.data({"used": used, "lookup": lookup, "clients": clients})
        return
    output.print("Configuration files (first found is used):")
    for entry in lookup:
        mark = "[green]✓[/green]" if entry["exists"] else "[dim]✗[/dim]"
        used_mark = "  [bold]← in use[/bold]" if entry["path"] == used else ""
        state = "" if entry["exists"] else " — not found"
        output.print(f"  {mark} {escape(entry['path'])} ({escape(entry['origin'])}){state}{used_mark}")
    output.print(f"\nMCP client configurations ({len(clients)} found, importable with `toolscout config import`):")
    for entry in clients:
        output.print(f"  [green]✓[/green] {escape(entry['client'])} ({entry['scope']}): {escape(entry['path'])}")


@config_app.command()
def path(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Print the path of the configuration file in use (exit 2 when there is none yet)."""
    output = Output(as_json)
    try:
        source = find_config(config)
    except ConfigurationError as exc:
        output.fail(ConfigurationError(f"{exc.message}\nRun `toolscout init` to create one."))
    if as_json:
        output.data({"path": str(source.path), "origin": source.origin})
    else:
        typer.echo(str(source.path))
