"""Adopting toolscout: `init`, `install` and `uninstall` for MCP clients (`config import`: cli/import_cmd.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from toolscout.cli.common import EXIT_INVALID, ConfigOption, JsonOption, Output
from toolscout.cli.import_cmd import (
    ExtractOption,
    FromOption,
    chosen_sources,
    default_config_path,
    import_into,
    import_summary,
)
from toolscout.client_configs import CLIENTS, ClientFormat, client
from toolscout.client_configs.installer import Place, install, uninstall
from toolscout.config import find_config
from toolscout.errors import ConfigurationError, ToolscoutError
from toolscout.render.text import counted

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
