"""The `toolscout` command line: the app, and how it starts.

Every command ends with one of a few exit codes: 0 success, 1 invalid arguments, 2 configuration error,
server or tool not found, or nothing found by `search`; 3 the tool failed; 4 the tool is disabled.

A command imports only the modules its group of commands needs (`make_app`), and starts with the
cyclic garbage collector off: start-up makes many objects that live as long as the process (the
MCP SDK's pydantic models of every protocol era, the config and search modules), and collecting
while they are made walks them again and again for nothing (docs/BENCHMARKS.md, cold start). Once
start-up is over they are frozen, moved out of the collector's generations, so that the
collections made while serving walk only what serving allocates.
"""

from __future__ import annotations

import gc
import logging
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # typer and the commands are imported in `main` and `make_app`, not here: `main` first defers
    # garbage collection for the imports that make up most of a start.
    import typer

SERVE_COMMANDS = ("serve", "demo", "version", "--version")
"""The commands of cli/serve.py (and its `--version` option): run with only them registered, the others'
modules are never imported."""
CATALOG_COMMANDS = ("list", "search", "tools", "inspect", "execute", "tokens")
"""The commands of cli/catalog.py: run with only them (and serve's) registered, as for `SERVE_COMMANDS`
(the config editors and the client importers would be a third of a search's start)."""


def make_app(command: str | None = None) -> typer.Typer:
    """Return the command line: every command, or only those of cli/serve.py (and of cli/catalog.py)
    when `command` is one of them, so that starting the gateway, or answering a search, does not
    import what the other commands need (rich, the config editors, the client importers)."""
    import typer

    from toolscout.cli import serve

    app = typer.Typer(
        name="toolscout",
        help="An MCP gateway: agents see five meta-tools instead of every tool of every server.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    serve.register(app)
    if command in SERVE_COMMANDS:
        return app
    from toolscout.cli import catalog

    catalog.register(app)
    if command in CATALOG_COMMANDS:
        return app
    from toolscout.cli import (
        audit,
        auth,
        config,
        dashboard,
        doctor,
        embeddings,
        eval,
        pins,
        registry,
        setup,
        smart,
        visibility,
    )

    doctor.register(app)
    smart.register(app)
    setup.register(app)
    dashboard.register(app)
    eval.register(app)
    visibility.register(app)
    # `--help` lists the commands first, then the groups in the order they are added here.
    app.add_typer(config.config_app)
    app.add_typer(config.rules_app)
    app.add_typer(audit.audit_app)
    app.add_typer(config.cache_app)
    app.add_typer(auth.auth_app)
    app.add_typer(registry.token_app)
    app.add_typer(registry.registry_app)
    app.add_typer(pins.pins_app)
    app.add_typer(embeddings.embeddings_app)
    return app


def __getattr__(name: str) -> Any:
    if name == "app":  # the whole command line, as it used to be built on import
        return make_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_deferred = False


def defer_collection() -> None:
    """Turn the collector off until `startup_over` (a no-op if something else turned it off)."""
    global _deferred
    if gc.isenabled():
        gc.disable()
        _deferred = True


def startup_over() -> None:
    """Freeze what start-up made and turn the collector back on (only if `defer_collection` turned it off)."""
    global _deferred
    if _deferred:
        _deferred = False
        gc.freeze()
        gc.enable()


def main() -> None:
    """Entry point of the `toolscout` script."""
    defer_collection()
    try:
        _main()
    except KeyboardInterrupt:
        # Ctrl-C while the command's modules load, before typer turns it into exit code 130 itself.
        _interrupted()
        sys.exit(130)
    finally:
        startup_over()


def _interrupted() -> None:
    """Say on stdout that the command was stopped by Ctrl-C, for a script that asked for `--json`
    and has no answer yet (the exit code says it to everyone: 130)."""
    from toolscout.cli.common import CLI_STEPS, Output
    from toolscout.errors import Interrupted

    if "--json" in sys.argv[2:] and not Output.answered:
        stopped = Interrupted("Interrupted before it finished (Ctrl-C): what it had not done is not done.")
        Output(json_mode=True).data({"success": False, "error": stopped.to_dict(CLI_STEPS)})


def _main() -> None:
    import typer

    # Typer 0.29 vendors click; its exceptions are only reachable here.
    from typer._click.exceptions import NoArgsIsHelpError, UsageError  # pyright: ignore[reportPrivateUsage]

    from toolscout.cli.common import CLI_STEPS, EXIT_INTERRUPTED, EXIT_INVALID, exit_code_for
    from toolscout.errors import ToolscoutError

    # Commands report problems themselves; the library's warnings (a server that failed to
    # start) would only repeat them. `serve` sets up its own logging.
    logging.basicConfig(stream=sys.stderr, level=logging.CRITICAL)
    from toolscout.masking import install_log_masking

    install_log_masking()
    command = sys.argv[1] if len(sys.argv) > 1 else None
    if command != "serve":
        # The one library error a command must show: a sign-in that could not be written, whose refresh
        # token is spent (the next process would find it refused with no word of why).
        sign_ins = logging.getLogger("toolscout.upstream.oauth")
        shown = logging.StreamHandler(sys.stderr)
        shown.setLevel(logging.ERROR)
        shown.setFormatter(logging.Formatter("! %(message)s"))
        sign_ins.addHandler(shown)
        sign_ins.setLevel(logging.ERROR)
        sign_ins.propagate = False
    app = make_app(command)
    if command != "serve":
        startup_over()  # `serve` ends it once it serves; the others run with the collector on
    try:
        code = app(standalone_mode=False)
    except NoArgsIsHelpError as exc:
        exc.show()
        code = 0
    except UsageError as exc:
        # click exits 2 for usage errors; here 2 means a configuration error, so a usage error is 1.
        exc.show()
        code = EXIT_INVALID
    except typer.Abort:  # the end of input at a prompt
        typer.echo("Aborted.", err=True)
        code = EXIT_INTERRUPTED
    except typer.Exit as exc:
        code = exc.exit_code
    except ToolscoutError as exc:
        # Commands report their own errors; this catches one raised where none expected it
        # (say, while the gateway is built), so that a user's mistake never ends in a traceback.
        typer.echo(f"✗ {exc.explain(CLI_STEPS)}", err=True)
        code = exit_code_for(exc)
    code = code if isinstance(code, int) else 0
    if code == EXIT_INTERRUPTED:
        # Typer ends a command on Ctrl-C by returning 130, saying nothing (no command exits 130 itself).
        # A script reading stdout gets an answer it can parse, as for any other failure.
        _interrupted()
    if command in CATALOG_COMMANDS:
        _exit_at_once(code)
    sys.exit(code)


def _exit_at_once(code: int) -> None:
    """End the process once its output is out, without the interpreter's teardown: a command
    answered from the stored catalog spends a tenth of its time taking its modules apart again.
    What it opened is closed by then (the gateway and its servers are context managers)."""
    import contextlib
    import os

    for stream in (sys.stdout, sys.stderr):
        # (A reader gone, EPIPE, or the stream closed: nothing to flush to.)
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    logging.shutdown()
    # Under the test suite's coverage measurement, its data is written at teardown, which this skips.
    measurement = sys.modules.get("coverage")
    if measurement is not None:
        running = measurement.Coverage.current()
        if running is not None:
            running.stop()
            running.save()
    os._exit(code)
