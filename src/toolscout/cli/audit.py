"""The `audit tail` command, which shows the last executions in the audit log and, with --follow, the new ones.

Reading never fails on the file's content: a line that is not a JSON object (a file cut short
by hand, say) is skipped with a warning on stderr.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import IO, Annotated

import typer
from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.table import Table

from toolscout.cli.common import ConfigOption, Output
from toolscout.config import CONFIG_ENV_VAR
from toolscout.config.loader import check_config_file
from toolscout.config.locations import find_config
from toolscout.config.models import AuditConfig
from toolscout.errors import ConfigurationError
from toolscout.gateway.audit_reader import OnCorrupt, Record, last_records, newer_backups, open_log, records
from toolscout.naming import tool_label

audit_app = typer.Typer(name="audit", help="Read the audit log of tool executions.", no_args_is_help=True)

POLL_SECONDS = 0.2
"""How often --follow looks for new lines (as `tail -f` does: a poll works on every platform)."""
_OUTCOME_STYLE = {"ok": "green", "isError": "yellow", "error": "red"}


def _settings(config: Path | None, output: Output) -> AuditConfig:
    """The `audit` section of the configuration; without any configuration file, the defaults."""
    try:
        source = find_config(config)
    except ConfigurationError as exc:
        if config is None and not os.environ.get(CONFIG_ENV_VAR):
            return AuditConfig()  # nothing configured anywhere: the gateway would log to the default path
        output.fail(exc)
    try:
        # Only the path is needed: `${VAR}`s the servers use need not be set here.
        return check_config_file(source.path).audit
    except ConfigurationError as exc:
        output.fail(exc)


@audit_app.command()
def tail(
    lines: Annotated[int, typer.Option("--lines", "-n", min=0, help="How many of the last executions to show.")] = 20,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new executions (across rotations) until Ctrl-C.")
    ] = False,
    config: ConfigOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print each record as one JSON line on stdout.")] = False,
) -> None:
    """Show the last executions recorded in the audit log."""
    output = Output(as_json)
    settings = _settings(config, output)
    path = Path(settings.path).expanduser()
    if not settings.enabled:
        output.note(f"[yellow]![/yellow] The audit log is disabled (audit.enabled: false); reading {escape(str(path))}")
    printer = _Printer(output)
    handle = open_log(path)
    try:
        if handle is None:
            output.note(f"No executions recorded yet at {escape(str(path))}")
        else:
            printer.show(last_records(handle, path, lines, _warner(output)))
        if follow:
            handle, opened = None, handle  # _follow closes it
            _follow(path, opened, printer, output)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how --follow ends
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep Python from complaining at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    finally:
        if handle is not None:
            handle.close()


# Reading (gateway/audit_reader.py): a corrupt line is skipped with a warning on stderr


def _warner(output: Output) -> OnCorrupt:
    def warn(path: Path, line: bytes) -> None:
        shown = line[:60].decode("utf-8", "replace")
        output.note(f"[yellow]![/yellow] Skipped a corrupt line in {escape(str(path))}: {escape(repr(shown))}")

    return warn


def _records(lines: list[bytes], path: Path, output: Output) -> list[Record]:
    return records(lines, path, _warner(output))


def _follow(path: Path, handle: IO[bytes] | None, printer: _Printer, output: Output) -> None:
    """Print lines as they are appended; when the file is rotated, finish it and go on with the new one."""
    pending = b""  # a line being written: printed once its newline arrives
    try:
        while True:
            if handle is None:
                handle = open_log(path)
                if handle is None:
                    time.sleep(POLL_SECONDS)
                    continue
            data = handle.read()
            if data:
                *complete, pending = (pending + data).split(b"\n")
                printer.show(_records(complete, path, output))
                continue
            try:
                current = os.stat(path)
            except FileNotFoundError:
                current = None
            if current is None or current.st_ino != os.fstat(handle.fileno()).st_ino:
                # Rotated (or removed). Lines may have reached the old file between the read above and
                # the rename: read it to its end. If it rotated more than once since, the files in
                # between (newer backups than ours) are read whole before going on with the new one.
                printer.show(_records((pending + handle.read()).split(b"\n"), path, output))
                pending = b""
                for between in newer_backups(path, os.fstat(handle.fileno()).st_ino):
                    printer.show(_records(between.split(b"\n"), path, output))
                handle.close()
                handle = None
                continue
            if current.st_size < handle.tell():
                handle.seek(0)  # truncated in place
                pending = b""
                continue
            time.sleep(POLL_SECONDS)
    finally:
        if handle is not None:
            handle.close()


# Printing


class _Printer:
    """Records as JSON lines, or as rows of a table whose columns stay aligned across --follow."""

    def __init__(self, output: Output) -> None:
        self.output = output
        self._header = True
        # Widths are fixed once, so the rows --follow prints later line up under the first table.
        # A narrower terminal gets lines longer than itself (it wraps them) rather than lost columns.
        width = max(output.out.width, _MIN_WIDTH)
        self._console = Console(width=width, highlight=False, soft_wrap=True)
        flexible = width - sum(_FIXED.values()) - 2 * len(_FIXED)
        self._widths = {**_FIXED, "tool": flexible * 2 // 5, "arguments": flexible - flexible * 2 // 5}

    def show(self, records: list[Record]) -> None:
        if not records:
            return
        if self.output.json_mode:
            for record in records:
                sys.stdout.write(_printable(json.dumps(record, ensure_ascii=False, separators=(",", ":"))) + "\n")
        else:
            table = Table(box=None, show_header=self._header, pad_edge=False, header_style="bold")
            self._header = False
            for name in _COLUMNS:
                justify: JustifyMethod = "right" if name == "ms" else "left"
                table.add_column(name, width=self._widths[name], no_wrap=True, overflow="ellipsis", justify=justify)
            for record in records:
                table.add_row(*(_printable(cell) for cell in _cells(record)))
            self._console.print(table)
        sys.stdout.flush()


_COLUMNS = ("time (UTC)", "client", "tool", "outcome", "ms", "arguments")
_FIXED = {"time (UTC)": 23, "client": 16, "outcome": 20, "ms": 7}
_MIN_WIDTH = 120


def _cells(record: Record) -> list[str]:
    when = str(record.get("time") or "?").replace("T", " ").removesuffix("Z")
    outcome = str(record.get("outcome") or "?")
    style = _OUTCOME_STYLE.get(outcome, "default")
    # A failure shows its code (TIMEOUT, VALIDATION_ERROR…), which says more than "error".
    shown = str(record.get("code") or outcome) if outcome == "error" else outcome
    duration = record.get("durationMs")
    arguments = json.dumps(record.get("arguments"), ensure_ascii=False, separators=(",", ":"))
    # Every text here may come from a client (its name, the server and tool it asked for) or be
    # written into the file by anyone: shown with its control characters escaped, so a name cannot
    # move the cursor, recolour or clear the terminal, or forge a row of its own with a newline.
    return [
        escape(_visible(when)),
        escape(_visible(str(record.get("client") or "-"))),
        escape(_visible(tool_label(str(record.get("server", "?")), str(record.get("tool", "?"))))),
        f"[{style}]{escape(_visible(shown))}[/{style}]",
        f"{duration:.0f}" if isinstance(duration, int | float) else "?",
        escape(_visible(arguments)),
    ]


_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Bidirectional controls: they reorder what follows on the line (a name that shows as another)."""


def _visible(text: str) -> str:
    """Return `text` with control characters (C0, DEL, C1 such as the 8-bit CSI), line separators and
    bidirectional controls written as escapes (`\\x1b`, `\\n`, `\\u202e`): what a terminal shows, not does."""
    if text.isprintable() and not _BIDI.intersection(text):
        return text
    return "".join(_escaped(c) if not c.isprintable() or c in _BIDI else c for c in text)


def _escaped(char: str) -> str:
    if char == " ":
        return char
    shown = repr(char)[1:-1]  # '\n', '\x1b', '\u2028'
    return shown if shown.startswith("\\") else f"\\u{ord(char):04x}"


def _printable(text: str) -> str:
    """Return `text` without lone surrogates (JSON may carry "\\ud800"; no terminal can show it), as that escape."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
