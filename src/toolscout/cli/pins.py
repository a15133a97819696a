"""The `pins` commands (list, diff, approve, reset, export, verify), about the pinned tool definitions.

Each tool's definition is pinned when a gateway first sees it (`toolPinning`, gateway/pins.py) and
kept beside the persistent catalog. These commands read and change that store; a running `serve`
of the same config takes up an approval or a reset within a second. `verify` alone connects to
the servers: it compares their live definitions with a lockfile written by `export`, for CI.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from toolscout.cli.common import (
    EXIT_FAILED,
    ConfigOption,
    JsonOption,
    Output,
    connected,
    iso_utc,
    load,
    registry_config,
    run,
)
from toolscout.errors import ConfigurationError, InvalidArguments, ServerNotFound, ServerUnavailable, ToolNotFound
from toolscout.naming import split_tool_label, tool_label

if TYPE_CHECKING:
    from toolscout.config.models import GatewayConfig
    from toolscout.gateway.pins import Pin, PinKey, PinStore

pins_app = typer.Typer(
    name="pins",
    help="Tool definitions pinned on first sight: list, review and approve changes, lockfiles for CI.",
    no_args_is_help=True,
)

DEFAULT_LOCKFILE = "toolscout-pins.json"
ServerArgument = Annotated[str, typer.Argument(help="The server whose tools to look at (or one tool, as SERVER/TOOL).")]
ToolArgument = Annotated[str | None, typer.Argument(help="One of its tools (default: all of them).")]
LockfileArgument = Annotated[
    Path, typer.Argument(help=f"The lockfile ('-': standard output/input). Default: ./{DEFAULT_LOCKFILE}.")
]


def _opened(config: Path | None, output: Output) -> tuple[GatewayConfig, PinStore, dict[PinKey, Pin]]:
    """The configuration, its pin store and every pin in it (exit 2 when pins are not kept)."""
    from toolscout.gateway.pins import pin_store

    gateway_config = registry_config(config, output)
    if not gateway_config.catalog_cache.enabled:
        output.fail(
            ConfigurationError(
                "Pins are kept with the persistent catalog, which this config turns off (catalogCache: false): "
                "a running gateway keeps them in memory only. Turn catalogCache on to review and approve them here."
            )
        )
    store = pin_store(gateway_config)
    pins = store.load()
    if pins is None:
        output.fail(ConfigurationError(f"The pin store {store.path} cannot be read (see the warning above)."))
    return gateway_config, store, pins


def _chosen(pins: dict[PinKey, Pin], server: str, tool: str | None) -> list[Pin]:
    """The pins of `server` (and `tool`), or the error naming what is pinned. `server` may name the
    tool too, as `server/tool`."""
    if tool is None and not any(key[0] == server for key in pins):
        server, tool = split_tool_label(server, {key[0] for key in pins}) or (server, None)
    chosen = [pin for key, pin in sorted(pins.items()) if key[0] == server and (tool is None or key[1] == tool)]
    if chosen:
        return chosen
    if not any(key[0] == server for key in pins):
        servers = sorted({key[0] for key in pins})
        raise ServerNotFound(f"No tool of {server!r} is pinned. Pinned servers: {', '.join(servers) or 'none'}.")
    raise ToolNotFound(f"No tool {tool!r} of {server!r} is pinned.", server=server, tool=tool)


@pins_app.command("list")
def list_pins(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Every pinned tool: its hash, when it was pinned, whether it changed since, and why it is flagged."""
    from toolscout.gateway.pins import status_of

    output = Output(as_json)
    gateway_config, store, pins = _opened(config, output)
    rows: list[dict[str, Any]] = []
    for (server, tool), pin in sorted(pins.items()):
        flagged = list(dict.fromkeys([*pin.reasons, *(pin.seen.reasons if pin.seen else ())]))
        row: dict[str, Any] = {"server": server, "tool": tool, "sha256": pin.hash, "pinnedAt": iso_utc(pin.pinned_at)}
        row |= {"status": status_of(pin, gateway_config.tool_pinning), "flagged": flagged}
        if pin.seen is not None:
            row |= {"currentSha256": pin.seen.hash, "changedAt": iso_utc(pin.seen.at)}
        rows.append(row)
    if output.json_mode:
        output.data({"path": str(store.path), "toolPinning": gateway_config.tool_pinning, "pins": rows})
        return
    output.print(f"Tool pins: {escape(str(store.path))} (toolPinning: {gateway_config.tool_pinning})")
    if not rows:
        output.print("  (none yet: each tool is pinned when a gateway first sees it)")
    style = {"ok": "green", "changed": "yellow", "quarantined": "red"}
    for row in rows:
        colour = style[row["status"]]
        line = f"  {escape(row['server'])} {escape(row['tool'])}  {row['sha256'][:12]}  {row['pinnedAt']}"
        output.print(f"{line}  [{colour}]{row['status']}[/{colour}]")
        for reason in row["flagged"]:
            output.print(f"      [yellow]flagged:[/yellow] {escape(reason)}")
    if any(row["status"] != "ok" for row in rows):
        output.note(
            "Review a change with `toolscout pins diff SERVER/TOOL`, then `toolscout pins approve SERVER/TOOL`."
        )


@pins_app.command()
def diff(
    server: ServerArgument, tool: ToolArgument = None, config: ConfigOption = None, as_json: JsonOption = False
) -> None:
    """What changed in a server's tools (or one tool) since they were approved."""
    from toolscout.gateway.pins import changes, diff_lines

    output = Output(as_json)
    _, _, pins = _opened(config, output)
    try:
        chosen = _chosen(pins, server, tool)
    except (ServerNotFound, ToolNotFound) as exc:
        output.fail(exc)
    found = [(pin, changes(pin.definition, pin.seen.definition)) for pin in chosen if pin.seen is not None]
    if output.json_mode:
        output.data(
            {
                "changed": [
                    {"server": p.server, "tool": p.tool, "approvedSha256": p.hash, "currentSha256": p.seen.hash, **c}
                    for p, c in found
                    if p.seen is not None
                ]
            }
        )
        return
    if not found:
        output.print(f"No change: {escape(server)}'s {'tools match' if tool is None else 'tool matches'} the pins.")
    for pin, change in found:
        output.print(
            f"[bold]{escape(tool_label(pin.server, pin.tool))}[/bold] (approved {pin.hash[:12]} → now "
            f"{pin.seen.hash[:12] if pin.seen else '?'})"
        )
        for line in diff_lines(change):
            output.print(f"  {escape(line)}")
        for reason in pin.seen.reasons if pin.seen else ():
            output.print(f"  [yellow]flagged:[/yellow] {escape(reason)}")


@pins_app.command()
def approve(
    server: Annotated[str | None, typer.Argument(help="The server whose changed tools to approve.")] = None,
    tool: ToolArgument = None,
    every: Annotated[bool, typer.Option("--all", help="Approve every changed tool of every server.")] = False,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Accept the changed definitions as they are now (a running gateway lists them again within a second)."""
    from toolscout.gateway.pins import approve_pins

    output = Output(as_json)
    if every == (server is not None):
        output.fail(InvalidArguments("Name a SERVER (and optionally a TOOL), or give --all."))
    _, store, pins = _opened(config, output)
    try:
        chosen = list(pins.values()) if server is None else _chosen(pins, server, tool)
    except (ServerNotFound, ToolNotFound) as exc:
        output.fail(exc)
    approved = approve_pins(store, chosen)
    names = [{"server": p.server, "tool": p.tool, "sha256": p.hash} for p in approved]
    if output.json_mode:
        output.data({"approved": names})
        return
    if not approved:
        output.print("Nothing to approve: no definition differs from its pin.")
    for entry in names:
        output.print(f"Approved {escape(tool_label(entry['server'], entry['tool']))} ({entry['sha256'][:12]}).")


@pins_app.command()
def reset(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Forget every pin: each tool is pinned again, as it is then, when a gateway next sees it."""
    output = Output(as_json)
    _, store, _ = _opened(config, output)
    removed = store.reset()
    if output.json_mode:
        output.data({"removed": removed})
        return
    output.print(f"Forgot {removed} pins; each tool is pinned again when next seen.")


@pins_app.command()
def export(
    file: LockfileArgument = Path(DEFAULT_LOCKFILE), config: ConfigOption = None, as_json: JsonOption = False
) -> None:
    """Write the approved pins as a lockfile (sorted JSON, one entry per tool with its hash) to check in."""
    from toolscout.gateway.pins import lockfile

    output = Output(as_json)
    _, _, pins = _opened(config, output)
    text = json.dumps(lockfile(pins), indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    if str(file) == "-":
        sys.stdout.write(text)
        return
    file.write_text(text, encoding="utf-8")
    if output.json_mode:
        output.data({"path": str(file), "tools": len(pins)})
    else:
        output.print(f"Wrote {len(pins)} pins to {escape(str(file))}.")


@pins_app.command()
def verify(
    file: LockfileArgument = Path(DEFAULT_LOCKFILE), config: ConfigOption = None, as_json: JsonOption = False
) -> None:
    """Connect to the servers and check every tool's definition against a lockfile (exit 3 on any difference)."""
    output = Output(as_json)
    try:
        text = sys.stdin.read() if str(file) == "-" else file.read_text(encoding="utf-8")
        locked = {(str(t["server"]), str(t["tool"])): str(t["sha256"]) for t in json.loads(text)["tools"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        output.fail(
            InvalidArguments(f"Cannot read the lockfile {file}: {exc}. Write one with `toolscout pins export`.")
        )
    gateway_config = load(config, output)[0].model_copy(update={"tool_pinning": "off"})  # nothing pinned by a check
    current = run(_live_hashes, gateway_config, output)
    changed = sorted(key for key in locked.keys() & current.keys() if locked[key] != current[key])
    missing, added = sorted(locked.keys() - current.keys()), sorted(current.keys() - locked.keys())
    report = {
        "ok": not (changed or missing or added),
        "changed": [{"server": s, "tool": t, "locked": locked[(s, t)], "current": current[(s, t)]} for s, t in changed],
        "missing": [{"server": s, "tool": t} for s, t in missing],
        "added": [{"server": s, "tool": t, "current": current[(s, t)]} for s, t in added],
    }
    if output.json_mode:
        output.data(report)
    else:
        for title, entries in (("changed", changed), ("missing", missing), ("added", added)):
            for server, tool in entries:
                output.print(f"{title}: {escape(tool_label(server, tool))}")
        output.print(
            "All tools match the lockfile." if report["ok"] else f"The lockfile {escape(str(file))} does not match."
        )
    if not report["ok"]:
        raise typer.Exit(EXIT_FAILED)


async def _live_hashes(config: GatewayConfig, output: Output) -> dict[PinKey, str]:
    from toolscout.gateway.pins import digest_of, document_of
    from toolscout.upstream import Status

    async with connected(config, output, live=True) as gateway:
        failing = (Status.ERROR, Status.DISCONNECTED, Status.NEEDS_LOGIN)
        failed = [u.name for u in gateway.upstreams if u.status in failing]
        if failed:
            output.fail(ServerUnavailable(f"Cannot verify: {', '.join(failed)} did not connect."), EXIT_FAILED)
        tools = gateway.catalog.tools(include_disabled=True, include_quarantined=True)
        return {(t.server, t.name): digest_of(document_of(t.tool)) for t in tools}
