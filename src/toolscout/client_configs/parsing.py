"""Reading client files leniently: JSON with comments, TOML and YAML, errors as text.

Users hand-edit these files, and VS Code's `settings.json` is JSON with comments
and trailing commas by design, so every JSON file is read through a tolerant
reader. Nothing here raises for a bad file: each loader returns either the data
or one problem string `"<path>: line L, column C: <what>"`.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from toolscout.config import formats

__all__ = ["Loaded", "load_json", "load_toml", "load_yaml"]


@dataclass(frozen=True)
class Loaded:
    """The parsed document, or why there is none."""

    data: Any = None
    problem: str | None = None


def _read_text(path: Path) -> str | Loaded:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return Loaded(problem=f"{path}: cannot read: {exc.strerror or exc}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return Loaded(problem=f"{path}: line {line}, column {column}: not UTF-8 text")
    # A byte-order mark is one character: a space keeps every column where it was.
    return " " + text[1:] if text.startswith("\ufeff") else text


def load_json(path: Path) -> Loaded:
    """Parse JSON, tolerating comments and trailing commas; an empty file is `{}`."""
    text = _read_text(path)
    if isinstance(text, Loaded):
        return text
    try:
        root = formats.parse(text)
    except formats.JsoncSyntaxError as exc:
        return Loaded(problem=f"{path}: line {exc.line}, column {exc.column}: {exc.reason}")
    return Loaded(data={} if root is None else root.plain())


_TOML_POSITION = re.compile(r"^(?P<what>.*?)\s*\(at line (?P<line>\d+), column (?P<column>\d+)\)$", re.DOTALL)


def load_toml(path: Path) -> Loaded:
    """Parse TOML with `tomllib`; its error position is moved to the front of the message."""
    text = _read_text(path)
    if isinstance(text, Loaded):
        return text
    try:
        return Loaded(data=tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        # Python 3.11's TOMLDecodeError has no line attributes, only this suffix.
        match = _TOML_POSITION.match(message)
        if match is not None:
            return Loaded(problem=f"{path}: line {match['line']}, column {match['column']}: {match['what']}")
        if message.endswith("(at end of document)"):
            lines = text.split("\n")
            what = message.removesuffix("(at end of document)").rstrip()
            return Loaded(problem=f"{path}: line {len(lines)}, column {len(lines[-1]) + 1}: {what} (at end of file)")
        return Loaded(problem=f"{path}: {message}")


def load_yaml(path: Path) -> Loaded:
    """Parse YAML safely (1.2 booleans); an empty document is `{}`."""
    text = _read_text(path)
    if isinstance(text, Loaded):
        return text
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        data = formats.load_yaml(text)
    except MarkedYAMLError as exc:
        error = cast(Any, exc)  # ruamel's errors carry their marks untyped
        mark = error.problem_mark or error.context_mark
        what = ": ".join(str(part) for part in (error.context, error.problem) if part) or "invalid YAML"
        if mark is None:
            return Loaded(problem=f"{path}: {what}")
        return Loaded(problem=f"{path}: line {mark.line + 1}, column {mark.column + 1}: {what}")
    except YAMLError as exc:
        return Loaded(problem=f"{path}: {exc}")
    return Loaded(data={} if data is None else data)
