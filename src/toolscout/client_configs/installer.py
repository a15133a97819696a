"""Putting toolscout into an MCP client's config, and taking it out again.

`install` adds an entry that starts `toolscout serve --config <file>`; with `replace` it also
moves the client's own servers into toolscout's config, so the client sees only toolscout.
What was moved is remembered in `installs.json` (user config directory) so `uninstall`
can put it back.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from toolscout.client_configs import ClientFormat, ConfigLocation, is_toolscout_entry
from toolscout.client_configs.importer import Applied, ImportPlan, apply_import, existing_env, plan_import
from toolscout.config.edit import ConfigDocument
from toolscout.config.locations import user_config_dir
from toolscout.errors import ConfigurationError

ENTRY_NAME = "toolscout"


def state_file() -> Path:
    return user_config_dir() / "installs.json"


def toolscout_command() -> tuple[str, list[str]]:
    """How a client should start this toolscout: its console script, else this Python with `-m toolscout`."""
    script = Path(sys.executable).parent / ("toolscout.exe" if sys.platform == "win32" else "toolscout")
    if script.is_file():
        return str(script), []
    return sys.executable, ["-m", "toolscout"]


@dataclass
class Place:
    """Where the client and the user are: the inputs of every path decision."""

    home: Path
    cwd: Path
    platform: str
    env: Mapping[str, str]

    @classmethod
    def here(cls) -> Place:
        return cls(Path.home(), Path.cwd(), sys.platform, dict(os.environ))


@dataclass
class Installed:
    client_file: Path
    client_backup: Path | None
    replaced_entry: bool
    plan: ImportPlan | None = None
    applied: Applied | None = None
    moved: list[str] = field(default_factory=list[str])
    remaining: list[str] = field(default_factory=list[str])
    """The client's own servers left beside toolscout (without `--replace`)."""


def install(fmt: ClientFormat, config: Path, place: Place, *, replace: bool, extract: bool = False) -> Installed:
    """Write toolscout into `fmt`'s user-scope config, pointing at `config` (which must exist)."""
    target = fmt.install_location(home=place.home, cwd=place.cwd, platform=place.platform, env=place.env)
    command, base = toolscout_command()
    entry = fmt.server_entry(command, [*base, "serve", "--config", str(config.resolve())])
    document = ConfigDocument.load_or_new(target)
    current = document.get([*fmt.servers_key, ENTRY_NAME])
    if current is not None and not (isinstance(current, dict) and is_toolscout_entry(cast(dict[str, Any], current))):
        raise ConfigurationError(
            f"{target} already has a server called {ENTRY_NAME!r} that is not toolscout; rename it and run again."
        )
    outcome = Installed(target, None, current is not None)
    moved_raw: dict[str, Any] = {}
    if replace and target.is_file():
        found = fmt.read_location(ConfigLocation(target, "user"))
        if found.problems:
            raise ConfigurationError(f"Cannot move the servers of {target}: " + "; ".join(found.problems))
        movable = [s for s in found.servers if not is_toolscout_entry(s.entry)]
        plan = plan_import(movable, _servers_of(config), extract=extract, known_env=existing_env(config))
        # Keep the client's own spelling of each entry, so uninstall restores it exactly.
        moved_raw = {s.name: raw for s in movable if (raw := document.get([*fmt.servers_key, s.name])) is not None}
        outcome.plan = plan
        outcome.applied = apply_import(plan, config)
        for name in moved_raw:
            document.delete([*fmt.servers_key, name])
        outcome.moved = list(moved_raw)
    document.set([*fmt.servers_key, ENTRY_NAME], entry)
    servers = document.get(list(fmt.servers_key))
    if isinstance(servers, dict):
        outcome.remaining = [str(name) for name in cast(dict[str, Any], servers) if name != ENTRY_NAME]
    original = document.raw
    outcome.client_backup = document.save()
    _remember(fmt.id, target, moved_raw, original, target.read_bytes())
    return outcome


@dataclass
class Uninstalled:
    client_file: Path
    client_backup: Path | None
    removed_entry: bool
    restored: list[str] = field(default_factory=list[str])
    kept: list[str] = field(default_factory=list[str])


def uninstall(fmt: ClientFormat, place: Place) -> Uninstalled:
    """Remove toolscout from `fmt`'s config and put back the servers `install --replace` moved."""
    state = _state()
    record = cast(dict[str, Any], state.get(fmt.id) or {})
    target = (
        Path(record["file"])
        if "file" in record
        else fmt.install_location(home=place.home, cwd=place.cwd, platform=place.platform, env=place.env)
    )
    if not target.is_file():
        raise ConfigurationError(f"{target} does not exist; there is no toolscout to remove from {fmt.display_name}.")
    document = ConfigDocument.load(target)
    original = record.get("original")
    untouched = document.raw is not None and _digest(document.raw) == record.get("installedSha256")
    outcome = Uninstalled(target, None, document.delete([*fmt.servers_key, ENTRY_NAME]))
    for name, raw in cast(dict[str, Any], record.get("moved") or {}).items():
        if document.get([*fmt.servers_key, name]) is None:
            document.set([*fmt.servers_key, name], raw)
            outcome.restored.append(name)
        else:
            outcome.kept.append(name)
    if not outcome.removed_entry and not outcome.restored:
        raise ConfigurationError(f"toolscout is not installed in {target}; nothing to remove.")
    if isinstance(original, str) and untouched:
        # Nobody changed the file since toolscout wrote it: put back exactly what was there before,
        # byte for byte, instead of the same servers in the editor's layout.
        document = document.rewritten(original)
    outcome.client_backup = document.save()
    _forget(fmt.id)
    return outcome


def _servers_of(config: Path) -> dict[str, Any]:
    servers = ConfigDocument.load_or_new(config).get(["mcpServers"])
    return cast(dict[str, Any], servers) if isinstance(servers, dict) else {}


def _state() -> dict[str, Any]:
    path = state_file()
    return ConfigDocument.load(path).data() if path.is_file() else {}


def _digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def _remember(client: str, target: Path, moved: dict[str, Any], original: bytes | None, written: bytes) -> None:
    """Note what `install` did to `target`: the servers it moved, the file as it was before the first
    install (to restore byte for byte), and a digest of what it wrote (to know whether it is untouched)."""
    document = ConfigDocument.load_or_new(state_file())
    previous = cast(dict[str, Any], document.get([client]) or {})
    # A second install keeps what the first one moved, and the file as it was before toolscout.
    all_moved = {**cast(dict[str, Any], previous.get("moved") or {}), **moved}
    record: dict[str, Any] = {
        "file": str(target),
        "moved": all_moved,
        "installedAt": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "installedSha256": _digest(written),
    }
    before = previous.get("original") if "original" in previous else _text_or_none(original)
    if before is not None:
        record["original"] = before
    document.set([client], record)
    document.save(backup=False)
    # It holds the moved entries as the client had them, secrets included.
    state_file().chmod(0o600)


def _text_or_none(content: bytes | None) -> str | None:
    try:
        return content.decode("utf-8") if content is not None else None
    except UnicodeDecodeError:  # never read as a config then; restored by editing instead
        return None


def _forget(client: str) -> None:
    path = state_file()
    if path.is_file():
        document = ConfigDocument.load(path)
        if document.delete([client]):
            document.save(backup=False)
