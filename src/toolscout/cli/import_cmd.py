"""`toolscout config import`: MCP clients' servers merged into toolscout's config.

`init` starts a config the same way, and `install --replace` reports an import of its own:
cli/setup_cmd.py uses what is here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, cast

import typer
from rich.markup import escape

from toolscout.cli.common import EXIT_CONFIG, EXIT_INVALID, ConfigOption, JsonOption, Output
from toolscout.client_configs import CLIENTS, ClientFormat, ConfigLocation, client, discover
from toolscout.client_configs.importer import ImportPlan, apply_import, existing_env, plan_import, read_sources
from toolscout.client_configs.installer import Place
from toolscout.config import find_config
from toolscout.config.locations import user_config_dir
from toolscout.errors import ConfigurationError, ToolscoutError

FromOption = Annotated[
    list[str] | None,
    typer.Option("--from", help=f"Only these clients (repeatable): {', '.join(CLIENTS)}."),
]
FileOption = Annotated[
    Path | None,
    typer.Option("--file", help="Read this file (needed for custom-yaml and mcp-json; any client's file otherwise)."),
]
ExtractOption = Annotated[
    bool, typer.Option("--extract-secrets", help="Move literal secrets in env/headers to a .env next to the config.")
]


def discover_here(only: list[str] | None = None) -> list[tuple[ClientFormat, ConfigLocation]]:
    """The MCP client configurations on this machine (for this user and working directory)."""
    place = Place.here()
    return discover(home=place.home, cwd=place.cwd, platform=place.platform, env=place.env, only=only)


def default_config_path() -> Path:
    """Where a new toolscout config goes when none exists yet: `config.json` in the user config directory."""
    return user_config_dir() / "config.json"


def chosen_sources(
    output: Output, only: list[str] | None, file: Path | None
) -> list[tuple[ClientFormat, ConfigLocation]]:
    """The client files to read: `--file` (in the one `--from` format), or those found here; exit 1 on a bad choice."""
    try:
        if file is not None:
            formats = [client(name) for name in (only or ["mcp-json"])]
            if len(formats) != 1:
                raise ConfigurationError("--file reads one file: name its format with exactly one --from.")
            if not file.is_file():
                raise ConfigurationError(f"{file} does not exist.")
            return [(formats[0], ConfigLocation(file.resolve(), "user"))]
        for name in only or ():
            if client(name).id in ("custom-yaml", "mcp-json"):
                raise ConfigurationError(f"{name} has no standard location; pass the file with --file.")
        return discover_here(only)
    except ConfigurationError as exc:
        output.fail(exc, EXIT_INVALID)


def _report(output: Output, plan: ImportPlan, sources: list[tuple[ClientFormat, ConfigLocation]]) -> None:
    if output.json_mode:
        return
    if sources:
        output.print("Reading " + ", ".join(f"{fmt.id} ({escape(str(loc.path))})" for fmt, loc in sources) + ":")
    else:
        output.print("No MCP client configurations found.")
    symbols = {"add": "[green]+[/green]", "rename": "[yellow]~[/yellow]", "skip": "[dim]=[/dim]"}
    for d in plan.decisions:
        label = f"{escape(d.server.name)} → {escape(d.name)}" if d.action == "rename" else escape(d.server.name)
        why = f": {escape(d.reason)}" if d.reason else ""
        output.print(f"  {symbols[d.action]} {label} ({d.server.client}){why}")
        for note in d.server.notes:
            output.print(f"      [dim]note: {escape(note)}[/dim]")
    for problem in plan.problems:
        output.print(f"  [red]![/red] {escape(problem)}")


def import_summary(plan: ImportPlan) -> dict[str, Any]:
    """An import plan as `--json` reports it: added, renamed, skipped, problems, secrets, notes."""
    return {
        "added": [d.name for d in plan.of("add")],
        "renamed": [{"from": d.server.name, "to": d.name, "client": d.server.client} for d in plan.of("rename")],
        "skipped": [{"name": d.name, "client": d.server.client, "reason": d.reason} for d in plan.of("skip")],
        "problems": plan.problems,
        "secrets": sorted(plan.secrets),
        "notes": {d.name: list(d.server.notes) for d in plan.decisions if d.server.notes},
    }


def import_into(
    output: Output,
    target: Path,
    sources: list[tuple[ClientFormat, ConfigLocation]],
    *,
    dry_run: bool,
    extract: bool,
    create: bool = False,
) -> ImportPlan:
    """Import `sources` into `target` and report it; exit 2 when a source was unreadable."""
    found, problems = read_sources(sources)
    try:
        from toolscout.config.edit import ConfigDocument

        document = ConfigDocument.load_or_new(target)
        servers = cast(dict[str, Any], document.get(["mcpServers"]) or {})
        plan = plan_import(found, servers, extract=extract, known_env=existing_env(target), problems=problems)
        _report(output, plan, sources)
        write = not dry_run and (plan.changes or (create and not target.exists()))
        applied = apply_import(plan, target, document=document) if write else None
    except ToolscoutError as exc:
        output.fail(exc)
    result = {**import_summary(plan), "config": str(target), "dryRun": dry_run}
    if applied is not None:
        result["backup"] = str(applied.backup) if applied.backup else None
        result["envFile"] = str(applied.env_file) if applied.env_file else None
        result["unsetVariables"] = applied.unset
    if output.json_mode:
        output.data(result)
    else:
        verb = "Would add" if dry_run else "Added"
        output.print(
            f"\n{verb} {len(plan.of('add'))}, renamed {len(plan.of('rename'))}, skipped {len(plan.of('skip'))}"
            f" → {escape(str(target))}"
        )
        if applied is not None and applied.backup:
            output.note(f"Backup of the previous version: {escape(str(applied.backup))}")
        if applied is not None and applied.unset:
            output.note(
                f"[yellow]![/yellow] Set {', '.join(applied.unset)} in the environment or in "
                f"{escape(str(target.parent / '.env'))}: the config refers to them."
            )
        if applied is not None and applied.env_file:
            output.note(f"Secrets written to {escape(str(applied.env_file))} ({', '.join(sorted(plan.secrets))}).")
    if plan.problems:
        raise typer.Exit(EXIT_CONFIG)
    return plan


def import_command(
    sources_from: FromOption = None,
    file: FileOption = None,
    config: ConfigOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change; write nothing.")] = False,
    extract: ExtractOption = False,
    as_json: JsonOption = False,
) -> None:
    """Merge servers from MCP clients' configs into toolscout's config (with a backup)."""
    output = Output(as_json)
    sources = chosen_sources(output, sources_from, file)
    try:
        target = config.expanduser() if config is not None else find_config().path
    except ConfigurationError:
        target = default_config_path()
    import_into(output, target, sources, dry_run=dry_run, extract=extract)
