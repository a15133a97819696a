"""Clients whose files are JSON: the shared reader, the editors and Claude Desktop.

`McpJsonClient` reads any JSON file (leniently: comments and trailing commas are
accepted) and hands each server entry to `normalise`; subclasses choose where the
servers are (`containers`), which keys hold a URL, and whether the client's
`${env:NAME}`-style variables need rewriting.

VS Code differs most: a top-level `servers` object (not `mcpServers`), an explicit
`type` on every entry, an `inputs` list of values VS Code prompts for and
substitutes as `${input:id}`, and user servers in the profile's `mcp.json` or, in
older setups, the `mcp` block of `settings.json` (JSON with comments).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from toolscout.client_configs.base import (
    BaseClient,
    ConfigLocation,
    ReadResult,
    localappdata,
    user_config_root,
)
from toolscout.client_configs.normalize import (
    Draft,
    Entry,
    generic_client_entry,
    note_unused,
    number,
    read_entries,
    standard_entry,
    str_list,
)
from toolscout.client_configs.parsing import load_json
from toolscout.client_configs.tool_filters import exclude_rule
from toolscout.client_configs.variables import VariableContext, apply_strings, vscode_variables

__all__ = [
    "ClaudeDesktop",
    "Cursor",
    "FileContext",
    "McpJson",
    "McpJsonClient",
    "VSCode",
    "Windsurf",
    "to_env_references",
]


@dataclass(frozen=True)
class FileContext:
    """The whole document being read, for entries whose meaning depends on the rest of the file."""

    data: Mapping[str, Any]
    path: Path
    project: Path | None


# toolscout's references, and its `$${` escape, which must not be mistaken for one.
_TOOLSCOUT_VAR = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")


def to_env_references(entry: Mapping[str, Any]) -> Entry:
    """toolscout's `${VAR}` and `${VAR:-default}` as `${env:VAR}` (VS Code, Cursor, Windsurf).

    Those clients have no default syntax, so a default is lost.
    """

    def convert(text: str) -> str:
        return _TOOLSCOUT_VAR.sub(lambda m: m.group(0) if m.group(1) is None else f"${{env:{m.group(1)}}}", text)

    return apply_strings(dict(entry), convert)


class McpJsonClient(BaseClient):
    """A client whose servers are JSON objects keyed by name."""

    url_keys: tuple[str, ...] = ("url",)
    client_url_key: str = "url"
    vscode_variables: bool = False

    def containers(self, ctx: FileContext) -> list[tuple[str, Any]]:
        """(where, object of servers) pairs to read; `where` names the key path in problems."""
        return [("mcpServers", ctx.data.get("mcpServers"))]

    def read(self, path: Path, *, project: Path | None = None) -> ReadResult:
        """Read one JSON file; malformed files and entries become problems, never exceptions."""
        loaded = load_json(path)
        if loaded.problem is not None:
            return ReadResult([], [loaded.problem])
        data: Any = loaded.data
        if not isinstance(data, dict):
            return ReadResult([], [f"{path}: the top level must be a JSON object"])
        return self.read_data(FileContext(cast(dict[str, Any], data), path, project))

    def read_data(self, ctx: FileContext) -> ReadResult:
        result = ReadResult([], [])
        for where, container in self.containers(ctx):
            if container is None:
                continue
            if not isinstance(container, dict):
                result.problems.append(f"{ctx.path}: {where}: must be an object of servers by name")
                continue
            part = read_entries(
                self.id,
                ctx.path,
                where,
                cast(dict[Any, Any], container),
                lambda raw, draft: self.normalise(raw, draft, ctx),
            )
            result.servers.extend(part.servers)
            result.problems.extend(part.problems)
        return result

    def normalise(self, raw: Mapping[str, Any], draft: Draft, ctx: FileContext) -> Entry:
        """One entry in toolscout's shape; notes go to `draft`."""
        entry, consumed = standard_entry(raw, draft, url_keys=self.url_keys)
        consumed |= self.extra_keys(raw, entry, draft, ctx)
        note_unused(raw, consumed, draft, self.display_name)
        if self.vscode_variables:
            variables = self.variable_context(ctx)
            entry = apply_strings(entry, lambda s: vscode_variables(s, variables, draft, self.display_name))
        return entry

    def extra_keys(self, raw: Mapping[str, Any], entry: Entry, draft: Draft, ctx: FileContext) -> set[str]:
        """Handle client-specific keys (updating `entry`); return the keys consumed."""
        return set()

    def variable_context(self, ctx: FileContext) -> VariableContext:
        return VariableContext(project=ctx.project)

    def to_client_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        out = generic_client_entry(entry, url_key=self.client_url_key)
        if entry.get("disabled"):
            out["disabled"] = True
        return to_env_references(out) if self.vscode_variables else out


def _envfile_note(raw: Mapping[str, Any], draft: Draft) -> set[str]:
    if "envFile" in raw:
        draft.note(
            f"dropped `envFile` ({raw['envFile']}): toolscout reads no env files per server;"
            " add its variables to `env` or to toolscout's environment"
        )
    return {"envFile"}


class McpJson(McpJsonClient):
    """Any `{"mcpServers": {...}}` file named by path (also toolscout's own JSON config)."""

    id = "mcp-json"
    display_name = "MCP JSON file"
    installable = False
    not_installable_reason = "a generic file has no default location; name the client instead"
    docs_url = "https://modelcontextprotocol.io/quickstart/user"

    def locations(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> list[ConfigLocation]:
        return []

    def containers(self, ctx: FileContext) -> list[tuple[str, Any]]:
        # VS Code-style files name the object `servers`; accept them when there is no `mcpServers`.
        if "mcpServers" not in ctx.data and isinstance(ctx.data.get("servers"), dict):
            return [("servers", ctx.data["servers"])]
        return super().containers(ctx)

    def extra_keys(self, raw: Mapping[str, Any], entry: Entry, draft: Draft, ctx: FileContext) -> set[str]:
        if raw.get("connectTimeout") is not None:
            entry["connectTimeout"] = number(raw["connectTimeout"], "connectTimeout")
        if isinstance(raw.get("protocol"), str):
            entry["protocol"] = raw["protocol"]
        return {"connectTimeout", "protocol"}

    def to_client_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        out = generic_client_entry(entry)
        for key in ("disabled", "description", "timeout", "connectTimeout", "protocol"):
            if key in entry:
                out[key] = entry[key]
        return out


class ClaudeDesktop(McpJsonClient):
    """Claude Desktop's `claude_desktop_config.json`."""

    id = "claude-desktop"
    display_name = "Claude Desktop"
    docs_url = "https://modelcontextprotocol.io/quickstart/user"
    msix_package = "Claude_pzs8sxrjxfjjc"

    def locations(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> list[ConfigLocation]:
        found = [
            ConfigLocation(user_config_root(home, platform, env) / "Claude" / "claude_desktop_config.json", "user")
        ]
        if platform == "win32":
            found.append(ConfigLocation(self._msix_dir(home, env) / "claude_desktop_config.json", "user"))
        return found

    def _msix_package(self, home: Path, env: Mapping[str, str]) -> Path:
        return localappdata(home, env) / "Packages" / self.msix_package

    def _msix_dir(self, home: Path, env: Mapping[str, str]) -> Path:
        # The MSIX build (the default Windows installer since 2026) is sandboxed: it
        # reads a virtualised copy of %APPDATA%, not %APPDATA% itself.
        return self._msix_package(home, env) / "LocalCache" / "Roaming" / "Claude"

    def install_location(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> Path:
        if platform == "win32" and self._msix_package(home, env).is_dir():
            return self._msix_dir(home, env) / "claude_desktop_config.json"
        return self.locations(home=home, cwd=cwd, platform=platform, env=env)[0].path

    def to_client_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        out = generic_client_entry(entry)
        if entry.get("disabled"):
            out["disabled"] = True  # ignored by Claude Desktop itself, kept so a later import sees it
        return out


class Cursor(McpJsonClient):
    """Cursor's `mcp.json`, global and per project."""

    id = "cursor"
    display_name = "Cursor"
    docs_url = "https://cursor.com/docs/mcp"
    vscode_variables = True

    def locations(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> list[ConfigLocation]:
        return [
            ConfigLocation(home / ".cursor" / "mcp.json", "user"),
            ConfigLocation(cwd / ".cursor" / "mcp.json", "project", project=cwd),
        ]

    def install_location(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> Path:
        return home / ".cursor" / "mcp.json"

    def extra_keys(self, raw: Mapping[str, Any], entry: Entry, draft: Draft, ctx: FileContext) -> set[str]:
        if "auth" in raw:
            draft.note("dropped `auth` (Cursor's static OAuth client); toolscout sends only `headers`")
        return _envfile_note(raw, draft) | {"auth"}


class Windsurf(McpJsonClient):
    """Windsurf (Codeium) Cascade's `mcp_config.json`."""

    id = "windsurf"
    display_name = "Windsurf"
    docs_url = "https://docs.windsurf.com/windsurf/cascade/mcp"
    url_keys = ("serverUrl", "url")
    client_url_key = "serverUrl"
    vscode_variables = True

    def locations(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> list[ConfigLocation]:
        return [ConfigLocation(home / ".codeium" / "windsurf" / "mcp_config.json", "user")]

    def install_location(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> Path:
        return home / ".codeium" / "windsurf" / "mcp_config.json"

    def extra_keys(self, raw: Mapping[str, Any], entry: Entry, draft: Draft, ctx: FileContext) -> set[str]:
        tools = str_list(raw.get("disabledTools"), "disabledTools", draft)
        if tools:
            draft.tool_rules.append(exclude_rule(draft.name, tools))
            draft.note(f"`disabledTools` became a toolRules entry disabling {', '.join(tools)}")
        return {"disabledTools"}


def _settings_block(data: Mapping[str, Any]) -> Mapping[str, Any]:
    block = data.get("mcp")
    return cast(dict[str, Any], block) if isinstance(block, dict) else {}


class VSCode(McpJsonClient):
    """VS Code (GitHub Copilot agent mode) MCP configuration."""

    id = "vscode"
    display_name = "VS Code"
    docs_url = "https://code.visualstudio.com/docs/copilot/reference/mcp-configuration"
    # Since VS Code 1.102 user servers live in the profile's own `mcp.json`; the
    # `mcp` block of settings.json is still read, but is no place to add to.
    servers_key: tuple[str, ...] = ("servers",)
    vscode_variables = True

    def _user_dir(self, home: Path, platform: str, env: Mapping[str, str]) -> Path:
        return user_config_root(home, platform, env) / "Code" / "User"

    def locations(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> list[ConfigLocation]:
        user = self._user_dir(home, platform, env)
        return [
            ConfigLocation(cwd / ".vscode" / "mcp.json", "project", project=cwd),
            ConfigLocation(user / "mcp.json", "user"),
            ConfigLocation(user / "settings.json", "user"),
        ]

    def install_location(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> Path:
        return self._user_dir(home, platform, env) / "mcp.json"

    def read(self, path: Path, *, project: Path | None = None) -> ReadResult:
        """Read `mcp.json` or `settings.json`; a `.vscode/mcp.json` belongs to the folder above `.vscode`."""
        if project is None and path.parent.name == ".vscode":
            project = path.parent.parent.absolute()
        return super().read(path, project=project)

    def _is_settings(self, ctx: FileContext) -> bool:
        return ctx.path.name == "settings.json"

    def containers(self, ctx: FileContext) -> list[tuple[str, Any]]:
        if self._is_settings(ctx):
            if "servers" in _settings_block(ctx.data):
                return [("mcp.servers", _settings_block(ctx.data)["servers"])]
            return [("mcp.servers", ctx.data.get("mcp.servers"))]
        return [("servers", ctx.data.get("servers"))]

    def variable_context(self, ctx: FileContext) -> VariableContext:
        raw = _settings_block(ctx.data).get("inputs") if self._is_settings(ctx) else ctx.data.get("inputs")
        inputs: dict[str, Mapping[str, Any]] = {}
        for item in cast(list[Any], raw) if isinstance(raw, list) else []:
            if isinstance(item, dict) and isinstance(cast(dict[str, Any], item).get("id"), str):
                spec = cast(dict[str, Any], item)
                inputs[spec["id"]] = spec
        return VariableContext(project=ctx.project, inputs=inputs)

    def extra_keys(self, raw: Mapping[str, Any], entry: Entry, draft: Draft, ctx: FileContext) -> set[str]:
        consumed = _envfile_note(raw, draft)
        if "dev" in raw:
            draft.note("dropped `dev` (VS Code's watch-and-debug mode for server authors)")
        for key in ("sandboxEnabled", "sandbox"):
            if key in raw:
                draft.note(f"dropped `{key}`: toolscout does not sandbox servers; VS Code did")
        return consumed | {"dev", "sandboxEnabled", "sandbox"}

    def to_client_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        # VS Code documents `type` as required on every entry.
        return to_env_references(generic_client_entry(entry, with_type=True))
