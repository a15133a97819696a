"""`toolscout auth`: sign in to remote servers protected by OAuth, see where each sign-in stands, sign out.

`login` is the only command that asks a person anything: it prints the authorization URL (and opens
a browser where there is one), waits for the redirect on a loopback port, and keeps the tokens
(upstream/sign_in.py). Every other command, and `toolscout serve`, uses the kept sign-in and
refreshes it by itself; a `serve` that is running picks up a new sign-in within a second.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import anyio
import typer
from rich.markup import escape

from toolscout.cli.common import EXIT_FAILED, ConfigOption, JsonOption, Output, iso_utc, load, run
from toolscout.config.models import HttpServerConfig, SseServerConfig
from toolscout.errors import ConfigurationError, ToolscoutError
from toolscout.suggestions import server_not_found

if TYPE_CHECKING:
    from pathlib import Path

    from toolscout.config import GatewayConfig
    from toolscout.upstream.sign_in import SignInState

DEFAULT_TIMEOUT = 300.0
"""Seconds `auth login` waits for the browser to come back, unless `--timeout` says otherwise."""

auth_app = typer.Typer(
    name="auth",
    help="Sign in to remote servers that use OAuth: login, status, logout.",
    no_args_is_help=True,
)

ServerArgument = Annotated[
    str,
    typer.Argument(
        show_default=False, help="The server, as named in the config (or as a server registered at run time is shown)."
    ),
]
RemoteConfig = HttpServerConfig | SseServerConfig


def _remote(name: str, config: GatewayConfig, registered: dict[str, RemoteConfig]) -> RemoteConfig:
    """The entry of the remote server `name` (configured, else `registered`), or the error saying why
    there is none to sign in to."""
    entry = config.mcp_servers.get(name) or registered.get(name)
    if entry is None:
        # Only a remote server can sign in: the others are no useful guess.
        remotes = sorted([*_remotes(config), *registered])
        raise server_not_found(name, remotes or sorted(config.mcp_servers))
    if not isinstance(entry, HttpServerConfig | SseServerConfig):
        raise ConfigurationError(
            f"{name} is a stdio server: it runs on this machine and gets its credentials from its `env` or `args`, "
            "not from an OAuth sign-in. Only HTTP and SSE servers sign in."
        )
    return entry


def _configured(server: str, config: Path | None, output: Output) -> RemoteConfig:
    """The entry of the remote server `server` in the config the command runs with, or among the servers
    registered at run time, or exit saying why not."""
    gateway_config, _ = load(config, output)
    try:
        if server in gateway_config.mcp_servers:
            return _remote(server, gateway_config, {})
        return _remote(server, gateway_config, _registered(gateway_config, output, needed=True))
    except ToolscoutError as exc:
        output.fail(exc)


def _remotes(config: GatewayConfig) -> dict[str, RemoteConfig]:
    return {
        name: entry
        for name, entry in config.mcp_servers.items()
        if isinstance(entry, HttpServerConfig | SseServerConfig)
    }


def _registered(config: GatewayConfig, output: Output, *, needed: bool) -> dict[str, RemoteConfig]:
    """The servers registered at run time (the registration API, `toolscout registry add`) and not expired,
    by the names the gateway shows them under (`namespace.name`): a gateway using this config's registry
    keeps and reads their sign-ins as it does a configured server's.

    When the registry cannot be read: the error, if the command `needed` it; else a note on stderr, and none.
    """
    import sqlite3

    from toolscout.registry.requests import registry_location

    try:
        return run(_read_registered, config)
    except (ToolscoutError, sqlite3.Error, OSError) as exc:
        said = f"the registry of servers registered at run time ({registry_location(config)}) cannot be read: {exc}"
        if needed:
            raise ConfigurationError(f"No server by that name is configured, and {said}") from None
        output.note(f"[yellow]![/yellow] Servers registered at run time are left out: {escape(said)}.")
        return {}


async def _read_registered(config: GatewayConfig) -> dict[str, RemoteConfig]:
    import time

    from toolscout.config.scopes import qualified_name
    from toolscout.gateway.registrations import registered_config
    from toolscout.registry.requests import open_registry

    if config.registry.backend != "redis" or not config.registry.url:
        from toolscout.registry.sqlite import registry_path

        if not registry_path(config).exists():
            return {}  # nothing was ever registered here: no file is made for reading none
    now = time.time()
    async with open_registry(config) as registry:
        servers = await registry.servers(every=True)
    found = {qualified_name(s.namespace, s.name): registered_config(s) for s in servers if not s.expired(now)}
    return {name: entry for name, entry in found.items() if name not in config.mcp_servers}


def can_open_browser() -> bool:
    """Whether a graphical browser can be opened here (a console browser would take over the terminal)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


@auth_app.command()
def login(
    server: ServerArgument,
    config: ConfigOption = None,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Only print the URL to open; do not open a browser.")
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", min=1, help="Seconds to wait for the browser to come back.")
    ] = DEFAULT_TIMEOUT,
    as_json: JsonOption = False,
) -> None:
    """Sign in to SERVER: open its authorization page, wait for the redirect, keep the tokens."""
    output = Output(as_json)
    entry = _configured(server, config, output)
    from toolscout.upstream.oauth import sends_own_authorization

    if sends_own_authorization(entry.headers):
        output.fail(
            ConfigurationError(
                f"{server} sends its own `Authorization` header (in its `headers`), and toolscout sends that "
                "instead of any sign-in. To sign in with OAuth, remove that header from its entry; to keep "
                "the credential, there is nothing to sign in to."
            )
        )
    opening = not no_browser and can_open_browser()

    async def show_url(url: str) -> None:
        if opening:
            words = f"Opening your browser to sign in to {server}; if it does not open, open this URL:"
        else:
            words = f"Open this URL in a browser to sign in to {server}:"
        line = f"{words}\n\n  {url}\n"
        # With --json, stdout carries only the result: the URL goes to stderr.
        (sys.stderr if as_json else sys.stdout).write(line + "\n")
        (sys.stderr if as_json else sys.stdout).flush()
        if opening:
            import webbrowser

            await anyio.to_thread.run_sync(webbrowser.open, url)

    async def body() -> None:
        from toolscout.upstream.sign_in import revoke_replaced, sign_in

        try:
            done = await sign_in(server, entry, show_url=show_url, within=timeout)
        except ToolscoutError as exc:
            output.fail(exc, EXIT_FAILED)
        until = iso_utc(done.expires_at) if done.expires_at is not None else None
        if not output.json_mode:
            who = f" as {done.subject}" if done.subject else " (the server does not say as whom)"
            when = f" until {until}" if until else ""
            scopes = f"scopes: {' '.join(done.scopes)}" if done.scopes else "no scopes named"
            refresh = "refreshed by itself" if done.refreshable else "no refresh token: sign in again when it expires"
            output.print(
                f"[green]✓[/green] Signed in to {escape(server)}{escape(who)}{when} ({escape(scopes)}; {refresh})."
            )
            output.print(f"  {escape(server)} offers {done.tools} tool{'s' if done.tools != 1 else ''}.")
            if done.replaced is not None:
                output.print("  Revoking the tokens of the sign-in it replaces...")

        def report(replaced: str | None) -> None:
            if output.json_mode:
                output.data(
                    {
                        "success": True,
                        "server": server,
                        "subject": done.subject,
                        "expiresAt": until,
                        "scopes": done.scopes,
                        "refreshable": done.refreshable,
                        "tools": done.tools,
                        "replacedTokens": replaced,
                    }
                )
            elif replaced is not None:
                output.print(f"  {_replaced_words(replaced)}")

        try:
            replaced = await revoke_replaced(done)
        except anyio.get_cancelled_exc_class():
            # Ctrl-C: the new sign-in is kept by now, so this is said as an interrupted revocation, not a failed login.
            report("interrupted")
            raise
        report(replaced)

    run(body)


def _replaced_words(revocation: str) -> str:
    """What became of the replaced sign-in's tokens (`revoke_replaced`'s answer), in a sentence."""
    if revocation == "revoked":
        return "They were revoked at its authorization server."
    if revocation == "not offered":
        return "They stay valid until they expire: its authorization server offers no revocation."
    if revocation == "interrupted":
        return (
            "Interrupted: they stay valid at the provider until they expire (end toolscout's older access "
            "on the provider's site if it must stop now)."
        )
    return f"Revoking them {revocation}; they may stay valid at the provider until they expire."


@auth_app.command()
def status(
    server: Annotated[
        list[str] | None, typer.Argument(show_default=False, help="Only these servers (default: every remote one).")
    ] = None,
    config: ConfigOption = None,
    offline: Annotated[
        bool, typer.Option("--offline", help="Do not ask servers without a kept sign-in whether they want one.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Every remote server's sign-in (those registered at run time too): signed in (as whom, until when,
    scopes, refreshable) or needs login."""
    output = Output(as_json)
    gateway_config, _ = load(config, output)
    named = server or []
    try:
        # The registry is read only when it may have what was asked for.
        unknown = any(name not in gateway_config.mcp_servers for name in named)
        registered = _registered(gateway_config, output, needed=bool(named)) if unknown or not named else {}
        chosen = {name: _remote(name, gateway_config, registered) for name in named}
    except ToolscoutError as exc:
        output.fail(exc)
    chosen = chosen or {**_remotes(gateway_config), **registered}

    async def body() -> list[SignInState]:
        from toolscout.upstream.sign_in import sign_in_states

        return await sign_in_states(chosen, ask=not offline)

    states: list[SignInState] = run(body)
    # As `list` does, and `gh auth status`: a script learns from the exit code that someone must sign in.
    needing = EXIT_FAILED if any(state.state == "needs-login" for state in states) else 0
    if output.json_mode:
        output.data([_state_dict(state) for state in states])
        raise typer.Exit(needing)
    if not states:
        output.print("No remote (HTTP or SSE) servers are configured: nothing signs in.")
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("SERVER", "STATE", "AS", "UNTIL", "SCOPES", "REFRESHABLE"):
        table.add_column(column)
    for state in states:
        marker = {"signed-in": "[green]✓[/green]", "needs-login": "[red]✗[/red]"}.get(state.state, "·")
        table.add_row(
            escape(state.server),
            f"{marker} {state.state.replace('-', ' ')}",
            escape(state.subject or "-"),
            _moment(state.expires_at),
            escape(" ".join(state.scopes) or "-"),
            ("yes" if state.refreshable else "no") if state.state == "signed-in" else "-",
        )
    output.out.print(table)
    for state in states:
        if state.state == "needs-login":
            why = f" ({escape(state.detail)})" if state.detail and "auth login" not in state.detail else ""
            output.print(f"  {escape(state.server)}: run `toolscout auth login {escape(state.server)}`{why}")
        elif state.detail:
            output.print(f"  {escape(state.server)}: {escape(state.detail)}")
    raise typer.Exit(needing)


def _moment(timestamp: float | None) -> str:
    """A moment as a table shows it: to the minute, in UTC."""
    if timestamp is None:
        return "-"
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _state_dict(state: SignInState) -> dict[str, Any]:
    found = state.to_dict()
    found["expiresAt"] = iso_utc(state.expires_at) if state.expires_at is not None else None
    if state.state == "needs-login":
        found["nextStep"] = f"toolscout auth login {state.server}"
    return found


@auth_app.command()
def logout(server: ServerArgument, config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Sign out of SERVER: revoke its tokens where its authorization server allows, and forget them."""
    output = Output(as_json)
    entry = _configured(server, config, output)

    async def body() -> None:
        from toolscout.upstream.sign_in import sign_out

        done = await sign_out(server, entry)
        if output.json_mode:
            output.data(
                {
                    "success": True,
                    "server": server,
                    "forgotten": done.forgotten,
                    "revocation": done.revocation,
                    "earlierUrlsForgotten": done.earlier,
                    "ended": done.ended,
                }
            )
            return
        if done.earlier:
            plural = "s" if done.earlier != 1 else ""
            output.print(
                f"Forgot {done.earlier} sign-in{plural} kept for an earlier URL of {escape(server)} "
                "(not revoked: end them on the provider's site if they must stop now)."
            )
        if not done.forgotten:
            output.print(f"No sign-in was kept for {escape(server)}: nothing to do.")
            return
        if done.revocation == "nothing to revoke":
            said = "it held no tokens any more; what was kept of it is forgotten"
        elif done.revocation == "revoked":
            said = "its tokens were revoked at its authorization server and forgotten here"
        elif done.revocation == "not offered":
            said = (
                "its tokens were forgotten here; its authorization server offers no revocation, so end "
                "toolscout's access on the provider's site if it must stop now"
            )
        else:
            said = f"its tokens were forgotten here; revoking them at its authorization server {done.revocation}"
        if done.ended is not None:
            if done.revocation == "revoked":  # (a server answers so for a token it no longer knows, too)
                said = "its last tokens were revoked as well, in case the server still took them, and forgotten here"
            said = f"its sign-in had already ended because {done.ended}; {said}"
        output.print(f"[green]✓[/green] Signed out of {escape(server)}: {escape(said)}.")

    run(body)
