"""Turning one client's server entry into toolscout's entry shape, and back.

The pieces here are shared by every format: strict-but-forgiving coercion of the
usual keys (`command`, `args`, `env`, `cwd`, `url`, `headers`) and the transport
names clients use. Anything the user should know about a conversion is collected
as a note on the entry's `Draft`. The variable syntaxes clients interpolate are
rewritten by `toolscout.client_configs.variables`, tool filters by `toolscout.client_configs.tool_filters`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from toolscout.client_configs.base import DiscoveredServer, ReadResult

__all__ = [
    "Draft",
    "EntryError",
    "as_dict",
    "generic_client_entry",
    "number",
    "read_entries",
    "standard_entry",
    "str_list",
    "str_map",
]

Entry = dict[str, Any]


class EntryError(Exception):
    """One server entry cannot be used; the reader reports it as a problem and goes on."""


@dataclass
class Draft:
    """Notes and tool rules collected while one entry is converted."""

    name: str
    notes: list[str] = field(default_factory=list[str])
    tool_rules: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def as_dict(value: Any, what: str) -> dict[str, Any]:
    """The value as a JSON object, or `EntryError` naming `what`."""
    if not isinstance(value, dict):
        raise EntryError(f"{what} must be an object, got {_kind(value)}")
    return cast(dict[str, Any], value)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__


def _scalar_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return str(value)
    return None


def str_list(value: Any, key: str, draft: Draft) -> list[str]:
    """A list of strings; numbers and booleans become strings (with a note), a lone string a list."""
    if value is None:
        return []
    if isinstance(value, str):
        draft.note(f"`{key}` was a single string; it became the only argument")
        return [value]
    if not isinstance(value, list):
        raise EntryError(f"`{key}` must be a list of strings, got {_kind(value)}")
    out: list[str] = []
    for item in cast(list[Any], value):
        text = _scalar_text(item)
        if text is None:
            raise EntryError(f"`{key}` must be a list of strings, found {_kind(item)}")
        if not isinstance(item, str):
            draft.note(f"non-string items of `{key}` were converted to strings")
        out.append(text)
    return out


def str_map(value: Any, key: str, draft: Draft) -> dict[str, str]:
    """A string-to-string object; scalars become strings (with a note), nulls are dropped (with a note)."""
    if value is None:
        return {}
    mapping = as_dict(value, f"`{key}`")
    out: dict[str, str] = {}
    for name, item in mapping.items():
        if item is None:
            draft.note(f"`{key}.{name}` was null (the client unsets it); it was dropped")
            continue
        text = _scalar_text(item)
        if text is None:
            raise EntryError(f"`{key}.{name}` must be a string, got {_kind(item)}")
        if not isinstance(item, str):
            draft.note(f"non-string values of `{key}` were converted to strings")
        out[str(name)] = text
    return out


def number(value: Any, key: str) -> float:
    """A positive number (numeric strings accepted)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise EntryError(f"`{key}` must be a number, got {_kind(value)}")
    try:
        result = float(value)
    except ValueError:
        raise EntryError(f"`{key}` must be a number, got {value!r}") from None
    if result <= 0:
        raise EntryError(f"`{key}` must be greater than 0, got {value!r}")
    return result


_HTTP_NAMES = {"http", "streamable-http", "streamablehttp", "streamable_http", "streamable"}


def declared_transport(raw: Mapping[str, Any], keys: Iterable[str] = ("type", "transport")) -> str | None:
    """`stdio`, `http` or `sse` from the first of `keys` that is set, else None."""
    for key in keys:
        value = raw.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise EntryError(f"`{key}` must be a string, got {_kind(value)}")
        name = value.strip().lower()
        if name in ("stdio", "sse"):
            return name
        if name in _HTTP_NAMES:
            return "http"
        raise EntryError(f"unknown `{key}` {value!r}; expected stdio, http or sse")
    return None


def standard_entry(
    raw: Mapping[str, Any], draft: Draft, *, url_keys: tuple[str, ...] = ("url",)
) -> tuple[Entry, set[str]]:
    """The common keys of an `mcpServers`-style entry, and the set of keys it consumed.

    Handles `type`/`transport`, `command`/`args`/`env`/`cwd`, the URL (first of
    `url_keys`), `headers`, `disabled`/`enabled`, `description` and `timeout`
    (seconds). The caller deals with the keys it did not consume.
    """
    consumed = {"type", "transport", "command", "args", "env", "cwd", "headers", "disabled", "enabled", *url_keys}
    kind = declared_transport(raw)
    url_key = next((key for key in url_keys if raw.get(key) is not None), None)
    has_command = raw.get("command") is not None
    if kind is None:
        if has_command:
            kind = "stdio"
        elif url_key is not None:
            kind = "http"
        else:
            raise EntryError(f"needs either `command` (a stdio server) or {_or(url_keys)} (a remote server)")
    entry: Entry
    if kind == "stdio":
        if not has_command:
            raise EntryError("a stdio server needs `command`")
        entry = stdio_fields(raw, draft)
        if url_key is not None:
            draft.note(f"`{url_key}` was ignored: the entry is a stdio server")
    else:
        if url_key is None:
            raise EntryError(f"{'an SSE' if kind == 'sse' else 'an HTTP'} server needs {_or(url_keys)}")
        entry = remote_fields(raw[url_key], raw.get("headers"), draft, url_key)
        if kind == "sse":
            entry["transport"] = "sse"
        if has_command:
            draft.note("`command` was ignored: the entry is a remote server")
    if raw.get("disabled") is True or raw.get("enabled") is False:
        entry["disabled"] = True
    for key in ("description", "timeout"):
        if key in raw:
            consumed.add(key)
            if key == "description" and isinstance(raw[key], str) and raw[key]:
                entry["description"] = raw[key]
            elif key == "timeout" and raw[key] is not None:
                entry["timeout"] = number(raw[key], key)
    return entry, consumed


def _or(keys: Iterable[str]) -> str:
    return " or ".join(f"`{key}`" for key in keys)


def stdio_fields(raw: Mapping[str, Any], draft: Draft) -> Entry:
    """`command`, `args`, `env`, `cwd`, leaving out empty ones."""
    command = raw.get("command")
    if not isinstance(command, str) or not command.strip():
        raise EntryError("`command` must be a non-empty string")
    entry: Entry = {"command": command}
    if args := str_list(raw.get("args"), "args", draft):
        entry["args"] = args
    if env := str_map(raw.get("env"), "env", draft):
        entry["env"] = env
    cwd = raw.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise EntryError(f"`cwd` must be a string, got {_kind(cwd)}")
    if cwd:
        entry["cwd"] = cwd
    return entry


def remote_fields(url: Any, headers: Any, draft: Draft, url_key: str = "url") -> Entry:
    """`url` and `headers`, leaving out empty headers."""
    if not isinstance(url, str) or not url.strip():
        raise EntryError(f"`{url_key}` must be a non-empty string")
    entry: Entry = {"url": url}
    if parsed := str_map(headers, "headers", draft):
        entry["headers"] = parsed
    return entry


def note_unused(raw: Mapping[str, Any], consumed: set[str], draft: Draft, client: str) -> None:
    """One note naming the keys of `raw` nobody consumed: toolscout has no place for them."""
    left = sorted(key for key in raw if key not in consumed)
    if left:
        keys = ", ".join(f"`{key}`" for key in left)
        draft.note(f"dropped {keys}: toolscout has no equivalent of these {client} settings")


def read_entries(
    client: str,
    path: Path,
    where: str,
    table: Mapping[Any, Any],
    normalise: Callable[[dict[str, Any], Draft], Entry],
    what: str = "the entry",
) -> ReadResult:
    """Normalise every server of one table; an entry that cannot be read is a problem, not a failure."""
    result = ReadResult([], [])
    for key, raw in table.items():
        name = str(key)
        draft = Draft(name)
        try:
            entry = normalise(as_dict(raw, what), draft)
        except EntryError as exc:
            result.problems.append(f"{path}: {where}.{name}: {exc}")
            continue
        result.servers.append(DiscoveredServer(name, entry, client, path, tuple(draft.notes), tuple(draft.tool_rules)))
    return result


def generic_client_entry(
    entry: Mapping[str, Any], *, url_key: str = "url", with_type: bool = False, keep_cwd: bool = True
) -> Entry:
    """The `mcpServers` shape most clients share: stdio keys, or a URL with headers.

    SSE is written as `"type": "sse"` (Claude Code, Cursor and VS Code spell it so);
    `with_type` writes `type` for every entry.
    """
    out: Entry = {}
    if "command" in entry:
        if with_type:
            out["type"] = "stdio"
        out["command"] = entry["command"]
        out["args"] = list(entry.get("args", []))
        if entry.get("env"):
            out["env"] = dict(entry["env"])
        if keep_cwd and entry.get("cwd"):
            out["cwd"] = entry["cwd"]
    else:
        sse = entry.get("transport") == "sse"
        if with_type or sse:
            out["type"] = "sse" if sse else "http"
        out[url_key] = entry["url"]
        if entry.get("headers"):
            out["headers"] = dict(entry["headers"])
    return out
