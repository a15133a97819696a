"""Where MCP clients keep their servers, and how to read them into toolscout's shape.

Used by `toolscout config import`, `toolscout init` and `toolscout install --client X`.
This package only reads: writing client files is the job of the config editor.
See docs/CLIENTS.md for each client's files, shapes and conversions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from toolscout.client_configs.base import (
    BaseClient,
    ClientFormat,
    ConfigLocation,
    DiscoveredServer,
    ReadResult,
    is_toolscout_entry,
)
from toolscout.client_configs.clients import (
    GATEWAY_NAME,
    ClaudeCode,
    ClaudeDesktop,
    Codex,
    Cursor,
    CustomYaml,
    Docker,
    Gemini,
    McpJson,
    VSCode,
    Windsurf,
)
from toolscout.errors import ConfigurationError
from toolscout.suggestions import closest

__all__ = [
    "CLIENTS",
    "GATEWAY_NAME",
    "BaseClient",
    "ClientFormat",
    "ConfigLocation",
    "DiscoveredServer",
    "ReadResult",
    "client",
    "discover",
    "is_toolscout_entry",
]

_ALL: tuple[ClientFormat, ...] = (
    ClaudeDesktop(),
    ClaudeCode(),
    Cursor(),
    VSCode(),
    Windsurf(),
    Gemini(),
    Codex(),
    Docker(),
    CustomYaml(),
    McpJson(),
)

CLIENTS: dict[str, ClientFormat] = {fmt.id: fmt for fmt in _ALL}
"""Every known client format, by id."""


def client(id: str) -> ClientFormat:
    """The client format with this id.

    Raises:
        ConfigurationError: no client has this id; the message suggests the closest one.
    """
    found = CLIENTS.get(id.strip().lower())
    if found is not None:
        return found
    known = ", ".join(sorted(CLIENTS))
    message = f"unknown client {id!r}; known: {known}"
    best = closest(id, list(CLIENTS), limit=1)
    if best:
        message += f"; did you mean {best[0]!r}?"
    raise ConfigurationError(message, client=id)


def discover(
    *, home: Path, cwd: Path, platform: str, env: Mapping[str, str], only: Sequence[str] | None = None
) -> list[tuple[ClientFormat, ConfigLocation]]:
    """The client locations that exist here, in client order (user scope before project scope).

    A file listed twice by one client (the working directory is the home folder)
    is returned once. Claude Code's per-project entry inside `~/.claude.json` is
    returned only when that file has servers (or problems) for `cwd`.

    Raises:
        ConfigurationError: `only` names an unknown client.
    """
    formats = [client(name) for name in only] if only is not None else list(CLIENTS.values())
    found: list[tuple[ClientFormat, ConfigLocation]] = []
    for fmt in formats:
        seen: set[tuple[Path, Path | None]] = set()
        locations = fmt.locations(home=home, cwd=cwd, platform=platform, env=env)
        for location in sorted(locations, key=lambda loc: loc.scope != "user"):
            if not location.path.is_file():
                continue
            # Claude Code's user file holds the user servers and, per project, the
            # "local" ones: the same path then stands for two different sets.
            section = location.project if isinstance(fmt, ClaudeCode) and fmt.is_user_file(location.path) else None
            key = (location.path.absolute(), section)
            if key in seen:
                continue
            seen.add(key)
            if isinstance(fmt, ClaudeCode) and section is not None and not fmt.has_project(location.path, section):
                continue
            found.append((fmt, location))
    return found
