"""Reading a client's file and turning its server entries into toolscout's entry shape, and back.

Users hand-edit these files, and VS Code's `settings.json` is JSON with comments and trailing
commas by design, so every file is read leniently: JSON with comments, TOML and YAML, and nothing
here raises for a bad file. Each loader returns either the data or one problem string
`"<path>: line L, column C: <what>"`.

The pieces that follow are shared by every format: strict-but-forgiving coercion of the usual keys
(`command`, `args`, `env`, `cwd`, `url`, `headers`) and the transport names clients use, with
anything the user should know about a conversion collected as a note on the entry's `Draft`. Then
the variables clients interpolate: VS Code, Cursor and Windsurf write `${env:NAME}`,
`${input:id}`, `${workspaceFolder}` and more, while toolscout reads only `${VAR}` from its
environment; `apply_strings` runs a rewrite over every value a client interpolates, and
`vscode_variables` is the rewrite of the VS Code family. Last, a client's per-server lists of tools
to hide or keep, written as toolscout `toolRules` entries.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from toolscout.client_configs.base import DiscoveredServer, ReadResult
from toolscout.config import formats

__all__ = [
    "Draft",
    "EntryError",
    "Loaded",
    "VariableContext",
    "apply_strings",
    "as_dict",
    "exclude_rule",
    "generic_client_entry",
    "include_rule",
    "input_env_name",
    "load_json",
    "load_toml",
    "load_yaml",
    "number",
    "read_entries",
    "standard_entry",
    "str_list",
    "str_map",
    "tool_filters",
    "vscode_variables",
]


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
    """Return `stdio`, `http` or `sse` from the first of `keys` that is set, else None."""
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
    """Return the entry's `command`, `args`, `env` and `cwd`, leaving out empty ones."""
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
    """Return the entry's `url` and `headers`, leaving out empty headers."""
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


def apply_strings(entry: Entry, convert: Callable[[str], str]) -> Entry:
    """The entry with `convert` applied to every value a client interpolates (not to keys)."""
    out: Entry = dict(entry)
    for key in ("command", "cwd", "url"):
        if isinstance(out.get(key), str):
            out[key] = convert(out[key])
    if "args" in out:
        out["args"] = [convert(a) for a in out["args"]]
    for key in ("env", "headers"):
        if key in out:
            out[key] = {k: convert(v) for k, v in out[key].items()}
    return out


_BRACED = re.compile(r"\$\{([^{}]*)\}")


def input_env_name(input_id: str) -> str:
    """A VS Code input id as an environment variable name: `api-key` and `apiKey` become `API_KEY`."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", input_id)
    name = re.sub(r"[^A-Za-z0-9]+", "_", spaced).strip("_").upper()
    return name if name and not name[0].isdigit() else f"INPUT_{name}"


@dataclass(frozen=True)
class VariableContext:
    """What VS Code-style variables resolve to while one file is read."""

    project: Path | None = None
    inputs: Mapping[str, Mapping[str, Any]] | None = None  # None: the client has no `${input:...}`


def vscode_variables(text: str, ctx: VariableContext, draft: Draft, client: str) -> str:
    """Rewrite VS Code/Cursor/Windsurf variables into toolscout's `${VAR}` syntax.

    `${env:NAME}` becomes `${NAME}`; `${input:id}` becomes `${ID}` (with a note to
    set it); `${workspaceFolder}` becomes the project folder (or `${WORKSPACE_FOLDER}`
    with a note when the file belongs to no project); `${userHome}` becomes `${HOME}`;
    `${pathSeparator}` and `${/}` the separator. Other client variables are left as
    written, with a note, since toolscout cannot resolve them.
    """

    def replace(match: re.Match[str]) -> str:
        body = match.group(1)
        head, _, rest = body.partition(":")
        if head == "env" and rest:
            return f"${{{rest}}}"
        if head == "input" and rest and ctx.inputs is not None:
            return _input_reference(rest, ctx.inputs, draft)
        if body == "workspaceFolder":
            return _project_value(ctx.project, str, "WORKSPACE_FOLDER", draft)
        if body == "workspaceFolderBasename":
            return _project_value(ctx.project, lambda p: p.name, "WORKSPACE_FOLDER_BASENAME", draft)
        if body == "userHome":
            draft.note("`${userHome}` became `${HOME}`: toolscout reads it from its environment")
            return "${HOME}"
        if body in ("pathSeparator", "/"):
            return os.sep
        if ":" in body or body in ("cwd", "file", "fileDirname", "relativeFile", "workspaceRoot"):
            draft.note(f"`{match.group(0)}` is a {client} variable toolscout cannot resolve; it was left as written")
        return match.group(0)

    return _BRACED.sub(replace, text)


def _input_reference(input_id: str, inputs: Mapping[str, Mapping[str, Any]], draft: Draft) -> str:
    name = input_env_name(input_id)
    spec = inputs.get(input_id, {})
    description = spec.get("description")
    about = f" ({description})" if isinstance(description, str) and description else ""
    draft.note(f"VS Code prompted for input `{input_id}`{about}; set {name} in toolscout's environment instead")
    default = spec.get("default")
    if isinstance(default, str) and default and "}" not in default:
        return f"${{{name}:-{default}}}"
    return f"${{{name}}}"


_VARIABLE_OF = {"WORKSPACE_FOLDER": "workspaceFolder", "WORKSPACE_FOLDER_BASENAME": "workspaceFolderBasename"}


def _project_value(project: Path | None, pick: Callable[[Path], str], fallback: str, draft: Draft) -> str:
    if project is not None:
        value = pick(project)
        draft.note(f"`${{{_VARIABLE_OF[fallback]}}}` became {value}")
        return value
    draft.note(f"the file belongs to no project folder: set {fallback} to the folder the server should use")
    return f"${{{fallback}}}"


_GLOB_META = re.compile(r"[*?\[\]{}]")


def _literal(name: str) -> str:
    """A pattern matching exactly `name` (ignoring case, as every toolscout pattern does).

    Plain names stay readable; names with glob characters become an anchored regex.
    """
    if _GLOB_META.search(name) or name.startswith(("/", "!")):
        return f"/^{re.escape(name)}$/"
    return name


def exclude_rule(server: str, tools: Iterable[str]) -> dict[str, Any]:
    """A toolRules entry disabling exactly these tools of one server."""
    return {"server": _literal(server), "pattern": [_literal(t) for t in tools], "enabled": False}


def include_rule(server: str, tools: Iterable[str]) -> dict[str, Any]:
    """A toolRules entry disabling every tool of one server except these.

    A rule with `enabled: true` would turn toolscout's rules into a whitelist for
    every server, so the allow-list is written as "disable `*` except ...".
    """
    return {
        "server": _literal(server),
        "pattern": ["*", *(f"!{_literal(t)}" for t in tools)],
        "enabled": False,
    }


def tool_filters(raw: Mapping[str, Any], draft: Draft, exclude_key: str, include_key: str) -> None:
    """A client's per-server deny and allow lists of tool names, as toolRules entries on `draft`.

    Exclusion goes first: toolscout's first deciding rule wins, and clients let exclusion win.
    """
    excluded = str_list(raw.get(exclude_key), exclude_key, draft)
    included = str_list(raw.get(include_key), include_key, draft)
    if excluded:
        draft.tool_rules.append(exclude_rule(draft.name, excluded))
        draft.note(f"`{exclude_key}` became a toolRules entry disabling {', '.join(excluded)}")
    if included:
        draft.tool_rules.append(include_rule(draft.name, included))
        draft.note(f"`{include_key}` became a toolRules entry disabling every tool but {', '.join(included)}")


CURSOR_OAUTH_KEYS = {"CLIENT_ID": "clientId", "CLIENT_SECRET": "clientSecret", "scopes": "scopes"}
"""Cursor's `auth` keys, as toolscout's `oauth` names them."""
CLAUDE_CODE_OAUTH_KEYS = {"clientId": "clientId", "callbackPort": "callbackPort", "scopes": "scopes"}
"""Claude Code's `oauth` keys, as toolscout's `oauth` names them (its client secret is in the keychain)."""
GEMINI_OAUTH_KEYS = {
    "clientId": "clientId",
    "clientSecret": "clientSecret",
    "scopes": "scopes",
    "redirectUri": "redirectUri",
    "enabled": "",
}
"""Gemini CLI's `oauth` keys, as toolscout's `oauth` names them (`enabled`: toolscout signs in whenever asked)."""
GEMINI_REDIRECT_URI = "http://localhost:7777/oauth/callback"
"""The redirect URI Gemini CLI uses when its `oauth` names none: a client registered for it expects this one."""


def keep_oauth(
    value: Any, entry: Entry, draft: Draft, key: str, names: Mapping[str, str], *, redirect_uri: str | None = None
) -> None:
    """Keep what a client's OAuth settings (`value`, under `key`) say that toolscout's `oauth` can use, by
    `names` (the client's key → toolscout's); note what could not be kept. `redirect_uri` is the one the
    client uses when its settings name none, kept with a client it names (registered for that URI)."""
    from pydantic import ValidationError

    from toolscout.config.oauth import OAuthSettings

    if not isinstance(value, dict):
        draft.note(f"dropped `{key}`: the client's OAuth settings must be an object")
        return
    oauth: dict[str, Any] = {}
    for name, given in cast(dict[str, Any], value).items():
        ours = names.get(name)
        if ours == "":
            continue  # understood, and nothing to keep
        if ours == "scopes" and isinstance(given, str | list):
            scopes = given.split() if isinstance(given, str) else cast(list[Any], given)
            if all(isinstance(s, str) for s in scopes):
                oauth["scopes"] = list(scopes)
                continue
        elif ours == "callbackPort" and isinstance(given, int) and not isinstance(given, bool) and 0 < given < 65536:
            # Claude Code's redirect URI is http://localhost:PORT/callback: a client registered for it expects that.
            oauth["redirectUri"] = f"http://localhost:{given}/callback"
            continue
        elif ours == "redirectUri" and isinstance(given, str):
            try:
                oauth["redirectUri"] = OAuthSettings(redirect_uri=given).redirect_uri
                continue
            except ValidationError as exc:
                reason = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
                draft.note(f"dropped `{key}.{name}`: {reason}")
                continue
        elif ours in ("clientId", "clientSecret") and isinstance(given, str) and given:
            oauth[ours] = given
            continue
        draft.note(f"dropped `{key}.{name}`: toolscout's OAuth settings have no such setting, or not of this kind")
    if not oauth:
        return
    if redirect_uri is not None and "clientId" in oauth and "redirectUri" not in oauth:
        oauth["redirectUri"] = redirect_uri
    entry["oauth"] = oauth
    draft.note(f"kept `{key}` as `oauth` ({', '.join(oauth)}): sign in with `toolscout auth login {draft.name}`")
    if "clientId" in oauth and "clientSecret" not in oauth and "clientSecret" not in names.values():
        draft.note(
            "the client keeps a client secret (if it has one) outside its file: add it as `oauth.clientSecret`, "
            "as a ${VAR} reference to keep it out of toolscout's file"
        )
