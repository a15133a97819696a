"""A tool's definition as it is pinned, its hash, and what changed between two of them, readably.

The definition is what the model is shown and what a call must satisfy: name, title,
description, input and output schema, annotations (not `_meta`, which carries hints for
clients). Its hash is SHA-256 over canonical JSON (keys sorted, no spaces, UTF-8), so the same
definition hashes the same whatever order its server wrote it in.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from typing import Any, cast

import mcp_types as types

from toolscout.schemas import canonical_json

PINNED_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
MAX_CHANGES = 50
"""Schema changes shown per tool (a rewritten schema says the rest in one line)."""
MAX_VALUE_CHARS = 200
MAX_DIFF_LINES = 80


def definition_of(tool: types.Tool) -> dict[str, Any]:
    """The parts of `tool` that are pinned, as JSON."""
    dumped = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    return {name: dumped[name] for name in PINNED_FIELDS if name in dumped}


def digest(definition: dict[str, Any]) -> str:
    """The SHA-256 of `definition`'s canonical JSON, in hex."""
    return hashlib.sha256(canonical_json(definition)).hexdigest()


def changes(approved: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """What differs from `approved` in `current`: the description as a unified diff (lines), and
    every other change by JSON path (`$.inputSchema.properties.path.type`) with its values before
    and after (`null`: absent)."""
    found: dict[str, Any] = {}
    before, after = approved.get("description") or "", current.get("description") or ""
    if before != after:
        lines = difflib.unified_diff(before.splitlines(), after.splitlines(), "approved", "current", lineterm="", n=1)
        found["description"] = _capped([*lines][2:], MAX_DIFF_LINES)  # (the two file-name lines say nothing)
    paths: list[dict[str, Any]] = []
    for name in PINNED_FIELDS:
        if name != "description":
            _walk(f"$.{name}", approved.get(name), current.get(name), paths)
    if paths:
        found["changes"] = paths[:MAX_CHANGES]
        if len(paths) > MAX_CHANGES:
            found["more"] = len(paths) - MAX_CHANGES
    return found


def _walk(path: str, before: Any, after: Any, found: list[dict[str, Any]]) -> None:
    if before == after or len(found) > MAX_CHANGES:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        old, new = cast(dict[str, Any], before), cast(dict[str, Any], after)
        for key in sorted({*old, *new}):
            _walk(
                f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]",
                old.get(key),
                new.get(key),
                found,
            )
        return
    if isinstance(before, list) and isinstance(after, list):
        old_items, new_items = cast(list[Any], before), cast(list[Any], after)
        if len(old_items) == len(new_items):
            for i, (a, b) in enumerate(zip(old_items, new_items, strict=True)):
                _walk(f"{path}[{i}]", a, b, found)
            return
    found.append({"path": path, "before": _shown(before), "after": _shown(after)})


def _shown(value: Any) -> Any:
    """`value`, or its JSON cut short when long (a diff is for reading, the pin keeps the whole)."""
    text = json.dumps(value, ensure_ascii=False)
    return value if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _capped(lines: list[str], limit: int) -> list[str]:
    return lines if len(lines) <= limit else [*lines[:limit], f"… {len(lines) - limit} more lines"]


def render(found: dict[str, Any]) -> list[str]:
    """`changes()` as lines for a terminal or a log."""
    lines: list[str] = []
    if "description" in found:
        lines.append("description:")
        lines.extend(f"  {line}" for line in found["description"])
    for change in found.get("changes", ()):
        before, after = change["before"], change["after"]
        if before is None:
            lines.append(f"{change['path']}: added {json.dumps(after, ensure_ascii=False)}")
        elif after is None:
            lines.append(f"{change['path']}: removed (was {json.dumps(before, ensure_ascii=False)})")
        else:
            lines.append(
                f"{change['path']}: {json.dumps(before, ensure_ascii=False)} → {json.dumps(after, ensure_ascii=False)}"
            )
    if found.get("more"):
        lines.append(f"… and {found['more']} more changes")
    return lines


def summary(found: dict[str, Any]) -> str:
    """One line naming what changed (for the log): `description, $.inputSchema.properties.x`."""
    parts = (["description"] if "description" in found else []) + [c["path"] for c in found.get("changes", ())]
    text = ", ".join(parts[:6])
    return text + (f" and {len(parts) - 6 + int(found.get('more', 0))} more" if len(parts) > 6 else "")
