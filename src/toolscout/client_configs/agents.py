"""The terminal coding agents: Claude Code, Gemini CLI and Codex.

Each keeps servers in a user file and per project, and each has its own quirks:
Claude Code's per-project entries inside `~/.claude.json`, Gemini's `httpUrl`,
millisecond timeouts and tool filters, Codex's TOML tables and token variables.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from toolscout.client_configs.base import BaseClient, ConfigLocation, ReadResult
from toolscout.client_configs.json_clients import FileContext, McpJsonClient
from toolscout.client_configs.normalize import (
    Draft,
    Entry,
    EntryError,
    generic_client_entry,
    note_unused,
    number,
    read_entries,
    remote_fields,
    standard_entry,
    stdio_fields,
    str_list,
    str_map,
)
from toolscout.client_configs.parsing import load_toml
from toolscout.client_configs.tool_filters import tool_filters
from toolscout.client_configs.variables import apply_strings

__all__ = ["ClaudeCode", "Codex", "Gemini"]


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
        return {"headersHelper"}

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
