"""The client formats: where each MCP client keeps its servers, and how its file reads.

The clients whose files are JSON come first. `McpJsonClient` reads any JSON file (leniently:
comments and trailing commas are accepted) and hands each server entry to `normalise`; subclasses
choose where the servers are (`containers`), which keys hold a URL, and whether the client's
`${env:NAME}`-style variables need rewriting. VS Code differs most: a top-level `servers` object
(not `mcpServers`), an explicit `type` on every entry, an `inputs` list of values VS Code prompts
for and substitutes as `${input:id}`, and user servers in the profile's `mcp.json` or, in older
setups, the `mcp` block of `settings.json` (JSON with comments).

The terminal coding agents follow: Claude Code, Gemini CLI and Codex. Each keeps servers in a user
file and per project, and each has its own quirks: Claude Code's per-project entries inside
`~/.claude.json`, Gemini's `httpUrl`, millisecond timeouts and tool filters, Codex's TOML tables
and token variables.

Last, the formats toolscout reads but cannot install into: Docker's MCP Toolkit and the custom YAML
format. Docker's Toolkit keeps no client-style server entries. `~/.docker/mcp/registry.yaml` lists
the catalog servers the user enabled (`registry: {<name>: {ref: ...}}`), and every client is told
to run one stdio command, `docker mcp gateway run`, which starts the enabled servers in containers
with their config and secrets. So an import runs that gateway: one entry per enabled server, each
limited to it with `--servers=<name>` (so toolscout keeps servers apart and one failing server does
not take the others down), or, when the registry lists none, the whole gateway as one server named
`MCP_DOCKER`, as `docker mcp client connect` names it.
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
    DiscoveredServer,
    ReadResult,
    localappdata,
    user_config_root,
)
from toolscout.client_configs.entries import (
    CLAUDE_CODE_OAUTH_KEYS,
    CURSOR_OAUTH_KEYS,
    GEMINI_OAUTH_KEYS,
    GEMINI_REDIRECT_URI,
    Draft,
    Entry,
    EntryError,
    VariableContext,
    apply_strings,
    as_dict,
    exclude_rule,
    generic_client_entry,
    keep_oauth,
    load_json,
    load_toml,
    load_yaml,
    note_unused,
    number,
    read_entries,
    remote_fields,
    standard_entry,
    stdio_fields,
    str_list,
    str_map,
    tool_filters,
    vscode_variables,
)

__all__ = [
    "GATEWAY_NAME",
    "ClaudeCode",
    "ClaudeDesktop",
    "Codex",
    "Cursor",
    "CustomYaml",
    "Docker",
    "FileContext",
    "Gemini",
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
    """Return the entry with toolscout's `${VAR}` and `${VAR:-default}` written as `${env:VAR}`
    (VS Code, Cursor, Windsurf).

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
            keep_oauth(raw["auth"], entry, draft, "auth", CURSOR_OAUTH_KEYS)
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
        # Windsurf reads the first; the second is the path some guides give for it, and a file
        # there is read in the same shape.
        return [
            ConfigLocation(home / ".codeium" / "windsurf" / "mcp_config.json", "user"),
            ConfigLocation(home / ".windsurf" / "mcp.json", "user"),
        ]

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


def _same_folder(key: str, folder: Path) -> bool:
    def norm(text: str) -> str:
        text = text.replace("\\", "/").rstrip("/")
        # Windows drive paths compare without case, as Windows does.
        return text.lower() if re.match(r"^[A-Za-z]:", text) else text

    return norm(key) == norm(str(folder))


class ClaudeCode(McpJsonClient):
    """Claude Code: `~/.claude.json` (user and per-project "local" scope) and `.mcp.json` (project scope)."""

    id = "claude-code"
    display_name = "Claude Code"
    docs_url = "https://code.claude.com/docs/en/mcp"

    def _user_file(self, home: Path, env: Mapping[str, str]) -> Path:
        return (
            Path(env["CLAUDE_CONFIG_DIR"]) / ".claude.json" if env.get("CLAUDE_CONFIG_DIR") else home / ".claude.json"
        )

    def locations(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> list[ConfigLocation]:
        user = self._user_file(home, env)
        found = [ConfigLocation(user, "user"), ConfigLocation(user, "project", project=cwd)]
        # Claude Code finds `.mcp.json` in the working directory or any folder above it.
        found += [ConfigLocation(folder / ".mcp.json", "project", project=folder) for folder in (cwd, *cwd.parents)]
        return found

    def install_location(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> Path:
        return self._user_file(home, env)

    def is_user_file(self, path: Path) -> bool:
        """Whether `path` is a `.claude.json` (user and per-project servers), not a project `.mcp.json`."""
        return path.name == ".claude.json"

    def containers(self, ctx: FileContext) -> list[tuple[str, Any]]:
        if not self.is_user_file(ctx.path) or ctx.project is None:
            return [("mcpServers", ctx.data.get("mcpServers"))]
        projects = ctx.data.get("projects")
        if not isinstance(projects, dict):
            return []
        for key, value in cast(dict[str, Any], projects).items():
            if _same_folder(key, ctx.project) and isinstance(value, dict):
                return [(f"projects[{key!r}].mcpServers", cast(dict[str, Any], value).get("mcpServers"))]
        return []

    def has_project(self, path: Path, project: Path) -> bool:
        """Whether `~/.claude.json` has a per-project entry with servers for `project`."""
        result = self.read(path, project=project)
        return bool(result.servers or result.problems)

    def extra_keys(self, raw: Mapping[str, Any], entry: Entry, draft: Draft, ctx: FileContext) -> set[str]:
        if "headersHelper" in raw:
            draft.note("dropped `headersHelper` (a command Claude Code runs for headers); put the headers in `headers`")
        if "oauth" in raw:
            keep_oauth(raw["oauth"], entry, draft, "oauth", CLAUDE_CODE_OAUTH_KEYS)
        return {"headersHelper", "oauth"}

    def to_client_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        # Claude Code writes `type` on every entry and documents no `cwd` or `disabled`.
        return generic_client_entry(entry, with_type=True, keep_cwd=False)


_GEMINI_VAR = re.compile(r"(?<!\$)\$([A-Za-z_][A-Za-z0-9_]*)")


class Gemini(McpJsonClient):
    """Gemini CLI's `settings.json`, user and project."""

    id = "gemini"
    display_name = "Gemini CLI"
    docs_url = "https://github.com/google-gemini/gemini-cli/blob/main/docs/tools/mcp-server.md"

    def locations(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> list[ConfigLocation]:
        return [
            ConfigLocation(home / ".gemini" / "settings.json", "user"),
            ConfigLocation(cwd / ".gemini" / "settings.json", "project", project=cwd),
        ]

    def install_location(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> Path:
        return home / ".gemini" / "settings.json"

    def normalise(self, raw: Mapping[str, Any], draft: Draft, ctx: FileContext) -> Entry:
        std = {k: v for k, v in raw.items() if k not in ("httpUrl", "timeout")}
        if raw.get("httpUrl") is not None:
            # Gemini picks `httpUrl` (streamable HTTP) before `url` (SSE).
            if raw.get("url") is not None:
                draft.note("`url` was ignored: `httpUrl` wins in Gemini CLI")
            std["url"] = raw["httpUrl"]
            std.setdefault("type", "http")
        elif raw.get("url") is not None and raw.get("command") is None:
            std.setdefault("type", "sse")
        entry, consumed = standard_entry(std, draft)
        consumed |= {"httpUrl", "timeout", "trust", "includeTools", "excludeTools"}
        # Its `oauth` is MCP's OAuth only with the default provider; Google credentials are another sign-in.
        if "oauth" in raw and raw.get("authProviderType", "dynamic_discovery") == "dynamic_discovery":
            consumed.add("oauth")
            keep_oauth(raw["oauth"], entry, draft, "oauth", GEMINI_OAUTH_KEYS, redirect_uri=GEMINI_REDIRECT_URI)
        if raw.get("timeout") is not None:
            millis = number(raw["timeout"], "timeout")
            entry["timeout"] = millis / 1000
            draft.note(f"`timeout` {raw['timeout']} ms became {millis / 1000:g} s")
        if raw.get("trust") is True:
            draft.note("dropped `trust: true`: toolscout does not confirm tool calls; the agent in front of it does")
        tool_filters(raw, draft, "excludeTools", "includeTools")
        self._excluded(ctx, draft, entry)
        note_unused(raw, consumed, draft, self.display_name)
        return apply_strings(entry, lambda s: self._braced(s, draft))

    def _excluded(self, ctx: FileContext, draft: Draft, entry: Entry) -> None:
        mcp = ctx.data.get("mcp")
        if not isinstance(mcp, dict):
            return
        settings = cast(dict[str, Any], mcp)
        excluded, allowed = settings.get("excluded"), settings.get("allowed")
        if isinstance(excluded, list) and draft.name in excluded:
            entry["disabled"] = True
            draft.note("disabled: Gemini CLI's `mcp.excluded` lists it")
        elif isinstance(allowed, list) and draft.name not in allowed:
            entry["disabled"] = True
            draft.note("disabled: Gemini CLI's `mcp.allowed` does not list it")

    def _braced(self, text: str, draft: Draft) -> str:
        converted = _GEMINI_VAR.sub(r"${\1}", text)
        if converted != text:
            draft.note("`$VAR` references became `${VAR}`")
        return converted

    def to_client_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        if "command" in entry:
            out = generic_client_entry(entry)
        else:
            out = {("url" if entry.get("transport") == "sse" else "httpUrl"): entry["url"]}
            if entry.get("headers"):
                out["headers"] = dict(entry["headers"])
        if "timeout" in entry:
            out["timeout"] = round(entry["timeout"] * 1000)
        if "description" in entry:
            out["description"] = entry["description"]
        return out


class Codex(BaseClient):
    """OpenAI Codex's `config.toml`: one `[mcp_servers.<name>]` table per server."""

    id = "codex"
    display_name = "Codex"
    docs_url = "https://github.com/openai/codex/blob/main/docs/config.md#mcp_servers"
    servers_key: tuple[str, ...] = ("mcp_servers",)

    def _home(self, home: Path, env: Mapping[str, str]) -> Path:
        return Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"

    def locations(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> list[ConfigLocation]:
        return [
            ConfigLocation(self._home(home, env) / "config.toml", "user"),
            ConfigLocation(cwd / ".codex" / "config.toml", "project", project=cwd),
        ]

    def install_location(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> Path:
        return self._home(home, env) / "config.toml"

    def read(self, path: Path, *, project: Path | None = None) -> ReadResult:
        """Read one `config.toml`; malformed files and tables become problems."""
        loaded = load_toml(path)
        if loaded.problem is not None:
            return ReadResult([], [loaded.problem])
        tables: Any = cast(dict[str, Any], loaded.data).get("mcp_servers")
        if tables is None:
            return ReadResult([], [])
        if not isinstance(tables, dict):
            return ReadResult([], [f"{path}: mcp_servers: must be a table of servers by name"])
        return read_entries(self.id, path, "mcp_servers", cast(dict[str, Any], tables), self.normalise, "the table")

    def normalise(self, raw: Mapping[str, Any], draft: Draft) -> Entry:
        consumed = {"command", "args", "env", "env_vars", "cwd", "url", "bearer_token_env_var", "bearer_token"}
        consumed |= {"http_headers", "env_http_headers", "enabled", "enabled_tools", "disabled_tools"}
        consumed |= {"tool_timeout_sec", "startup_timeout_sec", "startup_timeout_ms"}
        if raw.get("command") is not None:
            entry = stdio_fields(raw, draft)
            # `env_vars` lets these variables through from Codex's own environment;
            # `${VAR:-}` does the same in toolscout without failing when one is unset.
            for var in str_list(raw.get("env_vars"), "env_vars", draft):
                entry.setdefault("env", {}).setdefault(var, f"${{{var}:-}}")
        elif raw.get("url") is not None:
            entry = remote_fields(raw["url"], None, draft)
            entry.update(self._headers(raw, draft))
        else:
            raise EntryError("needs either `command` (a stdio server) or `url` (a streamable HTTP server)")
        if raw.get("enabled") is False:
            entry["disabled"] = True
        if raw.get("tool_timeout_sec") is not None:
            entry["timeout"] = number(raw["tool_timeout_sec"], "tool_timeout_sec")
        if raw.get("startup_timeout_sec") is not None:
            entry["connectTimeout"] = number(raw["startup_timeout_sec"], "startup_timeout_sec")
        elif raw.get("startup_timeout_ms") is not None:
            entry["connectTimeout"] = number(raw["startup_timeout_ms"], "startup_timeout_ms") / 1000
            draft.note(f"`startup_timeout_ms` {raw['startup_timeout_ms']} became connectTimeout in seconds")
        tool_filters(raw, draft, "disabled_tools", "enabled_tools")
        note_unused(raw, consumed, draft, self.display_name)
        return entry

    def _headers(self, raw: Mapping[str, Any], draft: Draft) -> Entry:
        headers = str_map(raw.get("http_headers"), "http_headers", draft)
        for header, var in str_map(raw.get("env_http_headers"), "env_http_headers", draft).items():
            headers[header] = f"${{{var}}}"
        if isinstance(raw.get("bearer_token_env_var"), str):
            headers["Authorization"] = f"Bearer ${{{raw['bearer_token_env_var']}}}"
        elif isinstance(raw.get("bearer_token"), str):
            headers["Authorization"] = f"Bearer {raw['bearer_token']}"
            draft.note("`bearer_token` is a secret written in the file; consider moving it to an environment variable")
        return {"headers": headers} if headers else {}

    def to_client_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        out: Entry = {}
        if "command" in entry:
            out["command"] = entry["command"]
            out["args"] = list(entry.get("args", []))
            env: dict[str, str] = {}
            passthrough: list[str] = []
            for key, value in entry.get("env", {}).items():
                if value in (f"${{{key}}}", f"${{{key}:-}}"):
                    passthrough.append(key)
                else:
                    env[key] = value  # Codex does not interpolate: other references stay literal
            if env:
                out["env"] = env
            if passthrough:
                out["env_vars"] = passthrough
            if entry.get("cwd"):
                out["cwd"] = entry["cwd"]
        else:
            out["url"] = entry["url"]
            out.update(self._client_headers(entry.get("headers", {})))
        if entry.get("disabled"):
            out["enabled"] = False
        if "timeout" in entry:
            out["tool_timeout_sec"] = entry["timeout"]
        if "connectTimeout" in entry:
            out["startup_timeout_sec"] = entry["connectTimeout"]
        return out

    def _client_headers(self, headers: Mapping[str, str]) -> Entry:
        out: Entry = {}
        plain: dict[str, str] = {}
        from_env: dict[str, str] = {}
        for header, value in headers.items():
            bearer = re.fullmatch(r"Bearer \$\{([A-Za-z_][A-Za-z0-9_]*)\}", value)
            whole = re.fullmatch(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", value)
            if header.lower() == "authorization" and bearer and "bearer_token_env_var" not in out:
                out["bearer_token_env_var"] = bearer.group(1)
            elif whole:
                from_env[header] = whole.group(1)
            else:
                plain[header] = value
        if plain:
            out["http_headers"] = plain
        if from_env:
            out["env_http_headers"] = from_env
        return out


GATEWAY_NAME = "MCP_DOCKER"
GATEWAY_COMMAND: Entry = {"command": "docker", "args": ["mcp", "gateway", "run"]}


def _yaml_mapping(path: Path) -> dict[str, Any] | ReadResult:
    """The YAML file's top-level mapping, or the problem that stops it being read."""
    loaded = load_yaml(path)
    if loaded.problem is not None:
        return ReadResult([], [loaded.problem])
    data: Any = loaded.data
    if not isinstance(data, dict):
        return ReadResult([], [f"{path}: the top level must be a mapping"])
    return cast(dict[str, Any], data)


class _DockerServersJson(McpJson):
    id = "docker"
    display_name = "Docker MCP Toolkit"


class Docker(BaseClient):
    """Docker Desktop's MCP Toolkit: the enabled-server registry, and `~/.docker/mcp-servers.json`."""

    id = "docker"
    display_name = "Docker MCP Toolkit"
    docs_url = "https://github.com/docker/mcp-gateway/blob/main/docs/mcp-gateway.md"
    installable = False
    not_installable_reason = (
        "the Toolkit runs catalog servers, not arbitrary commands; connect the Toolkit to toolscout instead "
        "(`toolscout config import --from docker`)"
    )

    def locations(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> list[ConfigLocation]:
        return [
            ConfigLocation(home / ".docker" / "mcp" / "registry.yaml", "user"),
            ConfigLocation(home / ".docker" / "mcp-servers.json", "user"),
        ]

    def read(self, path: Path, *, project: Path | None = None) -> ReadResult:
        """Read `registry.yaml` (any YAML file) or an `mcpServers`-shaped JSON file."""
        if path.suffix.lower() not in (".yaml", ".yml"):
            return _DockerServersJson().read(path, project=project)
        data = _yaml_mapping(path)
        if isinstance(data, ReadResult):
            return data
        registry: Any = data.get("registry")
        if registry is not None and not isinstance(registry, dict):
            return ReadResult([], [f"{path}: registry: must be a mapping of server names"])
        names = sorted(str(name) for name in cast(dict[Any, Any], registry or {}))
        if not names:
            note = (
                "the registry lists no enabled server: the whole Docker MCP gateway was imported as one server; "
                "it serves whatever you enable in the Toolkit later"
            )
            gateway = DiscoveredServer(GATEWAY_NAME, _gateway(), self.id, path, (note,))
            return ReadResult([gateway], [])
        servers = [
            DiscoveredServer(
                name,
                _gateway(f"--servers={name}"),
                self.id,
                path,
                (
                    "runs through the Docker MCP gateway (`docker mcp gateway run`), which keeps its config and "
                    "secrets; servers enabled in the Toolkit later need another import",
                ),
            )
            for name in names
        ]
        return ReadResult(servers, [])

    def to_client_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        """The entry as `~/.docker/mcp-servers.json` holds it (the registry holds names only)."""
        return _DockerServersJson().to_client_entry(entry)


def _gateway(*extra: str) -> Entry:
    return {"command": GATEWAY_COMMAND["command"], "args": [*GATEWAY_COMMAND["args"], *extra]}


class CustomYaml(BaseClient):
    """The custom YAML format: `servers.<name>` with `connection`, `description` and static `tools`."""

    id = "custom-yaml"
    display_name = "custom YAML file"
    docs_url = ""
    servers_key: tuple[str, ...] = ("servers",)
    installable = False
    not_installable_reason = "no client reads this format; it is an import source named by path"

    def locations(self, *, home: Path, cwd: Path, platform: str, env: Mapping[str, str]) -> list[ConfigLocation]:
        return []

    def read(self, path: Path, *, project: Path | None = None) -> ReadResult:
        """Read one YAML file of `servers`; bad entries become problems."""
        data = _yaml_mapping(path)
        if isinstance(data, ReadResult):
            return data
        table: Any = data.get("servers")
        if table is None:
            return ReadResult([], [f"{path}: no `servers` mapping"])
        if not isinstance(table, dict):
            return ReadResult([], [f"{path}: servers: must be a mapping of servers by name"])
        return read_entries(self.id, path, "servers", cast(dict[Any, Any], table), self.normalise, "the server")

    def normalise(self, raw: Mapping[str, Any], draft: Draft) -> Entry:
        connection = as_dict(raw.get("connection"), "`connection`")
        entry, consumed = standard_entry(connection, draft)
        note_unused(connection, consumed, draft, "connection")
        # `name` is a display name: the key stays the server's name.
        if isinstance(raw.get("description"), str) and raw["description"]:
            entry["description"] = raw["description"]
        if raw.get("timeout") is not None:
            entry["timeout"] = number(raw["timeout"], "timeout")
        if raw.get("disabled") is True or raw.get("enabled") is False:
            entry["disabled"] = True
        if raw.get("tools") is not None:
            entry["tools"] = _tools(raw["tools"], draft)
        note_unused(
            raw, {"name", "description", "connection", "tools", "timeout", "disabled", "enabled"}, draft, "server"
        )
        return entry

    def to_client_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        connection = generic_client_entry(entry, with_type=True)
        out: Entry = {"connection": connection}
        for key in ("description", "timeout", "disabled"):
            if key in entry:
                out[key] = entry[key]
        if "tools" in entry:
            out["tools"] = [dict(tool) for tool in entry["tools"]]
        return out


def _tools(value: Any, draft: Draft) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise EntryError("`tools` must be a list")
    tools: list[dict[str, Any]] = []
    for index, item in enumerate(cast(list[Any], value)):
        spec = as_dict(item, f"`tools[{index}]`")
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise EntryError(f"`tools[{index}].name` must be a non-empty string")
        tool: dict[str, Any] = {"name": name}
        for key in ("title", "description"):
            if isinstance(spec.get(key), str):
                tool[key] = spec[key]
        for key in ("inputSchema", "input_schema", "parameters"):
            if spec.get(key) is not None:
                tool["inputSchema"] = as_dict(spec[key], f"`tools[{index}].{key}`")
                if key != "inputSchema":
                    draft.note(f"`{key}` of tool {name} became `inputSchema`")
                break
        tools.append(tool)
    return tools
