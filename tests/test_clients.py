"""Client formats: where each MCP client keeps servers, and reading them into toolscout's shape.

Platforms are passed as strings and homes are folders under tmp_path: nothing here
depends on the machine the tests run on.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from ruamel.yaml import YAML

from toolscout.client_configs import CLIENTS, ConfigLocation, DiscoveredServer, client, discover, is_toolscout_entry
from toolscout.client_configs.entries import exclude_rule, include_rule
from toolscout.config.loader import parse_config
from toolscout.config.rules import RuleSet, ToolRule
from toolscout.errors import ConfigurationError

FIXTURES = Path(__file__).parent / "fixtures" / "clients"
NO_ENV: dict[str, str] = {}


def entries(servers: list[DiscoveredServer]) -> dict[str, dict[str, Any]]:
    return {server.name: server.entry for server in servers}


def notes(servers: list[DiscoveredServer]) -> dict[str, tuple[str, ...]]:
    return {server.name: server.notes for server in servers if server.notes}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home" / "alice"
    path.mkdir(parents=True)
    return path


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "work" / "shop"
    path.mkdir(parents=True)
    return path


# --- locations -------------------------------------------------------------------------------------


def locations(client_id: str, home: Path, cwd: Path, platform: str, env: dict[str, str] | None = None) -> list[Any]:
    found = CLIENTS[client_id].locations(home=home, cwd=cwd, platform=platform, env=env or NO_ENV)
    return [(loc.path, loc.scope, loc.project) for loc in found]


def test_claude_desktop_locations_per_platform(home: Path, cwd: Path) -> None:
    name = "claude_desktop_config.json"
    assert locations("claude-desktop", home, cwd, "darwin") == [
        (home / "Library" / "Application Support" / "Claude" / name, "user", None)
    ]
    assert locations("claude-desktop", home, cwd, "linux") == [(home / ".config" / "Claude" / name, "user", None)]
    assert locations("claude-desktop", home, cwd, "linux", {"XDG_CONFIG_HOME": "/xdg"}) == [
        (Path("/xdg/Claude") / name, "user", None)
    ]
    msix = Path("/local/Packages/Claude_pzs8sxrjxfjjc/LocalCache/Roaming/Claude") / name
    assert locations("claude-desktop", home, cwd, "win32", {"APPDATA": "/roaming", "LOCALAPPDATA": "/local"}) == [
        (Path("/roaming/Claude") / name, "user", None),
        (msix, "user", None),
    ]
    # Without %APPDATA% the standard folders under the home are used.
    assert locations("claude-desktop", home, cwd, "win32")[0][0] == home / "AppData" / "Roaming" / "Claude" / name


def test_claude_code_locations(home: Path, cwd: Path) -> None:
    found = locations("claude-code", home, cwd, "linux")
    assert found[:2] == [(home / ".claude.json", "user", None), (home / ".claude.json", "project", cwd)]
    # `.mcp.json` is looked up in the working directory and every folder above it.
    assert found[2:] == [(folder / ".mcp.json", "project", folder) for folder in (cwd, *cwd.parents)]
    moved = locations("claude-code", home, cwd, "darwin", {"CLAUDE_CONFIG_DIR": "/cfg"})
    assert moved[0] == (Path("/cfg/.claude.json"), "user", None)


@pytest.mark.parametrize("platform", ["linux", "darwin", "win32"])
def test_home_based_locations_are_the_same_on_every_platform(home: Path, cwd: Path, platform: str) -> None:
    assert locations("cursor", home, cwd, platform) == [
        (home / ".cursor" / "mcp.json", "user", None),
        (cwd / ".cursor" / "mcp.json", "project", cwd),
    ]
    assert locations("windsurf", home, cwd, platform) == [
        (home / ".codeium" / "windsurf" / "mcp_config.json", "user", None),
        (home / ".windsurf" / "mcp.json", "user", None),  # the path some guides give
    ]
    assert locations("gemini", home, cwd, platform) == [
        (home / ".gemini" / "settings.json", "user", None),
        (cwd / ".gemini" / "settings.json", "project", cwd),
    ]
    assert locations("codex", home, cwd, platform) == [
        (home / ".codex" / "config.toml", "user", None),
        (cwd / ".codex" / "config.toml", "project", cwd),
    ]
    assert locations("docker", home, cwd, platform) == [
        (home / ".docker" / "mcp" / "registry.yaml", "user", None),
        (home / ".docker" / "mcp-servers.json", "user", None),
    ]
    assert locations("custom-yaml", home, cwd, platform) == []
    assert locations("mcp-json", home, cwd, platform) == []


def test_codex_home_moves_the_user_file(home: Path, cwd: Path) -> None:
    assert locations("codex", home, cwd, "linux", {"CODEX_HOME": "/opt/codex"})[0] == (
        Path("/opt/codex/config.toml"),
        "user",
        None,
    )


@pytest.mark.parametrize(
    ("platform", "env", "user_dir"),
    [
        ("linux", {}, Path(".config/Code/User")),
        ("darwin", {}, Path("Library/Application Support/Code/User")),
        ("win32", {}, Path("AppData/Roaming/Code/User")),
    ],
)
def test_vscode_locations(home: Path, cwd: Path, platform: str, env: dict[str, str], user_dir: Path) -> None:
    assert locations("vscode", home, cwd, platform, env) == [
        (cwd / ".vscode" / "mcp.json", "project", cwd),
        (home / user_dir / "mcp.json", "user", None),
        (home / user_dir / "settings.json", "user", None),
    ]
    windows = locations("vscode", home, cwd, "win32", {"APPDATA": "/roaming"})
    assert windows[1][0] == Path("/roaming/Code/User/mcp.json")


# --- discover --------------------------------------------------------------------------------------


def place(source: str, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURES / source, target)
    return target


def test_discover_finds_only_existing_files(home: Path, cwd: Path) -> None:
    desktop = place("claude-desktop/claude_desktop_config.json", home / ".config/Claude/claude_desktop_config.json")
    cursor_project = place("cursor/project/.cursor/mcp.json", cwd / ".cursor/mcp.json")
    vscode_settings = place("vscode/settings.json", home / ".config/Code/User/settings.json")
    codex = place("codex/config.toml", home / ".codex/config.toml")
    registry = place("docker/registry.yaml", home / ".docker/mcp/registry.yaml")
    # A file of the right name in a place no client reads is not found.
    place("windsurf/mcp_config.json", home / ".codeium/mcp_config.json")

    found = discover(home=home, cwd=cwd, platform="linux", env=NO_ENV)

    assert [(fmt.id, loc.path, loc.scope) for fmt, loc in found] == [
        ("claude-desktop", desktop, "user"),
        ("cursor", cursor_project, "project"),
        ("vscode", vscode_settings, "user"),
        ("codex", codex, "user"),
        ("docker", registry, "user"),
    ]


def test_windsurf_is_found_where_windsurf_and_the_guides_look(home: Path, cwd: Path) -> None:
    real = place("windsurf/mcp_config.json", home / ".codeium/windsurf/mcp_config.json")
    specs = place("windsurf/mcp_config.json", home / ".windsurf/mcp.json")
    found = discover(home=home, cwd=cwd, platform="linux", env=NO_ENV, only=["windsurf"])
    assert [(fmt.id, loc.path) for fmt, loc in found] == [("windsurf", real), ("windsurf", specs)]
    read = found[1][0].read(specs)
    assert read.servers and not read.problems  # the same format: serverUrl and all


def test_discover_only_some_clients(home: Path, cwd: Path) -> None:
    place("codex/config.toml", home / ".codex/config.toml")
    place("gemini/settings.json", cwd / ".gemini/settings.json")
    found = discover(home=home, cwd=cwd, platform="darwin", env=NO_ENV, only=["gemini"])
    assert [(fmt.id, loc) for fmt, loc in found] == [
        ("gemini", ConfigLocation(cwd / ".gemini" / "settings.json", "project", project=cwd))
    ]
    with pytest.raises(ConfigurationError, match=r"unknown client 'gemni'.*did you mean 'gemini'"):
        discover(home=home, cwd=cwd, platform="darwin", env=NO_ENV, only=["gemni"])


def test_discover_names_a_file_once_when_the_project_is_the_home(home: Path) -> None:
    place("cursor/mcp.json", home / ".cursor/mcp.json")
    found = discover(home=home, cwd=home, platform="linux", env=NO_ENV, only=["cursor"])
    assert [loc.scope for _, loc in found] == ["user"]


def test_discover_claude_code_local_scope_only_for_a_project_with_servers(home: Path, cwd: Path) -> None:
    data = json.loads((FIXTURES / "claude-code/.claude.json").read_text())
    (home / ".claude.json").write_text(json.dumps(data))
    found = discover(home=home, cwd=cwd, platform="linux", env=NO_ENV, only=["claude-code"])
    assert [(loc.path, loc.scope, loc.project) for _, loc in found] == [(home / ".claude.json", "user", None)]

    data["projects"][str(cwd)] = data["projects"].pop("/home/alice/src/shop")
    (home / ".claude.json").write_text(json.dumps(data))
    place("claude-code/.mcp.json", cwd / ".mcp.json")
    found = discover(home=home, cwd=cwd, platform="linux", env=NO_ENV, only=["claude-code"])
    assert [(loc.path, loc.scope, loc.project) for _, loc in found] == [
        (home / ".claude.json", "user", None),
        (home / ".claude.json", "project", cwd),
        (cwd / ".mcp.json", "project", cwd),
    ]
    fmt, local = found[1]
    assert list(entries(fmt.read_location(local).servers)) == ["postgres"]


# --- reading each client's files --------------------------------------------------------------------


def read(client_id: str, fixture: str, project: Path | None = None) -> list[DiscoveredServer]:
    result = CLIENTS[client_id].read(FIXTURES / fixture, project=project)
    assert result.problems == []
    assert all(s.client == client_id and s.source == FIXTURES / fixture for s in result.servers)
    return result.servers


def test_read_claude_desktop() -> None:
    servers = read("claude-desktop", "claude-desktop/claude_desktop_config.json")
    assert entries(servers) == {
        "filesystem": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/alice/Desktop", "/Users/alice/Downloads"],
        },
        "github": {
            "command": "docker",
            "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"},
        },
        "sqlite": {
            "command": "uvx",
            "args": ["mcp-server-sqlite", "--db-path", "/Users/alice/test.db"],
            "env": {"SQLITE_TIMEOUT": "30"},
        },
        "toolscout": {"command": "/Users/alice/.local/bin/toolscout", "args": ["serve"]},
    }
    assert notes(servers) == {"sqlite": ("non-string values of `env` were converted to strings",)}
    assert [s.name for s in servers if is_toolscout_entry(s.entry)] == ["toolscout"]


def test_read_claude_code_user_and_local_scopes() -> None:
    user = read("claude-code", "claude-code/.claude.json")
    assert entries(user) == {
        "context7": {"command": "npx", "args": ["-y", "@upstash/context7-mcp"]},
        "sentry": {"url": "https://mcp.sentry.dev/mcp"},
        "linear": {
            "url": "https://mcp.linear.app/sse",
            "headers": {"Authorization": "Bearer ${LINEAR_API_KEY}"},
            "transport": "sse",
        },
    }
    local = read("claude-code", "claude-code/.claude.json", project=Path("/home/alice/src/shop/"))
    assert entries(local) == {
        "postgres": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-postgres", "postgresql://localhost/shop"],
        }
    }
    assert read("claude-code", "claude-code/.claude.json", project=Path("/home/alice/src/blog")) == []
    assert read("claude-code", "claude-code/.claude.json", project=Path("/elsewhere")) == []


def test_read_claude_code_project_file() -> None:
    servers = read("claude-code", "claude-code/.mcp.json")
    assert entries(servers) == {
        # Claude Code's `${VAR:-default}` is toolscout's syntax too: kept as written.
        "api-server": {
            "url": "${API_BASE_URL:-https://api.example.com}/mcp",
            "headers": {"Authorization": "Bearer ${API_KEY}"},
            "transport": "sse",
        },
        "internal": {"url": "https://mcp.internal.example.com/mcp"},
        "playwright": {"command": "npx", "args": ["@playwright/mcp@latest"]},
    }
    assert notes(servers) == {
        "internal": ("dropped `headersHelper` (a command Claude Code runs for headers); put the headers in `headers`",)
    }


def test_read_cursor_global_and_project() -> None:
    assert entries(read("cursor", "cursor/mcp.json")) == {
        "brave-search": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-brave-search"],
            "env": {"BRAVE_API_KEY": "${BRAVE_API_KEY}"},
        },
        "userjot": {
            "url": "https://api.userjot.com/v1/mcp",
            "headers": {"Authorization": "Bearer ${USERJOT_API_TOKEN}"},
        },
        "atlassian": {"url": "https://mcp.atlassian.com/v1/sse", "transport": "sse"},
    }
    project = Path("/home/alice/src/shop")
    servers = read("cursor", "cursor/project/.cursor/mcp.json", project=project)
    assert entries(servers) == {
        "docs": {"command": "node", "args": ["/home/alice/src/shop/tools/docs-server.js", "--root", "${HOME}/notes"]},
        "figma": {"url": "http://127.0.0.1:3845/mcp", "oauth": {"clientId": "cursor-figma", "scopes": ["read"]}},
    }
    assert notes(servers) == {
        "docs": (
            "dropped `envFile` (${workspaceFolder}/.env): toolscout reads no env files per server;"
            " add its variables to `env` or to toolscout's environment",
            "`${workspaceFolder}` became /home/alice/src/shop",
            "`${userHome}` became `${HOME}`: toolscout reads it from its environment",
        ),
        "figma": ("kept `auth` as `oauth` (clientId, scopes): sign in with `toolscout auth login figma`",),
    }


def test_claude_code_oauth_settings_are_kept_as_far_as_they_can_be() -> None:
    from toolscout.client_configs.entries import CLAUDE_CODE_OAUTH_KEYS, Draft, keep_oauth

    entry: dict[str, object] = {"url": "https://mcp.example.com/mcp"}
    draft = Draft("linear")
    given = {
        "clientId": "abc",
        "callbackPort": 8080,
        "scopes": "read write",
        "authServerMetadataUrl": "https://auth.example.com/.well-known/oauth-authorization-server",
    }
    keep_oauth(given, entry, draft, "oauth", CLAUDE_CODE_OAUTH_KEYS)
    # Claude Code's redirect URI, exactly: a client registered for Claude Code accepts no other.
    assert entry["oauth"] == {
        "clientId": "abc",
        "redirectUri": "http://localhost:8080/callback",
        "scopes": ["read", "write"],
    }
    assert draft.notes == [
        "dropped `oauth.authServerMetadataUrl`: toolscout's OAuth settings have no such setting, or not of this kind",
        "kept `oauth` as `oauth` (clientId, redirectUri, scopes): sign in with `toolscout auth login linear`",
        "the client keeps a client secret (if it has one) outside its file: add it as `oauth.clientSecret`, as a "
        "${VAR} reference to keep it out of toolscout's file",
    ]
    # What is kept is a valid toolscout entry.
    from toolscout.config.models import HttpServerConfig

    assert HttpServerConfig.model_validate(entry).oauth is not None
    broken = Draft("x")
    keep_oauth("yes", {}, broken, "oauth", CLAUDE_CODE_OAUTH_KEYS)
    assert broken.notes == ["dropped `oauth`: the client's OAuth settings must be an object"]


def test_cursor_project_file_read_without_its_project_asks_for_the_folder() -> None:
    result = CLIENTS["cursor"].read(FIXTURES / "cursor/project/.cursor/mcp.json")
    docs = entries(result.servers)["docs"]
    assert docs["args"][0] == "${WORKSPACE_FOLDER}/tools/docs-server.js"
    assert any("set WORKSPACE_FOLDER" in note for note in result.servers[0].notes)


def test_read_vscode_workspace_file_with_inputs_comments_and_trailing_commas() -> None:
    servers = read("vscode", "vscode/project/.vscode/mcp.json")
    project = str((FIXTURES / "vscode/project").absolute())
    assert entries(servers) == {
        "Perplexity": {
            "command": "npx",
            "args": ["-y", "server-perplexity-ask"],
            "env": {"PERPLEXITY_API_KEY": "${PERPLEXITY_KEY}"},
        },
        "github": {"url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
        "fetch": {"command": "uvx", "args": ["mcp-server-fetch"]},
        "my-server": {
            "command": "node",
            # An input with a default keeps it as toolscout's `${VAR:-default}`.
            "args": [f"{project}/build/index.js", "--log-level", "${LOG_LEVEL:-info}"],
            "env": {"DEBUG": "${DEBUG}"},
            "cwd": project,
        },
        "legacy-sse": {"url": "http://localhost:3001/sse", "transport": "sse"},
    }
    assert notes(servers) == {
        "Perplexity": (
            "VS Code prompted for input `perplexity-key` (Perplexity API Key);"
            " set PERPLEXITY_KEY in toolscout's environment instead",
        ),
        "github": (
            "VS Code prompted for input `githubToken` (GitHub personal access token);"
            " set GITHUB_TOKEN in toolscout's environment instead",
        ),
        "fetch": (
            "dropped `envFile` (${workspaceFolder}/.env): toolscout reads no env files per server;"
            " add its variables to `env` or to toolscout's environment",
        ),
        "my-server": (
            "dropped `dev` (VS Code's watch-and-debug mode for server authors)",
            f"`${{workspaceFolder}}` became {project}",
            "VS Code prompted for input `log_level` (Log level); set LOG_LEVEL in toolscout's environment instead",
        ),
    }


def test_read_vscode_user_files() -> None:
    servers = read("vscode", "vscode/settings.json")
    assert entries(servers) == {
        "memory": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-memory"],
            "env": {"MEMORY_FILE_PATH": "${HOME}/.mcp/memory.json"},
        }
    }
    assert notes(servers) == {"memory": ("`${userHome}` became `${HOME}`: toolscout reads it from its environment",)}
    assert entries(read("vscode", "vscode/mcp.json")) == {
        "microsoft-docs": {"url": "https://learn.microsoft.com/api/mcp"}
    }


def test_read_windsurf() -> None:
    servers = read("windsurf", "windsurf/mcp_config.json")
    assert entries(servers) == {
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"},
        },
        "zapier": {"url": "https://actions.zapier.com/mcp/sk-ak-example/sse"},
        "figma": {"url": "https://mcp.figma.com/mcp", "headers": {"Authorization": "Bearer ${FIGMA_TOKEN}"}},
        "puppeteer": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-puppeteer"], "disabled": True},
        "notes": {"url": "https://notes.example.com/mcp"},
    }
    github = servers[0]
    assert github.notes == ("`disabledTools` became a toolRules entry disabling delete_repository, push_files",)
    assert github.tool_rules == (
        {"server": "github", "pattern": ["delete_repository", "push_files"], "enabled": False},
    )


def test_read_gemini() -> None:
    servers = read("gemini", "gemini/settings.json")
    assert entries(servers) == {
        "pythonTools": {
            "command": "python",
            "args": ["-m", "my_mcp_server", "--port", "8080"],
            "env": {"DATABASE_URL": "${DB_CONNECTION_STRING}", "API_KEY": "${EXTERNAL_API_KEY}"},
            "cwd": "./mcp-servers/python",
            "timeout": 15.0,
        },
        "httpServerWithAuth": {
            "url": "http://localhost:3000/mcp",
            "headers": {"Authorization": "Bearer ${MY_TOKEN}"},
            "description": "Internal tools over streamable HTTP",
            "timeout": 5.0,
        },
        "discoveredServer": {"url": "https://api.example.com/sse", "transport": "sse"},
        "filteredServer": {"command": "python", "args": ["-m", "my_mcp_server"]},
        "experimental": {"command": "node", "args": ["experimental.js"], "disabled": True},
        "googleCloudServer": {"url": "https://my-gcp-service.run.app/mcp"},
    }
    assert notes(servers) == {
        "pythonTools": ("`timeout` 15000 ms became 15 s", "`$VAR` references became `${VAR}`"),
        "httpServerWithAuth": ("`timeout` 5000 ms became 5 s", "`$VAR` references became `${VAR}`"),
        "filteredServer": (
            "dropped `trust: true`: toolscout does not confirm tool calls; the agent in front of it does",
            "`excludeTools` became a toolRules entry disabling file_reader",
            "`includeTools` became a toolRules entry disabling every tool but safe_tool, file_reader, data_processor",
        ),
        "experimental": ("disabled: Gemini CLI's `mcp.excluded` lists it",),
        "googleCloudServer": (
            "dropped `authProviderType`, `oauth`: toolscout has no equivalent of these Gemini CLI settings",
        ),
    }


def test_gemini_tool_filters_become_rules_with_the_same_effect() -> None:
    filtered = next(s for s in read("gemini", "gemini/settings.json") if s.name == "filteredServer")
    rules = RuleSet([ToolRule.model_validate(rule) for rule in filtered.tool_rules])
    assert rules.verdict("filteredServer", "safe_tool").enabled
    assert rules.verdict("filteredServer", "data_processor").enabled
    assert not rules.verdict("filteredServer", "file_reader").enabled  # excludeTools wins, as in Gemini
    assert not rules.verdict("filteredServer", "delete_everything").enabled
    assert rules.verdict("otherServer", "delete_everything").enabled  # other servers are untouched


def test_tool_rules_match_names_literally() -> None:
    rules = RuleSet(
        [ToolRule.model_validate(exclude_rule("a[1]", ["get*"])), ToolRule.model_validate(include_rule("b", ["x?"]))]
    )
    assert not rules.verdict("a[1]", "get*").enabled
    assert rules.verdict("a[1]", "get_all").enabled
    assert rules.verdict("a1", "get*").enabled
    assert rules.verdict("b", "x?").enabled
    assert not rules.verdict("b", "xy").enabled


def test_read_codex() -> None:
    servers = read("codex", "codex/config.toml")
    assert entries(servers) == {
        "context7": {
            "command": "npx",
            "args": ["-y", "@upstash/context7-mcp"],
            "timeout": 120.0,
            "connectTimeout": 20.0,
        },
        "github": {
            "command": "docker",
            "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
            # `env_vars` passes a variable through from the environment, set or not.
            "env": {
                "GITHUB_TOOLSETS": "issues,repos",
                "GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_PERSONAL_ACCESS_TOKEN:-}",
            },
        },
        "figma": {
            "url": "https://mcp.figma.com/mcp",
            "headers": {
                "X-Figma-Region": "us-east-1",
                "X-Figma-Team": "${FIGMA_TEAM}",
                "Authorization": "Bearer ${FIGMA_OAUTH_TOKEN}",
            },
        },
        "legacy": {
            "command": "legacy-mcp",
            "cwd": "/Users/alice/code/legacy",
            "disabled": True,
            "connectTimeout": 15.0,
        },
    }
    by_name = {s.name: s for s in servers}
    assert by_name["github"].tool_rules == (
        {"server": "github", "pattern": ["*", "!list_issues", "!get_issue"], "enabled": False},
    )
    assert by_name["figma"].tool_rules == ({"server": "figma", "pattern": ["delete_file"], "enabled": False},)
    assert by_name["legacy"].notes == ("`startup_timeout_ms` 15000 became connectTimeout in seconds",)


def test_read_docker_registry_runs_each_enabled_server_through_the_gateway() -> None:
    servers = read("docker", "docker/registry.yaml")
    assert entries(servers) == {
        name: {"command": "docker", "args": ["mcp", "gateway", "run", f"--servers={name}"]}
        for name in ("duckduckgo", "fetch", "github-official")
    }
    assert all("docker mcp gateway run" in s.notes[0] for s in servers)


def test_read_docker_empty_registry_imports_the_whole_gateway() -> None:
    servers = read("docker", "docker/registry-empty.yaml")
    assert entries(servers) == {"MCP_DOCKER": {"command": "docker", "args": ["mcp", "gateway", "run"]}}
    assert "whole Docker MCP gateway" in servers[0].notes[0]


def test_read_docker_servers_json() -> None:
    assert entries(read("docker", "docker/mcp-servers.json")) == {
        "MCP_DOCKER": {"command": "docker", "args": ["mcp", "gateway", "run"]},
        "time": {"command": "docker", "args": ["run", "-i", "--rm", "mcp/time"]},
    }


def test_read_custom_yaml_with_static_tools() -> None:
    servers = read("custom-yaml", "custom-yaml/servers.yaml")
    assert entries(servers) == {
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"},
            "description": "GitHub API integration",
            "tools": [
                {"name": "create_issue", "description": "Create a GitHub issue"},
                {"name": "list_repos", "description": "List GitHub repositories"},
            ],
        },
        "search": {
            "url": "https://search.example.com/mcp",
            "headers": {"Authorization": "Bearer ${SEARCH_TOKEN:-anonymous}"},
            "tools": [
                {
                    "name": "web_search",
                    "description": "Search the web",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"query": {"type": "string"}},
                        "required": ["query"],
                    },
                }
            ],
        },
        # YAML 1.2: a server called `off` stays a name.
        "off": {"url": "http://localhost:8080/sse", "transport": "sse"},
    }
    assert notes(servers) == {}


def test_read_generic_mcp_json() -> None:
    assert entries(read("mcp-json", "mcp-json/toolscout.json")) == {
        "time": {
            "command": "mcp-server-time",
            "args": ["--local-timezone", "UTC"],
            "env": {"TZ": "${TZ:-UTC}"},
            "cwd": "/tmp",
        },
        "everything": {
            "url": "http://127.0.0.1:3001/mcp",
            "headers": {"Authorization": "Bearer ${TOKEN}"},
            "timeout": 120.0,
            "connectTimeout": 10.0,
        },
        "legacy": {
            "url": "http://127.0.0.1:3002/sse",
            "transport": "sse",
            "disabled": True,
            "description": "The old events server",
        },
    }


ALL_FIXTURES = [
    ("claude-desktop", "claude-desktop/claude_desktop_config.json"),
    ("claude-code", "claude-code/.claude.json"),
    ("claude-code", "claude-code/.mcp.json"),
    ("cursor", "cursor/mcp.json"),
    ("cursor", "cursor/project/.cursor/mcp.json"),
    ("vscode", "vscode/project/.vscode/mcp.json"),
    ("vscode", "vscode/settings.json"),
    ("vscode", "vscode/mcp.json"),
    ("windsurf", "windsurf/mcp_config.json"),
    ("gemini", "gemini/settings.json"),
    ("codex", "codex/config.toml"),
    ("docker", "docker/registry.yaml"),
    ("docker", "docker/mcp-servers.json"),
    ("custom-yaml", "custom-yaml/servers.yaml"),
    ("mcp-json", "mcp-json/toolscout.json"),
]


@pytest.mark.parametrize(("client_id", "fixture"), ALL_FIXTURES)
def test_every_entry_and_rule_is_valid_toolscout_config(client_id: str, fixture: str) -> None:
    servers = read(client_id, fixture)
    text = json.dumps(
        {
            "mcpServers": {s.name: s.entry for s in servers},
            "toolRules": [rule for s in servers for rule in s.tool_rules],
        }
    )
    # toolscout validates after interpolation: variables without a default must be set.
    env = dict.fromkeys(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", text), "value")
    config = parse_config(text, "json", fixture, env)
    assert set(config.mcp_servers) == {s.name for s in servers}


# --- broken files and entries ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client_id", "fixture", "position"),
    [
        ("claude-desktop", "claude-desktop/broken.json", "line 5, column 7"),
        ("claude-code", "claude-code/broken.json", "line 6, column 1"),
        ("vscode", "vscode/broken-settings.json", "line 9, column 13"),
        ("gemini", "gemini/broken.json", "line 5, column 24"),
        ("codex", "codex/broken.toml", "line 6, column 1"),
        ("docker", "docker/broken-registry.yaml", "line 4, column 4"),
        ("custom-yaml", "custom-yaml/broken.yaml", "line 5, column 14"),
    ],
)
def test_broken_files_give_a_problem_with_path_and_position(client_id: str, fixture: str, position: str) -> None:
    result = CLIENTS[client_id].read(FIXTURES / fixture)
    assert result.servers == []
    assert len(result.problems) == 1
    assert result.problems[0].startswith(f"{FIXTURES / fixture}: {position}: ")


@pytest.mark.parametrize("client_id", sorted(CLIENTS))
def test_missing_or_unreadable_files_are_problems_not_exceptions(client_id: str, tmp_path: Path) -> None:
    suffix = {"codex": ".toml", "docker": ".yaml", "custom-yaml": ".yaml"}.get(client_id, ".json")
    missing = tmp_path / f"missing{suffix}"
    result = CLIENTS[client_id].read(missing)
    assert result.servers == []
    assert result.problems == [f"{missing}: cannot read: No such file or directory"]


def write_json_servers(path: Path, servers: dict[str, Any], key: tuple[str, ...] = ("mcpServers",)) -> Path:
    document: dict[str, Any] = {}
    cursor = document
    for part in key[:-1]:
        cursor = cursor.setdefault(part, {})
    cursor[key[-1]] = servers
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2))
    return path


def test_bad_entries_are_problems_and_the_others_are_still_read(tmp_path: Path) -> None:
    path = write_json_servers(
        tmp_path / "mcp.json",
        {
            "ok": {"command": "ok-server"},
            "listed": ["not", "an", "object"],
            "nothing": {"env": {"A": "1"}},
            "bad-args": {"command": "x", "args": [{"nested": True}]},
            "bad-type": {"type": "websocket", "url": "ws://x"},
            "sse-without-url": {"type": "sse", "command": "x"},
        },
    )
    result = CLIENTS["cursor"].read(path)
    assert entries(result.servers) == {"ok": {"command": "ok-server"}}
    assert result.problems == [
        f"{path}: mcpServers.listed: the entry must be an object, got a list",
        f"{path}: mcpServers.nothing: needs either `command` (a stdio server) or `url` (a remote server)",
        f"{path}: mcpServers.bad-args: `args` must be a list of strings, found an object",
        f"{path}: mcpServers.bad-type: unknown `type` 'websocket'; expected stdio, http or sse",
        f"{path}: mcpServers.sse-without-url: an SSE server needs `url`",
    ]


def test_a_top_level_that_is_not_an_object_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    path.write_text("[1, 2]")
    assert CLIENTS["claude-desktop"].read(path).problems == [f"{path}: the top level must be a JSON object"]
    path.write_text('{"mcpServers": []}')
    assert CLIENTS["claude-desktop"].read(path).problems == [
        f"{path}: mcpServers: must be an object of servers by name"
    ]


def test_empty_files_hold_no_servers(tmp_path: Path) -> None:
    for name in ("settings.json", "config.toml", "registry.yaml"):
        (tmp_path / name).write_text("  \n// nothing yet\n" if name.endswith(".json") else "\n")
    assert CLIENTS["vscode"].read(tmp_path / "settings.json").servers == []
    assert CLIENTS["vscode"].read(tmp_path / "settings.json").problems == []
    assert CLIENTS["codex"].read(tmp_path / "config.toml").problems == []
    assert [s.name for s in CLIENTS["docker"].read(tmp_path / "registry.yaml").servers] == ["MCP_DOCKER"]


def test_not_utf8_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_bytes(b'{\n  "mcpServers": {"caf\xe9": {}}\n}')
    assert CLIENTS["cursor"].read(path).problems == [f"{path}: line 2, column 22: not UTF-8 text"]


# --- the tolerant JSON reader ---------------------------------------------------------------------------------


def test_jsonc_errors_point_into_the_original_text(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{\n  /* long\n     comment */ "a": 1 "b": 2\n}')
    column = path.read_text().splitlines()[2].index('"b"') + 1
    assert CLIENTS["vscode"].read(path).problems == [
        f"{path}: line 3, column {column}: expected ',' or '}}' after an object member, found '\"'"
    ]


def test_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    path.write_bytes(b'\xef\xbb\xbf{"mcpServers": {"a": {"command": "a"}}}')
    assert entries(CLIENTS["claude-desktop"].read(path).servers) == {"a": {"command": "a"}}


# --- recognising toolscout ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"command": "toolscout", "args": ["serve"]}, True),
        ({"command": "/Users/alice/.local/bin/toolscout", "args": ["serve", "--config", "x.yaml"]}, True),
        ({"command": "C:\\Users\\alice\\.local\\bin\\toolscout.exe", "args": ["serve"]}, True),
        ({"command": "python", "args": ["-m", "toolscout", "serve"]}, True),
        ({"command": "/repo/.venv/bin/python3", "args": ["-m", "toolscout.cli", "serve"]}, True),
        ({"command": "uvx", "args": ["toolscout", "serve"]}, True),
        ({"command": "uvx", "args": ["--from", "toolscout==0.1.0", "toolscout", "serve"]}, True),
        ({"command": "pipx", "args": ["run", "toolscout[http]>=0.1", "serve"]}, True),
        (
            {"type": "stdio", "command": "uv", "args": ["run", "--directory", "/src/toolscout", "toolscout", "serve"]},
            True,
        ),
        ({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp/toolscout.json"]}, False),
        ({"command": "toolscout-helper", "args": []}, False),
        ({"command": "python", "args": ["-m", "toolscoutish"]}, False),
        ({"command": "python", "args": ["-m", "toolscout.demo.notes"]}, False),  # a demo server, not the gateway
        ({"url": "http://127.0.0.1:8000/mcp"}, False),
        ({"command": "docker", "args": ["mcp", "gateway", "run"]}, False),
    ],
)
def test_is_toolscout_entry(entry: dict[str, Any], expected: bool) -> None:
    assert is_toolscout_entry(entry) is expected


# --- looking clients up ---------------------------------------------------------------------------------------------


def test_client_lookup_and_did_you_mean() -> None:
    assert client("cursor") is CLIENTS["cursor"]
    assert client(" VSCode ") is CLIENTS["vscode"]
    with pytest.raises(ConfigurationError) as caught:
        client("curser")
    assert caught.value.message == (
        "unknown client 'curser'; known: claude-code, claude-desktop, codex, cursor, custom-yaml, docker, gemini,"
        " mcp-json, vscode, windsurf; did you mean 'cursor'?"
    )
    with pytest.raises(ConfigurationError, match=r"unknown client 'zzzz'; known: [^?]*$"):
        client("zzzz")


def test_every_client_is_listed_and_documented() -> None:
    assert set(CLIENTS) == {
        "claude-desktop",
        "claude-code",
        "cursor",
        "vscode",
        "windsurf",
        "gemini",
        "codex",
        "docker",
        "custom-yaml",
        "mcp-json",
    }
    doc = (Path(__file__).parent.parent / "docs" / "CLIENTS.md").read_text()
    for client_id, fmt in CLIENTS.items():
        assert f"`{client_id}`" in doc
        assert fmt.docs_url in doc


# --- installing toolscout ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client_id", "platform", "relative", "key"),
    [
        ("claude-desktop", "darwin", "Library/Application Support/Claude/claude_desktop_config.json", ("mcpServers",)),
        ("claude-desktop", "linux", ".config/Claude/claude_desktop_config.json", ("mcpServers",)),
        ("claude-desktop", "win32", "AppData/Roaming/Claude/claude_desktop_config.json", ("mcpServers",)),
        ("claude-code", "linux", ".claude.json", ("mcpServers",)),
        ("cursor", "win32", ".cursor/mcp.json", ("mcpServers",)),
        ("vscode", "darwin", "Library/Application Support/Code/User/mcp.json", ("servers",)),
        ("vscode", "linux", ".config/Code/User/mcp.json", ("servers",)),
        ("windsurf", "darwin", ".codeium/windsurf/mcp_config.json", ("mcpServers",)),
        ("gemini", "linux", ".gemini/settings.json", ("mcpServers",)),
        ("codex", "darwin", ".codex/config.toml", ("mcp_servers",)),
    ],
)
def test_install_location(
    home: Path, cwd: Path, client_id: str, platform: str, relative: str, key: tuple[str, ...]
) -> None:
    fmt = CLIENTS[client_id]
    assert fmt.installable
    assert fmt.install_location(home=home, cwd=cwd, platform=platform, env=NO_ENV) == home / relative
    assert fmt.servers_key == key


def test_claude_desktop_installs_into_the_msix_package_when_it_is_there(home: Path, cwd: Path) -> None:
    env = {"LOCALAPPDATA": str(home / "Local")}
    package = home / "Local" / "Packages" / "Claude_pzs8sxrjxfjjc"
    package.mkdir(parents=True)
    found = CLIENTS["claude-desktop"].install_location(home=home, cwd=cwd, platform="win32", env=env)
    assert found == package / "LocalCache" / "Roaming" / "Claude" / "claude_desktop_config.json"


@pytest.mark.parametrize("client_id", ["docker", "custom-yaml", "mcp-json"])
def test_some_clients_cannot_take_toolscout(home: Path, cwd: Path, client_id: str) -> None:
    fmt = CLIENTS[client_id]
    assert not fmt.installable
    with pytest.raises(ConfigurationError, match="toolscout cannot be installed into"):
        fmt.install_location(home=home, cwd=cwd, platform="linux", env=NO_ENV)
    with pytest.raises(ConfigurationError, match="toolscout cannot be installed into"):
        fmt.server_entry("toolscout", ["serve"])


@pytest.mark.parametrize(
    ("client_id", "expected"),
    [
        ("claude-desktop", {"command": "toolscout", "args": ["serve"]}),
        ("claude-code", {"type": "stdio", "command": "toolscout", "args": ["serve"]}),
        ("cursor", {"command": "toolscout", "args": ["serve"]}),
        ("vscode", {"type": "stdio", "command": "toolscout", "args": ["serve"]}),
        ("windsurf", {"command": "toolscout", "args": ["serve"]}),
        ("gemini", {"command": "toolscout", "args": ["serve"]}),
        ("codex", {"command": "toolscout", "args": ["serve"]}),
    ],
)
def test_server_entry(client_id: str, expected: dict[str, Any]) -> None:
    entry = CLIENTS[client_id].server_entry("toolscout", ["serve"])
    assert entry == expected
    assert is_toolscout_entry(entry)


# --- round trips: read(to_client_entry(e)) == e ---------------------------------------------------------------------

STDIO = {"command": "npx", "args": ["-y", "server"], "env": {"TOKEN": "${TOKEN}"}, "cwd": "/srv"}
HTTP = {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}", "X-Team": "core"}}
SSE = {"url": "https://mcp.example.com/events", "transport": "sse"}

ROUND_TRIPS: dict[str, list[dict[str, Any]]] = {
    "claude-desktop": [STDIO, HTTP, SSE, {"command": "x", "disabled": True}],
    # Claude Code documents no `cwd`.
    "claude-code": [{k: v for k, v in STDIO.items() if k != "cwd"}, HTTP, SSE],
    "cursor": [STDIO, HTTP, SSE, {**HTTP, "disabled": True}],
    "vscode": [STDIO, HTTP, SSE],
    "windsurf": [STDIO, HTTP, SSE, {"command": "x", "disabled": True}],
    "gemini": [{**STDIO, "timeout": 30.0, "description": "d"}, {**HTTP, "timeout": 1.5}, SSE],
    "codex": [
        {**STDIO, "env": {"TOKEN": "${TOKEN:-}", "MODE": "fast"}, "timeout": 90.0, "connectTimeout": 20.0},
        {"url": "https://x/mcp", "headers": {"Authorization": "Bearer ${T}", "X-A": "${A}", "X-B": "b"}},
        {"command": "x", "disabled": True},
    ],
    "docker": [STDIO, HTTP, SSE, {"command": "x", "disabled": True}],
    "custom-yaml": [
        {**STDIO, "description": "d", "tools": [{"name": "t", "description": "T", "inputSchema": {"type": "object"}}]},
        {**SSE, "timeout": 5.0, "disabled": True},
    ],
    "mcp-json": [STDIO, {**HTTP, "timeout": 9.0, "connectTimeout": 3.0, "description": "d"}, {**SSE, "disabled": True}],
}

FILE_NAMES = {
    "claude-desktop": "claude_desktop_config.json",
    "claude-code": ".claude.json",
    "cursor": "mcp.json",
    "vscode": "mcp.json",
    "windsurf": "mcp_config.json",
    "gemini": "settings.json",
    "codex": "config.toml",
    "docker": "mcp-servers.json",
    "custom-yaml": "servers.yaml",
    "mcp-json": "servers.json",
}


@pytest.mark.parametrize("client_id", sorted(ROUND_TRIPS))
def test_to_client_entry_round_trips(tmp_path: Path, client_id: str) -> None:
    fmt = CLIENTS[client_id]
    originals = {f"s{i}": entry for i, entry in enumerate(ROUND_TRIPS[client_id])}
    written = {name: fmt.to_client_entry(entry) for name, entry in originals.items()}
    path = tmp_path / FILE_NAMES[client_id]
    if client_id == "codex":
        path.write_text(tomlkit.dumps({"mcp_servers": written}))
    elif client_id == "custom-yaml":
        YAML(typ="safe", pure=True).dump({"servers": written}, path)  # pyright: ignore[reportUnknownMemberType]
    else:
        key = ("mcpServers",) if client_id in ("docker", "mcp-json") else fmt.servers_key
        write_json_servers(path, written, key)
    result = fmt.read(path)
    assert result.problems == []
    assert entries(result.servers) == originals


def test_client_entries_use_the_client_spelling() -> None:
    assert CLIENTS["windsurf"].to_client_entry(HTTP) == {
        "serverUrl": "https://mcp.example.com/mcp",
        "headers": {"Authorization": "Bearer ${env:TOKEN}", "X-Team": "core"},
    }
    assert CLIENTS["vscode"].to_client_entry({"command": "x", "env": {"A": "${A:-1}", "B": "$${B}"}}) == {
        "type": "stdio",
        "command": "x",
        "args": [],
        "env": {"A": "${env:A}", "B": "$${B}"},
    }
    assert CLIENTS["gemini"].to_client_entry({**HTTP, "timeout": 2.0}) == {
        "httpUrl": "https://mcp.example.com/mcp",
        "headers": HTTP["headers"],
        "timeout": 2000,
    }
    assert CLIENTS["codex"].to_client_entry(
        {"command": "x", "env": {"K": "${K}", "L": "${OTHER}"}, "disabled": True, "timeout": 5.0}
    ) == {
        "command": "x",
        "args": [],
        "env": {"L": "${OTHER}"},
        "env_vars": ["K"],
        "enabled": False,
        "tool_timeout_sec": 5.0,
    }
    assert CLIENTS["custom-yaml"].to_client_entry({**HTTP, "description": "d"}) == {
        "connection": {"type": "http", **HTTP},
        "description": "d",
    }


def test_gemini_oauth_is_kept_only_for_the_mcp_sign_in(tmp_path: Path) -> None:
    linear = {"httpUrl": "https://mcp.linear.app/mcp", "oauth": {"enabled": True, "clientId": "x", "scopes": ["read"]}}
    gcp = {"httpUrl": "https://x.run.app/mcp", "authProviderType": "google_credentials", "oauth": {"scopes": ["s"]}}
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"mcpServers": {"linear": linear, "gcp": gcp}}))
    found = entries(CLIENTS["gemini"].read(settings).servers)
    # A client Gemini CLI's user registered expects Gemini's default redirect URI.
    assert found["linear"]["oauth"] == {
        "clientId": "x",
        "scopes": ["read"],
        "redirectUri": "http://localhost:7777/oauth/callback",
    }
    assert "oauth" not in found["gcp"]


def test_gemini_redirect_uri_is_kept_when_it_is_a_loopback_one(tmp_path: Path) -> None:
    own = {
        "httpUrl": "https://a.example.com/mcp",
        "oauth": {"clientId": "x", "redirectUri": "http://127.0.0.1:9000/cb"},
    }
    away = {"httpUrl": "https://b.example.com/mcp", "oauth": {"redirectUri": "https://app.example.com/cb"}}
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"mcpServers": {"own": own, "away": away}}))
    servers = CLIENTS["gemini"].read(settings).servers
    found = entries(servers)
    assert found["own"]["oauth"] == {"clientId": "x", "redirectUri": "http://127.0.0.1:9000/cb"}
    assert "oauth" not in found["away"]
    (note,) = notes(servers)["away"]
    assert note.startswith("dropped `oauth.redirectUri`: 'https://app.example.com/cb' is not a loopback redirect URI")
