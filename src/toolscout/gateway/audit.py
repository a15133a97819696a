"""The audit log: every tool execution through the gateway, one JSON line each, secrets redacted.

A line is `{"time", "client", "server", "tool", "arguments", "durationMs", "outcome", "code"}`
with secrets in the arguments redacted, and `label` and `namespace` when the call was made with a
client key or an issued token (the scope's, `toolscout.config.scopes.current_scope`).

Each line reaches the file with one `os.write` on an `O_APPEND` descriptor: the kernel appends it
whole, so a gateway killed at any moment leaves only complete lines, and two writers never
interleave inside a line. A writer that opens a file whose last line is cut short (the machine
lost power, or a process was killed inside a write) ends that fragment first; it checks under an
exclusive `flock` while every append holds a shared one, so another writer's line, half-copied into
the page cache at that instant, is never mistaken for a fragment. The file is renamed to
`<path>.1` (`.1` to `.2`, and so on) before a line would take it past `max_bytes`, so rotation
never splits a line either.

The log must never cost a tool call: when the file cannot be written, a warning is logged
once and the gateway carries on.

`Redactor`, at the end, takes the secrets out of a call's arguments before they are written down.
A value under a secret-looking name goes as a whole; in every other string, what
`toolscout.masking.mask_text` recognises goes, and matches of the configured patterns. Long
strings are cut (`MAX_STRING_CHARS`), deep nesting stops (`[TOO DEEP]`), NaN and Infinity become
strings: what comes out is always JSON.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import sys
import time
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, cast

import anyio
import mcp_types as types

from toolscout.config.models import DEFAULT_AUDIT_BACKUPS, DEFAULT_AUDIT_MAX_BYTES, AuditConfig
from toolscout.config.rules import compile_pattern
from toolscout.config.scopes import current_scope
from toolscout.errors import ToolscoutError
from toolscout.masking import card_number, mask_text, secret_name, secrets_generation
from toolscout.naming import call_target

logger = logging.getLogger(__name__)

Outcome = Literal["ok", "isError", "error"]

_notes: ContextVar[Mapping[str, Any] | None] = ContextVar("toolscout_audit_notes", default=None)


@contextlib.contextmanager
def noting(**notes: Any) -> Generator[None]:
    """Add `notes` to every record made inside the block (smart mode: `smart={"method", "confidence", ...}`,
    what chose the tool), without every layer between carrying them."""
    token = _notes.set({**(_notes.get() or {}), **notes})
    try:
        yield
    finally:
        _notes.reset(token)


class AuditLog:
    """Appends one line per execution to `path`; open it with `async with` (or `open()`/`close()`)."""

    def __init__(
        self,
        path: Path,
        *,
        max_bytes: int = DEFAULT_AUDIT_MAX_BYTES,
        backups: int = DEFAULT_AUDIT_BACKUPS,
        redactor: Redactor | None = None,
        fsync: bool = False,
    ) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = max(1, backups)
        self.redact: Callable[[Any], Any] = redactor or Redactor()
        self.fsync = fsync
        self._fd: int | None = None
        self._ino = 0
        self._opened = False  # between open() and close(); a record outside opens the file just for itself
        self._broken = False  # warned already: stay quiet until a write succeeds again

    @classmethod
    def from_config(cls, config: AuditConfig) -> AuditLog:
        return cls(
            Path(config.path).expanduser(),
            max_bytes=config.max_bytes,
            backups=config.backups,
            redactor=Redactor(config.redact_keys, config.redact_patterns),
            fsync=config.fsync,
        )

    async def __aenter__(self) -> AuditLog:
        self.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def open(self) -> None:
        """Open (creating the directory and file); a failure is only a warning, as for every write."""
        self._opened = True
        try:
            self._open()
        except OSError as exc:
            self._warn(exc)

    def close(self) -> None:
        self._opened = False
        self._close()

    def _close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    async def record_call(
        self,
        call: Callable[[], Awaitable[types.CallToolResult]],
        *,
        server: str,
        tool: str,
        arguments: Any,
        client: str | None = None,
    ) -> types.CallToolResult:
        """Run `call` (the execution of `server`'s `tool`) and record it, failed or not: outcome `ok`
        or `isError` from its result, else `error` with the code of what it raised (`CANCELLED`, or
        `INTERNAL_ERROR` for anything but a `ToolscoutError`), which goes on to the caller."""
        started, clock = datetime.now(UTC), time.perf_counter()
        outcome: Outcome = "error"
        code: str | None = "INTERNAL_ERROR"
        try:
            result = await call()
            outcome, code = ("isError" if result.is_error else "ok"), None
            return result
        except ToolscoutError as exc:
            code = exc.code
            raise
        except anyio.get_cancelled_exc_class():
            code = "CANCELLED"
            raise
        finally:
            await self.record(
                server=server,
                tool=tool,
                arguments=arguments,
                duration_ms=(time.perf_counter() - clock) * 1000,
                outcome=outcome,
                code=code,
                client=client,
                started=started,
            )

    async def record_refused(self, request: Mapping[str, Any], code: str, *, client: str | None = None) -> None:
        """Record an execution refused with `code` before it reached a server (`request`: the
        meta-tool's own arguments, which did not make a valid call)."""
        target = call_target(request)
        await self.record(
            server=target.get("server", "?"),
            tool=target.get("tool", "?"),
            arguments=request.get("arguments"),
            duration_ms=0.0,
            outcome="error",
            code=code,
            client=client,
        )

    async def record(
        self,
        *,
        server: str,
        tool: str,
        arguments: Any,
        duration_ms: float,
        outcome: Outcome,
        code: str | None = None,
        client: str | None = None,
        started: datetime | None = None,
    ) -> None:
        """Append one execution. Never raises for the file's sake, and never splits a line."""
        try:
            if larger_than(arguments, REDACT_INLINE_CHARS):
                # Redaction runs patterns over every string, long for a large argument: off the loop.
                arguments = await anyio.to_thread.run_sync(self.redact, arguments)
            else:
                arguments = self.redact(arguments)
        except Exception as exc:  # a bug of ours costs the record its arguments, never the call its result
            logger.exception("cannot redact the arguments of %s.%s", server, tool)
            arguments = f"[not recorded: {type(exc).__name__}]"
        entry = {
            "time": (started or datetime.now(UTC))
            .astimezone(UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "client": client,
            "server": server,
            "tool": tool,
            "arguments": arguments,
            "durationMs": round(float(duration_ms), 1),
            "outcome": outcome,
            "code": code,
        }
        for key, note in (_notes.get() or {}).items():
            entry[key] = self.redact(note)  # a smart request's words may hold a secret, as arguments may
        # Who asked, as far as the request's scope says (a client key's or token's label and
        # namespace): never the credential, which no scope holds.
        scope = current_scope()
        if scope.label is not None:
            entry["label"] = scope.label
        if scope.namespace is not None:
            entry["namespace"] = scope.namespace
        await self._append(entry)

    async def record_change(self, *, server: str, tool: str, outcome: str, change: Mapping[str, Any]) -> None:
        """Append a record that `server`'s `tool` changed since it was pinned (gateway/pins.py).

        `outcome` is `quarantined` or `changed` (still usable); `change` holds the hashes, the
        readable diff and any flags."""
        now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        code = "TOOL_QUARANTINED" if outcome == "quarantined" else None
        entry = {"time": now, "event": "tool_changed", "server": server, "tool": tool, "outcome": outcome}
        await self._append({**entry, "code": code, **self.redact(dict(change))})

    async def _append(self, entry: Mapping[str, Any]) -> None:
        # JSON escapes newlines inside strings, so the record is exactly one line (the other line
        # breaks, and C1 and bidi controls, are escaped too: `_UNSAFE_IN_A_LINE`). A lone surrogate
        # (JSON allows "\ud800") cannot be UTF-8: backslashreplace writes it back as that same escape.
        text = _ENCODER.encode(entry)
        if not text.isascii():
            text = text.translate(_UNSAFE_IN_A_LINE)
        line = (text + "\n").encode("utf-8", "backslashreplace")
        synced: int | None = None
        try:
            fd = self._writable(len(line))
            with _flocked(fd, shared=True):
                self._write_all(fd, line)
            # A duplicate for fsync: a rotation by another call meanwhile cannot close it.
            synced = os.dup(fd) if self.fsync else None
        except OSError as exc:
            self._warn(exc)
            return
        finally:
            if not self._opened:
                # A call that outlived the gateway (or a one-off writer): its line still goes in.
                self._close()
        if self._broken:
            logger.warning("audit log %s is writable again", self.path)
            self._broken = False
        if synced is not None:
            # Without fsync a line is in the kernel once os.write returns: it survives the gateway
            # crashing or being killed, only not the machine losing power. fsync covers that too but
            # waits for the disk, so it runs in a thread, shielded so a cancelled call still finishes it.
            with anyio.CancelScope(shield=True):
                try:
                    await anyio.to_thread.run_sync(_fsync_and_close, synced)
                except OSError as exc:
                    self._warn(exc)

    # The file

    def _open(self) -> None:
        self._close()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self.path, flags, 0o600)  # arguments may be private even with secrets redacted
        self._fd, self._ino = fd, os.fstat(fd).st_ino
        if os.fstat(fd).st_size:
            # A write in progress elsewhere can show a line whose first pages are in and the rest not
            # yet: only with every writer out of the file does a missing newline mean a fragment.
            with _flocked(fd, shared=False):
                if not _ends_with_newline(self.path):
                    # Someone cut the file mid-line (or the machine lost power): end that fragment so
                    # our first line stands on its own and stays readable.
                    self._write_all(fd, b"\n")

    def _writable(self, size: int) -> int:
        """The descriptor to append `size` bytes to, after reopening or rotating as needed."""
        # One stat of the name says both whether another process rotated or removed the file (then
        # the name is followed, as `tail -F` does) and, when it did not, how long our file is.
        try:
            named: os.stat_result | None = os.stat(self.path)
        except FileNotFoundError:
            named = None
        if self._fd is None or named is None or named.st_ino != self._ino:
            self._open()
            assert self._fd is not None
            current = os.fstat(self._fd).st_size
        else:
            current = named.st_size
        if current and current + size > self.max_bytes:
            self._rotate()
        assert self._fd is not None
        return self._fd

    def _rotate(self) -> None:
        self._close()
        for index in range(self.backups - 1, 0, -1):
            older = self._backup(index)
            if older.exists():
                os.replace(older, self._backup(index + 1))  # replaces (drops) the oldest
        os.replace(self.path, self._backup(1))
        self._open()

    def _backup(self, index: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{index}")

    def _write_all(self, fd: int, data: bytes) -> None:
        written = os.write(fd, data)
        if written == len(data):
            return
        # A short write happens only when the disk fills up. Finish the line if we can; otherwise
        # end the fragment so the next record does not run into it.
        try:
            while written < len(data):
                written += os.write(fd, data[written:])
        except OSError:
            with contextlib.suppress(OSError):
                os.write(fd, b"\n")
            raise

    def _warn(self, exc: OSError) -> None:
        if not self._broken:
            logger.warning("cannot write the audit log %s (%s); tool calls go on unrecorded", self.path, exc)
            self._broken = True


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)
"""What `json.dumps(..., ensure_ascii=False, separators=(",", ":"), default=str)` builds on every call, built once."""
_UNSAFE_IN_A_LINE = {
    c: f"\\u{c:04x}"
    for c in (
        *range(0x7F, 0xA0),
        0x2028,
        0x2029,
        0x061C,
        0x200E,
        0x200F,
        *range(0x202A, 0x202F),
        *range(0x2066, 0x206A),
    )
}
"""Characters JSON leaves as they are but a reader must not meet raw: DEL and the C1 controls (an 8-bit
CSI recolours a terminal that `tail`s the file), the line breaks other than `\\n` (U+0085, U+2028, U+2029:
`str.splitlines` and JavaScript split on them) and bidirectional controls. Written as JSON escapes,
which decode to the same strings; they can only occur inside strings."""


def _fsync_and_close(fd: int) -> None:
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _flocked(fd: int, *, shared: bool) -> Generator[None]:
    """Hold an advisory lock on the file for one write; Windows has no `flock`, so nothing is held there."""
    if sys.platform == "win32":
        yield
        return
    import fcntl

    # Every holder keeps the lock for a single write or a one-byte check, so waiting is short. A
    # file system without locks (ENOLCK on some network mounts) still gets the line, unlocked.
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        locked = True
    except OSError:
        locked = False
    try:
        yield
    finally:
        if locked:
            fcntl.flock(fd, fcntl.LOCK_UN)


def _ends_with_newline(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"
    except OSError:
        return True  # unreadable (an append-only file, say): trust it


REDACTED = "[REDACTED]"

MAX_STRING_CHARS = 10_000
"""Longer string arguments are cut: a file's content passed to `write_file` does not belong in the
log, and a multi-megabyte line would stall the event loop while it is written."""
_MAX_DEPTH = 64
_MAX_REMEMBERED = 4096
"""Argument names, and short strings found to hold no secret, that a `Redactor` remembers its verdict on."""
_REMEMBERED_CHARS = 256
_CUT_MARGIN = 1024
"""Characters past the cut that are searched for secrets too (a token, a key pair straddling it)."""
_SMALLEST_CARD = 10**12
"""The smallest 13-digit number: a smaller int cannot be a card number."""


class Redactor:
    """Copies arguments with secrets replaced by `[REDACTED]`, at any depth.

    A value under a secret-looking key (`toolscout.masking.secret_name`, or one of `keys`) goes as a
    whole (booleans and null stay: `useAuth: true` reveals nothing); in every other string, what
    `toolscout.masking.mask_text` hides goes (`password=…` and `token: …` pairs, URLs' secrets,
    token shapes, card numbers, configured secrets' values), and matches of `patterns`.

    Tools are called with the same argument names, and often the same short values, again and
    again: the verdict on each name, and which short strings no pattern matches, are remembered
    (a bounded number), so a call's record costs little more than its JSON. A string that held a
    secret is never remembered.
    """

    def __init__(self, keys: Sequence[str] = (), patterns: Sequence[str] = ()) -> None:
        self._key_matchers = [compile_pattern(p) for p in keys]
        self._patterns = [re.compile(p) for p in patterns]
        self._secret_keys: dict[str, bool] = {}
        self._clean: set[str] = set()
        self._generation = secrets_generation()

    def secret(self, key: str) -> bool:
        known = self._secret_keys.get(key)
        if known is None:
            known = secret_name(key) or any(match(key) for match in self._key_matchers)
            if len(self._secret_keys) >= _MAX_REMEMBERED:
                self._secret_keys.clear()
            self._secret_keys[key] = known
        return known

    def __call__(self, value: Any, depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            return "[TOO DEEP]"
        # The common leaves first: a str or a number is never a Mapping (whose check is the slow one).
        if isinstance(value, str):
            if self._generation != secrets_generation():  # secrets to mask by value came since
                self._clean.clear()
                self._generation = secrets_generation()
            if value in self._clean:
                return value
            original = value
            # Only what is kept is searched (a megabyte argument would hold the event loop up), with a
            # margin so that a secret across the cut is still seen whole, and hidden, before the cut.
            value = mask_text(value[: MAX_STRING_CHARS + _CUT_MARGIN], marker=REDACTED, colon=True)
            for pattern in self._patterns:
                value = pattern.sub(REDACTED, value)
            if value == original and len(value) <= _REMEMBERED_CHARS:
                if len(self._clean) >= _MAX_REMEMBERED:
                    self._clean.clear()
                self._clean.add(value)
            if len(original) > MAX_STRING_CHARS:
                value = f"{value[:MAX_STRING_CHARS]}…[+{len(original) - MAX_STRING_CHARS} chars]"
            return value
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)  # NaN and Infinity are not JSON
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and value >= _SMALLEST_CARD
            and card_number(str(value))
        ):
            return REDACTED  # a card number passed as a number
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, Mapping):
            mapping = cast(Mapping[Any, Any], value)
            return {
                str(k): REDACTED
                if self.secret(str(k)) and v is not None and not isinstance(v, bool)
                else self(v, depth + 1)
                for k, v in mapping.items()
            }
        if isinstance(value, list | tuple):
            return [self(v, depth + 1) for v in cast(Sequence[Any], value)]
        return str(value)


REDACT_INLINE_CHARS = 65_536
"""Arguments with fewer characters in their strings than this are redacted on the event loop
(cheap enough at this size); larger ones in a worker thread."""


def larger_than(value: Any, budget: int) -> bool:
    """Whether the strings in `value` (keys too) add up to more than `budget` characters; stops as
    soon as they do, so it costs little on any size."""
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            budget -= len(item)
        elif isinstance(item, Mapping):
            mapping = cast(Mapping[Any, Any], item)
            pending.extend(mapping.keys())
            pending.extend(mapping.values())
        elif isinstance(item, list | tuple):
            pending.extend(cast(Sequence[Any], item))
        else:
            budget -= 8  # a number, a boolean, null: a few characters of JSON each
        if budget < 0:
            return True
    return False
