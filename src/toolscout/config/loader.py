"""The loader, which reads, parses, interpolates and validates a configuration file.

Everything that can go wrong here ends as one `ConfigurationError` whose message names
the file and the key, so `serve` can print it and exit with code 2.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails

from toolscout.config import formats
from toolscout.config.http import AuthConfig, ClientKey
from toolscout.config.models import (
    DISCOVERY_KEYS,
    SERVER_KIND_TAGS,
    AuditConfig,
    GatewayConfig,
    HttpServerConfig,
    LLMConfig,
    SmartCacheConfig,
    SmartConfig,
    SmartWeights,
    StdioServerConfig,
)
from toolscout.config.rules import ToolRule
from toolscout.config.secrets import config_secrets
from toolscout.config.smart_discovery import translate as translate_smart_discovery
from toolscout.errors import ConfigurationError
from toolscout.masking import remember_secrets
from toolscout.suggestions import closest

_PLACEHOLDER = "placeholder-for-unset-"
"""What an unset `${VAR}` stands for when a file is only checked, followed by the variable's name (so
that two unset keys are not one key twice, and a key's placeholder is as long as a key must be)."""
_VAR = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def load_config(path: Path, env: Mapping[str, str] | None = None) -> GatewayConfig:
    """Read, parse, interpolate and validate one configuration file.

    `${VAR}` takes its value from `env` (default: the process environment), then from
    a `.env` file next to the configuration (what `config import --extract-secrets` writes).
    The secrets it holds are remembered by `toolscout.masking`, masked by value from then on.
    """
    text = read_text(path)
    environment = environment_for(path, env)
    config = parse_config(text, _format_of(path), str(path), environment)
    _remember_secrets(config, text, environment)
    return config


def _remember_secrets(config: GatewayConfig, text: str, environment: Mapping[str, str]) -> None:
    """Remember the configured secrets: from here on they are masked by value wherever they are printed."""
    used = {m.group(1) for m in _VAR.finditer(text) if m.group(1)}
    found = config_secrets(config, {k: v for k, v in environment.items() if k in used})
    remember_secrets(value for value in found if not value.startswith(_PLACEHOLDER))


def check_config_file(path: Path) -> GatewayConfig:
    """Validate a file's structure without requiring its `${VAR}`s to be set (see `check_config_text`)."""
    return check_config_text(read_text(path), _format_of(path), str(path))


def _format_of(path: Path) -> str:
    return path.suffix.lstrip(".").lower() or "json"


def read_text(path: Path) -> str:
    """A configuration file's text, or a `ConfigurationError` saying why it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"Cannot read configuration file {path}: {exc}") from None


def environment_for(path: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables `${VAR}` may use in the file at `path`: `env` over the neighbouring `.env`."""
    base = dict(os.environ if env is None else env)
    dotenv = path.parent / ".env"
    if not dotenv.is_file():
        return base
    from dotenv import dotenv_values  # (here: most configs have no .env, and every command loads one)

    try:
        values = dotenv_values(dotenv, encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"Cannot read {dotenv} (variables for {path.name}): {exc}") from None
    return {**{k: v for k, v in values.items() if v is not None}, **base}


def read_raw(path: Path) -> dict[str, Any]:
    """The file's top-level mapping as written (no interpolation, no validation)."""
    parsed = _parse_text(read_text(path), _format_of(path), str(path))
    return cast(dict[str, Any], parsed) if isinstance(parsed, dict) else {}


def referenced_variables(value: Any) -> set[str]:
    """Return every `${VAR}` name used in string values (with or without a default)."""
    found: set[str] = set()
    if isinstance(value, str):
        found.update(m.group(1) for m in _VAR.finditer(value) if m.group(1))
    elif isinstance(value, dict | list):
        items = cast(dict[Any, Any], value).values() if isinstance(value, dict) else cast(list[Any], value)
        for item in items:
            found |= referenced_variables(item)
    return found


def check_config_text(text: str, fmt: str, origin: str) -> GatewayConfig:
    """Validate configuration text about to be written, whatever variables are set right now.

    Writing a file must not depend on the writer's environment: a `${TOKEN}` the user sets
    only where `serve` runs is fine. Unset variables get a placeholder for the check.
    """
    raw = _parse_text(text, fmt, origin)
    placeholders = {name: _PLACEHOLDER + name.lower().replace("_", "-") for name in referenced_variables(raw)}
    config = parse_config(text, fmt, origin, {**placeholders, **os.environ})
    _remember_secrets(config, text, os.environ)
    return config


def parse_config(text: str, fmt: str, origin: str, env: Mapping[str, str] | None = None) -> GatewayConfig:
    """Parse configuration text in `fmt` (json, yaml/yml or toml); `origin` names it in errors."""
    parsed = _parse_text(text, fmt, origin)
    if not isinstance(parsed, dict):
        raise ConfigurationError(f"Configuration error in {origin}: the top level must be a mapping with `mcpServers`.")
    raw = cast(dict[str, Any], parsed)
    problems: list[str] = []
    environ = os.environ if env is None else env
    data = _interpolate(raw, environ, (), problems)
    # A server is often disabled because its secrets are not at hand: do not insist on them.
    excused = tuple(f"mcpServers.{name}." for name in _disabled_servers(raw.get("mcpServers")))
    problems = [p for p in problems if not p.startswith(excused)]
    if problems:
        raise ConfigurationError(_report(origin, problems))
    data, problems = translate_smart_discovery(data)
    if problems:
        raise ConfigurationError(_report(origin, problems))
    try:
        config = GatewayConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigurationError(_report(origin, [_describe(err) for err in exc.errors()])) from None
    problems = _auth_problems(config)
    if problems:
        raise ConfigurationError(_report(origin, problems))
    return config


def _auth_problems(config: GatewayConfig) -> list[str]:
    """Return what is wrong with a client key's scope (its namespace, its toolRules entries), which the
    models cannot check without `Scope` (config/scopes.py builds on them)."""
    from toolscout.config.scopes import Scope

    problems: list[str] = []
    for index, key in enumerate(config.auth.keys):
        try:
            Scope.of(namespace=key.namespace, servers=key.servers, tools=key.tools, pinned_tools=key.pinned_tools)
        except (ValueError, ValidationError) as exc:
            reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            problems.append(f"auth.keys[{index}] ({key.label}): {reason.removeprefix('Value error, ')}")
    return problems


def parse_text(text: str, fmt: str, origin: str) -> Any:
    """Parse a document in `fmt` (json with comments, yaml/yml or toml) as it is written, or raise a
    `ConfigurationError` naming `origin` and the place of the mistake."""
    return _parse_text(text, fmt, origin)


def server_problem(name: str, err: ErrorDetails) -> str:
    """One validation error of the server entry `name` read elsewhere (a source), said as the
    configuration's own are (`mcpServers.name.key: what is wrong`)."""
    return _describe(cast(ErrorDetails, {**err, "loc": ("mcpServers", name, *err["loc"])}))


def _parse_text(text: str, fmt: str, origin: str) -> Any:
    if fmt in ("yaml", "yml"):
        return _parse_yaml(text, origin)
    try:
        if fmt == "toml":
            return tomllib.loads(text)
        # JSON may carry comments and trailing commas, as VS Code's settings do.
        root = formats.parse(text.removeprefix("\ufeff"))
        return {} if root is None else root.plain()
    except formats.JsoncSyntaxError as exc:
        raise ConfigurationError(
            f"Configuration error in {origin}: invalid JSON at line {exc.line}, column {exc.column}: {exc.reason}."
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"Configuration error in {origin}: invalid TOML: {exc}.") from None


def _parse_yaml(text: str, origin: str) -> Any:
    # ruamel.yaml is imported only for a YAML file: `serve` with a JSON config has no use for it.
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        return formats.load_yaml(text) or {}
    except MarkedYAMLError as exc:
        error = cast(Any, exc)  # ruamel's errors carry their marks untyped
        mark = error.problem_mark or error.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigurationError(
            f"Configuration error in {origin}: invalid YAML{where}: {error.problem or exc}."
        ) from None
    except YAMLError as exc:
        raise ConfigurationError(f"Configuration error in {origin}: invalid YAML: {exc}.") from None


def interpolate(value: Any, env: Mapping[str, str]) -> Any:
    """Return `value` with every `${VAR}` it can resolve from `env` expanded (unset ones become empty)."""
    return _interpolate(value, env, (), [])


def _interpolate(value: Any, env: Mapping[str, str], path: tuple[str | int, ...], problems: list[str]) -> Any:
    """Expand `${VAR}` and `${VAR:-default}` in every string value; `$${` is a literal `${`."""
    if isinstance(value, str):

        def expand(match: re.Match[str]) -> str:
            if match.group(0) == "$${":
                return "${"
            name, default = match.group(1), match.group(2)
            if name in env and (env[name] or default is None):
                return env[name]
            if default is not None:
                return default
            problems.append(
                f"{_dotted(path)}: environment variable {name} is not set "
                f"(set it, or write ${{{name}:-default}} to give a default)"
            )
            return ""

        return _VAR.sub(expand, value)
    if isinstance(value, dict):
        mapping: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
        # Keys are names, as in JSON; YAML and TOML may hand over numbers.
        return {str(k): _interpolate(v, env, (*path, str(k)), problems) for k, v in mapping.items()}
    if isinstance(value, list):
        items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
        return [_interpolate(v, env, (*path, i), problems) for i, v in enumerate(items)]
    return value


def _disabled_servers(servers: object) -> list[str]:
    if not isinstance(servers, dict):
        return []
    entries = cast(dict[Any, Any], servers)
    return [
        str(name)
        for name, entry in entries.items()
        if isinstance(entry, dict) and cast(dict[str, Any], entry).get("disabled") is True
    ]


def _dotted(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


_KNOWN_KEYS: dict[str, set[str]] = {
    "top": {f.alias or to_camel(n) for n, f in GatewayConfig.model_fields.items()},
    "server": {
        *(f.alias or n for n, f in StdioServerConfig.model_fields.items()),
        *(f.alias or n for n, f in HttpServerConfig.model_fields.items()),
        "transport",
        "type",
    }
    - {"kind"},
    "rule": {f.alias or n for n, f in ToolRule.model_fields.items()},
    "audit": {f.alias or n for n, f in AuditConfig.model_fields.items()},
    "auth": {to_camel(n) for model in (AuthConfig, ClientKey) for n in model.model_fields},
    "smart": {to_camel(n) for model in (SmartConfig, SmartWeights, SmartCacheConfig) for n in model.model_fields},
    "llm": {to_camel(n) for n in LLMConfig.model_fields},
    "discovery": {"enabled", *DISCOVERY_KEYS},
    "sources": {"type", "path"},
    "cache": {"enabled", "ttl"},
}


KEY_CUTOFF = 70
"""How alike (rapidfuzz WRatio, 0-100) a known key must be to an unknown one to be suggested: closer
than for names, since keys are few and a wrong suggestion misleads."""


def key_hint(key: str, known: Sequence[str]) -> str:
    """Return ` (did you mean 'x'?)` naming the one of `known` closest to an unknown `key`, or nothing.

    The config's unknown keys and the registry's request bodies (token fields) say it the same way.
    """
    hint = closest(key, known, limit=1, cutoff=KEY_CUTOFF)
    return f" (did you mean {hint[0]!r}?)" if hint else ""


def _describe(err: ErrorDetails) -> str:
    loc = list(err["loc"])
    # The server union adds its tag ("stdio", "http", "sse") after the server name; users never wrote it.
    if len(loc) >= 3 and loc[0] == "mcpServers" and loc[2] in SERVER_KIND_TAGS:
        del loc[2]
    path = _dotted(tuple(loc))
    kind = err["type"]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        scope = (
            "top"
            if len(loc) == 1
            else {
                "toolRules": "rule",
                "audit": "audit",
                "auth": "auth",
                "smart": "smart",
                "llm": "llm",
                "discovery": "discovery",
                "sources": "sources",
                "cache": "cache",
            }.get(str(loc[0]), "server")
        )
        return f"{path}: unknown key{key_hint(key, sorted(_KNOWN_KEYS[scope]))}"
    if kind == "missing":
        return f"{path}: required key is missing"
    message = err["msg"].removeprefix("Value error, ").rstrip(".")  # the report ends each line with one
    if kind == "server_kind" and isinstance(err["input"], dict):
        entry: dict[str, Any] = err["input"]  # pyright: ignore[reportUnknownVariableType]
        typos = [
            f"{key!r} (did you mean {hint[0]!r}?)"
            for key in entry
            if (hint := closest(str(key), ["command", "url"], limit=1, cutoff=KEY_CUTOFF)) and key != hint[0]
        ]
        if typos:
            message += "; found " + ", ".join(typos)
    if kind not in ("value_error", "server_kind"):
        message += f" (got {err['input']!r})" if not isinstance(err["input"], dict | list) else ""
    return f"{path}: {message}"


def _report(origin: str, problems: list[str]) -> str:
    if len(problems) == 1:
        return f"Configuration error in {origin}: {problems[0]}."
    return f"Configuration errors in {origin}:\n" + "\n".join(f"  - {p}" for p in problems)
