"""Adopting toolscout: `config import`, `init`, `install` and `uninstall` for MCP clients.

`config import` merges the servers of MCP clients' configs into toolscout's config; `init` starts a
config the same way, and `install --replace` reports an import of its own. `install` and
`uninstall` add toolscout to an MCP client's config and take it out again, with a backup.
(`config import` is registered under `config` by cli/config.py.)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, cast

import typer
from rich.markup import escape

from toolscout.cli.common import EXIT_CONFIG, EXIT_INVALID, ConfigOption, JsonOption, Output
from toolscout.client_configs import CLIENTS, ClientFormat, ConfigLocation, client, discover
from toolscout.client_configs.importer import ImportPlan, apply_import, existing_env, plan_import, read_sources
from toolscout.client_configs.installer import Place, install, uninstall
from toolscout.config import find_config
from toolscout.config.locations import user_config_dir
from toolscout.errors import ConfigurationError, ToolscoutError
from toolscout.render.text import counted

FromOption = Annotated[
    list[str] | None,
    typer.Option("--from", help=f"Only these clients (repeatable): {', '.join(CLIENTS)}."),
]
FileOption = Annotated[
    Path | None,
    typer.Option("--file", help="Read this file (needed for custom-yaml and mcp-json; any client's file otherwise)."),
]
ExtractOption = Annotated[
    bool,
    typer.Option(
        "--extract-secrets",
        help="Move literal secrets in env, headers and oauth.clientSecret to a .env next to the config.",
    ),
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


ClientOption = Annotated[
    str, typer.Option("--client", help=f"One of: {', '.join(i for i, f in CLIENTS.items() if f.installable)}.")
]


def register(app: typer.Typer) -> None:
    app.command()(init)
    app.command("install")(install_command)
    app.command("uninstall")(uninstall_command)


def _client(output: Output, client_id: str) -> ClientFormat:
    """The client named on the command line; an unknown name is a usage error (exit 1)."""
    try:
        return client(client_id)
    except ConfigurationError as exc:
        output.fail(exc, EXIT_INVALID)


def init(
    config: ConfigOption = None,
    sources_from: FromOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Overwrite an existing config without asking.")] = False,
    extract: ExtractOption = False,
    as_json: JsonOption = False,
) -> None:
    """Write a starting config from the MCP clients found on this machine."""
    output = Output(as_json)
    target = (config or default_config_path()).expanduser()
    if target.exists() and not yes:
        if not sys.stdin.isatty():
            output.fail(ConfigurationError(f"{target} already exists; pass --yes to replace it."), EXIT_INVALID)
        if not typer.confirm(f"{target} already exists. Replace it (a backup is kept)?", default=False):
            output.note("Nothing changed.")
            raise typer.Exit(0)
    sources = chosen_sources(output, sources_from, None)
    backup: Path | None = None
    if target.exists():
        # Start from scratch, but never lose the old file.
        from toolscout.config.edit import ConfigDocument

        try:
            old = ConfigDocument.load(target)
            old.set(["mcpServers"], {})
            old.delete(["toolRules"])
            backup = old.save()
        except ToolscoutError as exc:
            output.fail(exc)
    plan = import_into(output, target, sources, dry_run=False, extract=extract, create=True)
    if backup is not None:
        output.note(f"The previous config is kept in {escape(str(backup))}.")
    if as_json:
        return
    imported = [d for d in plan.decisions if d.action != "skip"]
    if not imported:
        output.print(
            f"\nNo MCP servers were found in the clients on this machine, so {escape(str(target))} has none yet. "
            'Add yours under "mcpServers" there (see the README, "Configure it by hand"), or import a file '
            "with `toolscout config import --file FILE`; `toolscout serve --demo` tries toolscout with its "
            "bundled demo servers meanwhile."
        )
        return
    # Put toolscout in front of a client the servers came from (the first that toolscout can install into).
    installable = [
        d.server.client for d in imported if d.server.client in CLIENTS and CLIENTS[d.server.client].installable
    ]
    target_client = installable[0] if installable else "claude-desktop"
    output.print(
        '\nNext: `toolscout list` to check the servers, `toolscout search "..."` to find a tool, '
        f"`toolscout install --client {target_client}` to put toolscout in front of them."
    )


def install_command(
    client_id: ClientOption,
    config: ConfigOption = None,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace", help="Also move the client's own servers into toolscout (it then sees only toolscout)."
        ),
    ] = False,
    extract: ExtractOption = False,
    as_json: JsonOption = False,
) -> None:
    """Add toolscout to an MCP client's config (with a backup)."""
    output = Output(as_json)
    fmt = _client(output, client_id)
    try:
        source = find_config(config)
    except ConfigurationError as exc:
        output.fail(ConfigurationError(f"{exc.message}\nRun `toolscout init` first to create toolscout's config."))
    try:
        done = install(fmt, source.path, Place.here(), replace=replace, extract=extract)
    except ToolscoutError as exc:
        output.fail(exc)
    if as_json:
        output.data(
            {
                "client": fmt.id,
                "file": str(done.client_file),
                "backup": str(done.client_backup) if done.client_backup else None,
                "updated": done.replaced_entry,
                "moved": done.moved,
                "remaining": done.remaining,
                "config": str(source.path),
                "import": import_summary(done.plan) if done.plan else None,
            }
        )
        return
    verb = "Updated" if done.replaced_entry else "Added"
    output.print(f"{verb} toolscout in {escape(fmt.display_name)}'s config: {escape(str(done.client_file))}")
    if done.moved:
        output.print(
            f"Moved {counted(len(done.moved), 'server')} into {escape(str(source.path))}: "
            + escape(", ".join(done.moved))
        )
    if done.remaining:
        output.print(
            f"{escape(fmt.display_name)} still starts its own {counted(len(done.remaining), 'server')} "
            "beside toolscout "
            f"({escape(', '.join(done.remaining))}); `toolscout install --client {fmt.id} --replace` "
            "moves them behind toolscout."
        )
    if done.client_backup:
        output.note(f"Backup of the previous version: {escape(str(done.client_backup))}")
    output.print(
        f"Restart {escape(fmt.display_name)} to pick up the change. `toolscout uninstall --client {fmt.id}` undoes it."
    )


def uninstall_command(client_id: ClientOption, as_json: JsonOption = False) -> None:
    """Remove toolscout from an MCP client's config and restore the servers `install --replace` moved."""
    output = Output(as_json)
    fmt = _client(output, client_id)
    try:
        done = uninstall(fmt, Place.here())
    except ToolscoutError as exc:
        output.fail(exc)
    if as_json:
        output.data(
            {
                "client": fmt.id,
                "file": str(done.client_file),
                "removed": done.removed_entry,
                "restored": done.restored,
                "kept": done.kept,
                "backup": str(done.client_backup) if done.client_backup else None,
            }
        )
        return
    if done.removed_entry:
        output.print(f"Removed toolscout from {escape(str(done.client_file))}.")
    if done.restored:
        output.print(f"Restored {counted(len(done.restored), 'server')}: {escape(', '.join(done.restored))}")
    if done.kept:
        output.print(f"Left as they are (the client has them again already): {escape(', '.join(done.kept))}")
    if done.client_backup:
        output.note(f"Backup of the previous version: {escape(str(done.client_backup))}")
