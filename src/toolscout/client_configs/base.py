"""What every client format has in common: where files are, what reading yields, install rules.

A client format knows where one MCP client keeps its server configuration and
how to turn that configuration into toolscout's own server-entry shape (the
values of `mcpServers.<name>` in toolscout's config) and back. Nothing here
writes files: writing belongs to the module that edits client configs.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from toolscout.errors import ConfigurationError

__all__ = [
    "BaseClient",
    "ClientFormat",
    "ConfigLocation",
    "DiscoveredServer",
    "ReadResult",
    "appdata",
    "is_toolscout_entry",
    "localappdata",
    "user_config_root",
    "xdg_config_home",
]

Scope = Literal["user", "project"]


@dataclass(frozen=True)
class ConfigLocation:
    """One place a client may keep servers, whether or not it exists.

    `project` is the project folder the location belongs to: for a project file
    (`.vscode/mcp.json`) its folder, and for Claude Code's per-project entries
    inside the user file `~/.claude.json` the folder whose entry is meant. Pass it
    on to `read` (or call `client.read_location(location)`).
    """

    path: Path
    scope: Scope
    project: Path | None = None


@dataclass(frozen=True)
class DiscoveredServer:
    """One server found in a client file, already in toolscout's entry shape.

    `tool_rules` are toolscout `toolRules` entries that reproduce a tool filter the
    client applied to this server (Gemini's `includeTools`, Codex's
    `enabled_tools`, ...); an importer appends them to the config's `toolRules`.
    """

    name: str
    entry: dict[str, Any]
    client: str
    source: Path
    notes: tuple[str, ...] = ()
    tool_rules: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class ReadResult:
    """The servers a file holds, and what could not be read (`"<path>: line L, column C: <what>"`)."""

    servers: list[DiscoveredServer]
    problems: list[str]


class ClientFormat(Protocol):
    """Knowledge of one MCP client's configuration files."""

    id: str
    display_name: str
    servers_key: tuple[str, ...]
    installable: bool
    docs_url: str

    def locations(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> list[ConfigLocation]:
        """Every place the client may keep servers, existing or not; `platform` is `sys.platform`-like."""
        ...

    def read(self, path: Path, *, project: Path | None = None) -> ReadResult:
        """Read one file into toolscout entries; never raises for a bad file."""
        ...

    def read_location(self, location: ConfigLocation) -> ReadResult:
        """Read the file at `location`: `read(location.path, project=location.project)`."""
        ...

    def install_location(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> Path:
        """The user-scope file `toolscout install --client ID` writes; `ConfigurationError` when not installable."""
        ...

    def server_entry(self, command: str, args: list[str]) -> dict[str, Any]:
        """The client-side entry that starts toolscout itself over stdio."""
        ...

    def to_client_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        """A toolscout entry in the client's own shape (the inverse of `read`'s normalisation)."""
        ...


class BaseClient(ABC):
    """Shared behaviour; subclasses set the class attributes and implement the abstract methods."""

    id: str
    display_name: str
    servers_key: tuple[str, ...] = ("mcpServers",)
    installable: bool = True
    docs_url: str = ""
    not_installable_reason: str = ""

    @abstractmethod
    def locations(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> list[ConfigLocation]:
        """Every place the client may keep servers, existing or not."""

    @abstractmethod
    def read(self, path: Path, *, project: Path | None = None) -> ReadResult:
        """Read one file into toolscout entries; never raises for a bad file."""

    @abstractmethod
    def to_client_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        """A toolscout entry in the client's own shape."""

    def read_location(self, location: ConfigLocation) -> ReadResult:
        """Read a location, passing on the project it belongs to."""
        return self.read(location.path, project=location.project)

    def install_location(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> Path:
        """The user-scope file toolscout is installed into.

        Raises:
            ConfigurationError: toolscout cannot be installed into this client.
        """
        raise self._not_installable()

    def server_entry(self, command: str, args: list[str]) -> dict[str, Any]:
        """The client-side entry that starts toolscout itself over stdio.

        Raises:
            ConfigurationError: toolscout cannot be installed into this client.
        """
        if not self.installable:
            raise self._not_installable()
        return self.to_client_entry({"command": command, "args": list(args)})

    def _not_installable(self) -> ConfigurationError:
        return ConfigurationError(
            f"toolscout cannot be installed into {self.display_name}: {self.not_installable_reason}", client=self.id
        )


# --- where per-user application data lives on each platform ---------------------------------


def appdata(home: Path, env: Mapping[str, str]) -> Path:
    """Windows' roaming application data folder (`%APPDATA%`)."""
    return Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming"


def localappdata(home: Path, env: Mapping[str, str]) -> Path:
    """Windows' local application data folder (`%LOCALAPPDATA%`)."""
    return Path(env["LOCALAPPDATA"]) if env.get("LOCALAPPDATA") else home / "AppData" / "Local"


def xdg_config_home(home: Path, env: Mapping[str, str]) -> Path:
    """Return `$XDG_CONFIG_HOME`, or `~/.config`."""
    return Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"


def user_config_root(home: Path, platform: str, env: Mapping[str, str]) -> Path:
    """Where Electron apps keep per-user data: Application Support, %APPDATA% or the XDG config home."""
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform == "win32":
        return appdata(home, env)
    return xdg_config_home(home, env)


# --- recognising toolscout itself ------------------------------------------------------------

_PACKAGE_SPEC = re.compile(r"^toolscout(?:\[[^\]]*\])?(?:[=<>~!@].*)?$", re.IGNORECASE)


def _basename(token: str) -> str:
    name = re.split(r"[\\/]", token)[-1].lower()
    return name.removesuffix(".exe")


def is_toolscout_entry(entry: Mapping[str, Any]) -> bool:
    """Whether a server entry (client or toolscout shape) starts toolscout itself.

    Recognised: a `toolscout` executable (any path, `.exe`), `python -m toolscout`,
    and launchers naming the package (`uvx toolscout serve`, `pipx run toolscout`,
    `uvx --from toolscout==0.2 toolscout`), in `command` or `args`. Remote entries
    are never recognised: a URL says nothing about what serves it.
    """
    command = entry.get("command")
    if not isinstance(command, str):
        return False
    raw_args: Any = entry.get("args")
    args: Sequence[Any] = cast(Sequence[Any], raw_args) if isinstance(raw_args, list | tuple) else ()
    tokens = [command, *(a for a in args if isinstance(a, str))]
    for index, token in enumerate(tokens):
        if _basename(token) == "toolscout" or (index > 0 and _PACKAGE_SPEC.match(token)):
            return True
        # `python -m toolscout` is the gateway; `python -m toolscout.demo.notes` is one of its demo servers.
        module = tokens[index + 1] if token == "-m" and index + 1 < len(tokens) else token.removeprefix("-m")
        if (token == "-m" or token.startswith("-m")) and module in ("toolscout", "toolscout.__main__", "toolscout.cli"):
            return True
    return False
