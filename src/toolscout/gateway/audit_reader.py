"""Reading the audit log back (`gateway/audit.py` writes it): the last records across rotated files,
filtered, and what was appended since a position, for `toolscout audit tail` and the dashboard.

Reading never fails on the file's content: a line that is not a JSON object (a file cut short by
hand, say) is skipped and handed to `on_corrupt` (the command line warns on stderr). Work is
bounded: reading backwards stops after `max_lines` lines, reading forwards after `max_bytes`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

Record = dict[str, Any]
OnCorrupt = Callable[[Path, bytes], None]

FILTER_KEYS = ("label", "namespace", "server", "tool", "outcome")
"""The record fields the dashboard filters on (a token's label and namespace, the call's target, its outcome)."""
_BLOCK = 64 * 1024
MAX_LINES = 200_000
"""The most lines one backwards read looks at, matching or not."""
MAX_READ_BYTES = 1024 * 1024
"""The most bytes one forward read (`read_since`) takes."""


def parse(line: bytes, path: Path, on_corrupt: OnCorrupt | None = None) -> Record | None:
    """The record on `line`, or None (told to `on_corrupt`) when it is not a JSON object."""
    try:
        value = json.loads(line)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return cast(Record, value)
    if on_corrupt is not None:
        on_corrupt(path, line)
    return None


def records(lines: list[bytes], path: Path, on_corrupt: OnCorrupt | None = None) -> list[Record]:
    return [r for line in lines if line.strip() and (r := parse(line, path, on_corrupt)) is not None]


def open_log(path: Path) -> IO[bytes] | None:
    try:
        return path.open("rb")
    except FileNotFoundError:
        return None


def lines_backwards(handle: IO[bytes], end: int) -> Iterator[bytes]:
    """The non-empty lines of `handle` before offset `end`, last first, read in blocks from the end."""
    position, rest = end, b""
    while position > 0:
        start = max(0, position - _BLOCK)
        handle.seek(start)
        chunk = handle.read(position - start) + rest
        position = start
        pieces = chunk.split(b"\n")
        rest = pieces[0]  # may continue in the previous block
        yield from (p for p in reversed(pieces[1:]) if p.strip())
    if rest.strip():
        yield rest


def matches(record: Mapping[str, Any], filters: Mapping[str, str]) -> bool:
    """Whether `record` has each of `filters`' fields equal to its value (an empty value matches anything)."""
    return all(not wanted or str(record.get(key) or "") == wanted for key, wanted in filters.items())


def last_records(
    handle: IO[bytes],
    path: Path,
    count: int,
    on_corrupt: OnCorrupt | None = None,
    *,
    filters: Mapping[str, str] | None = None,
    max_lines: int = MAX_LINES,
) -> list[Record]:
    """The last `count` records (matching `filters`), oldest first, reaching into `<path>.1`, `.2`…
    when the current file has fewer; `handle` is left at its end (where a follower goes on)."""
    found: list[Record] = []
    end = os.fstat(handle.fileno()).st_size
    if count == 0:
        handle.seek(end)
        return found
    sources: list[tuple[IO[bytes], Path, int]] = [(handle, path, end)]
    index, seen = 1, 0
    try:
        while sources and len(found) < count and seen < max_lines:
            source, where, size = sources.pop()
            for line in lines_backwards(source, size):
                seen += 1
                record = parse(line, where, on_corrupt)
                if record is not None and (not filters or matches(record, filters)):
                    found.append(record)
                if len(found) == count or seen >= max_lines:
                    break
            if len(found) < count and seen < max_lines:
                older = path.with_name(f"{path.name}.{index}")
                index += 1
                backup = open_log(older)
                if backup is not None:
                    sources.append((backup, older, os.fstat(backup.fileno()).st_size))
    finally:
        for source, _, _ in sources:
            if source is not handle:
                source.close()
    handle.seek(end)
    return found[::-1]


def newer_backups(path: Path, inode: int) -> Iterator[bytes]:
    """The contents of the backups rotated after the one that is now file `inode`, oldest first."""
    backups: list[Path] = []
    index = 1
    while (candidate := path.with_name(f"{path.name}.{index}")).exists():
        try:
            if candidate.stat().st_ino == inode:
                break
        except FileNotFoundError:
            break  # rotated again under us; what is left was read or is lost to a race
        backups.append(candidate)
        index += 1
    else:
        return  # ours is gone (beyond `backups`, or removed): the others are older than it, not newer
    for backup in reversed(backups):
        try:
            yield backup.read_bytes()
        except FileNotFoundError:
            continue


@dataclass(frozen=True, slots=True)
class Position:
    """Where a reader stands in the log: the file (by inode) and the offset after its last whole line.

    As text (`str`, `Position.parse`) it travels to a browser and back, for polling."""

    inode: int
    offset: int

    def __str__(self) -> str:
        return f"{self.inode}-{self.offset}"

    @classmethod
    def parse(cls, text: str) -> Position | None:
        inode, _, offset = text.partition("-")
        if not (inode.isdecimal() and offset.isdecimal()) or len(text) > 60:
            return None
        return cls(int(inode), int(offset))


def end_position(path: Path) -> Position:
    """The position at the end of the log now (nothing yet: inode 0)."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return Position(0, 0)
    return Position(stat.st_ino, stat.st_size)


def read_since(
    path: Path, since: Position, on_corrupt: OnCorrupt | None = None, *, max_bytes: int = MAX_READ_BYTES
) -> tuple[list[Record], Position]:
    """The whole lines appended after `since`, at most `max_bytes` of them, and the position after them.

    When the file was rotated since, the rest of the old file (now a backup) is read first if it is
    still there, then every newer backup, then the current file from its start; a file truncated in
    place is read from its start."""
    handle = open_log(path)
    if handle is None:
        return [], Position(0, 0)
    found: list[Record] = []
    with handle:
        current = os.fstat(handle.fileno())
        offset = since.offset
        if since.inode not in (0, current.st_ino):
            found += _rest_of_rotated(path, since, on_corrupt, max_bytes)
            offset = 0
        elif since.inode == 0 or offset > current.st_size:
            offset = 0
        handle.seek(offset)
        data = handle.read(max_bytes)
        complete, _, _ = data.rpartition(b"\n")
        taken = len(complete) + 1 if complete or data.startswith(b"\n") else 0
        found += records(complete.split(b"\n"), path, on_corrupt)
        return found, Position(current.st_ino, offset + taken)


def _rest_of_rotated(path: Path, since: Position, on_corrupt: OnCorrupt | None, max_bytes: int) -> list[Record]:
    found: list[Record] = []
    index = 1
    while (candidate := path.with_name(f"{path.name}.{index}")).exists():
        try:
            if candidate.stat().st_ino == since.inode:
                with candidate.open("rb") as old:
                    old.seek(since.offset)
                    found += records(old.read(max_bytes).split(b"\n"), candidate, on_corrupt)
                break
        except FileNotFoundError:
            break
        index += 1
    else:
        return found
    for data in newer_backups(path, since.inode):
        found += records(data[:max_bytes].split(b"\n"), path, on_corrupt)
    return found
