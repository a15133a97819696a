"""Bringing servers from MCP clients' configs into toolscout's config.

Planning is pure (what would be added, renamed, skipped, and which secrets would move to
`.env`); applying writes the config (format and comments kept, with a backup) and `.env`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from dotenv import dotenv_values

from toolscout.client_configs import ClientFormat, ConfigLocation, DiscoveredServer, is_toolscout_entry
from toolscout.config.edit import ConfigDocument
from toolscout.config.loader import check_config_text, environment_for, interpolate, referenced_variables
from toolscout.config.secrets import extract_secrets
from toolscout.errors import ConfigurationError

Action = Literal["add", "rename", "skip"]


@dataclass(frozen=True)
class Decision:
    """What happens to one discovered server."""

    server: DiscoveredServer
    action: Action
    name: str
    reason: str = ""


@dataclass
class ImportPlan:
    """Everything an import would change."""

    decisions: list[Decision] = field(default_factory=list[Decision])
    problems: list[str] = field(default_factory=list[str])
    entries: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    rules: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    secrets: dict[str, str] = field(default_factory=dict[str, str])

    def of(self, action: Action) -> list[Decision]:
        return [d for d in self.decisions if d.action == action]

    @property
    def changes(self) -> bool:
        return bool(self.entries or self.rules)


def read_sources(sources: Iterable[tuple[ClientFormat, ConfigLocation]]) -> tuple[list[DiscoveredServer], list[str]]:
    """Every server the given client files declare, and every problem reading them."""
    servers: list[DiscoveredServer] = []
    problems: list[str] = []
    for fmt, location in sources:
        result = fmt.read_location(location)
        servers.extend(result.servers)
        problems.extend(result.problems)
    return servers, problems


def _unique(name: str, client: str, taken: Mapping[str, Any]) -> str:
    candidate = f"{name}-{client}"
    index = 2
    while candidate in taken:
        candidate = f"{name}-{client}-{index}"
        index += 1
    return candidate


def plan_import(
    found: Sequence[DiscoveredServer],
    existing: Mapping[str, Any],
    *,
    extract: bool = False,
    known_env: Mapping[str, str] | None = None,
    problems: Sequence[str] = (),
) -> ImportPlan:
    """Decide, server by server, what importing `found` into a config holding `existing` does.

    A name already present with the same entry is skipped; with a different entry the
    newcomer is renamed `<name>-<client>`. toolscout itself is never imported.
    """
    plan = ImportPlan(problems=list(problems))
    current: dict[str, Any] = dict(existing)
    taken_env = dict(known_env or {})
    resolve_env = {**os.environ, **taken_env}
    for server in found:
        if is_toolscout_entry(server.entry):
            plan.decisions.append(Decision(server, "skip", server.name, "toolscout itself"))
            continue
        entry = dict(server.entry)
        new_secrets: dict[str, str] = {}
        if extract:
            entry, new_secrets = extract_secrets(server.name, entry, {**taken_env, **plan.secrets})
        # Compare what would run: `${TOKEN}` in the config and the literal token in the client are the same.
        runs = interpolate(server.entry, resolve_env)
        twin = next((n for n, e in current.items() if interpolate(e, resolve_env) == runs), None)
        if twin is not None:
            where = "" if twin == server.name else f" as {twin!r}"
            plan.decisions.append(Decision(server, "skip", twin, f"already in the config{where}"))
            continue
        name, action, reason = server.name, cast(Action, "add"), ""
        if name in current:
            name = _unique(server.name, server.client, current)
            action, reason = "rename", f"a different server is already called {server.name!r}"
        current[name] = entry
        plan.entries[name] = entry
        plan.secrets.update(new_secrets)
        plan.rules.extend({**rule, "server": name} for rule in server.tool_rules)
        plan.decisions.append(Decision(server, action, name, reason))
    return plan


@dataclass(frozen=True)
class Applied:
    config: Path
    backup: Path | None
    env_file: Path | None
    unset: list[str]
    """Variables the config now uses that are set neither in the environment nor in `.env`."""


def apply_import(plan: ImportPlan, target: Path, *, document: ConfigDocument | None = None) -> Applied:
    """Write the plan into the config at `target` (created if missing) and its `.env`.

    The new config is validated before anything is written; nothing is half-written.
    """
    doc = document or ConfigDocument.load_or_new(target)
    for name, entry in plan.entries.items():
        doc.set(["mcpServers", name], entry)
    if doc.get(["mcpServers"]) is None:
        doc.set(["mcpServers"], {})
    if plan.rules:
        existing = cast(list[Any], doc.get(["toolRules"]) or [])
        doc.set(["toolRules"], [*existing, *plan.rules])
    check_config_text(doc.text(), doc.format, str(target))
    env_file = write_env(target.parent / ".env", plan.secrets) if plan.secrets else None
    backup = doc.save()
    env = {**environment_for(target), **plan.secrets}
    unset = sorted(v for v in referenced_variables(doc.data().get("mcpServers")) if v not in env)
    return Applied(target, backup, env_file, unset)


def existing_env(target: Path) -> dict[str, str]:
    """The variables already in the `.env` next to `target`."""
    path = target.parent / ".env"
    if not path.is_file():
        return {}
    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def write_env(path: Path, values: Mapping[str, str]) -> Path:
    """Add `values` to a `.env` file (readable by its owner only), atomically; existing lines are kept."""
    previous = path.read_text(encoding="utf-8") if path.is_file() else ""
    known = {k for k, v in dotenv_values(path).items() if v is not None} if previous else set[str]()
    lines = [previous.rstrip("\n")] if previous.strip() else []
    if not previous:
        lines.append("# Secrets for toolscout's config (written by `toolscout config import --extract-secrets`).")
    for key, value in values.items():
        if key not in known:
            escaped = value.replace("\\", "\\\\").replace('"', '\\"')
            lines.append(f'{key}="{escaped}"')
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".env.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
        os.chmod(temp, 0o600)
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise ConfigurationError(f"Cannot write {path}: {exc.strerror or exc}.") from None
    return path
