"""`toolscout init | config ... | rules ... | install | uninstall` in a sandboxed home."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import TextIO

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.helpers.cli_sandbox import Sandbox, make_sandbox
from tests.helpers.paths import PYTHON
from toolscout.config import HttpServerConfig
from toolscout.config.loader import load_config

FIXTURES = Path(__file__).parent / "fixtures" / "clients"

DEMO_CLIENT = {
    "mcpServers": {
        "notes": {"command": PYTHON, "args": ["-m", "toolscout.demo.notes"]},
        "units": {
            "command": PYTHON,
            "args": ["-m", "toolscout.demo.units"],
            "env": {"UNITS_API_KEY": "sk-live-1234567890abcdef"},
        },
    },
    "globalShortcut": "Alt+Space",
}


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return make_sandbox(tmp_path)


def claude_desktop_file(sandbox: Sandbox) -> Path:
    return sandbox.home / ".config" / "Claude" / "claude_desktop_config.json"


def put_client_files(sandbox: Sandbox) -> None:
    """Real client files, each where its client keeps it on Linux."""
    places = {
        "claude-desktop/claude_desktop_config.json": ".config/Claude/claude_desktop_config.json",
        "cursor/mcp.json": ".cursor/mcp.json",
        "windsurf/mcp_config.json": ".codeium/windsurf/mcp_config.json",
        "gemini/settings.json": ".gemini/settings.json",
        "codex/config.toml": ".codex/config.toml",
        "vscode/settings.json": ".config/Code/User/settings.json",
    }
    for fixture, target in places.items():
        destination = sandbox.home / target
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / fixture, destination)


async def _meta_tools(command: str, args: list[str], env: dict[str, str], errlog: TextIO) -> list[str]:
    params = StdioServerParameters(command=command, args=args, env=env)
    async with Client(stdio_client(params, errlog=errlog)) as client:
        return [t.name for t in (await client.list_tools()).tools]


def test_the_sixty_second_path(sandbox: Sandbox) -> None:
    client_file = claude_desktop_file(sandbox)
    client_file.parent.mkdir(parents=True)
    client_file.write_text(json.dumps(DEMO_CLIENT, indent=2))

    init = sandbox.run("init")
    assert init.returncode == 0, init.stderr
    assert "+ notes (claude-desktop)" in init.stdout and "+ units (claude-desktop)" in init.stdout
    config = sandbox.user_config / "config.json"
    assert set(json.loads(config.read_text())["mcpServers"]) == {"notes", "units"}

    search = sandbox.run("search", "convert miles to kilometers")
    assert search.returncode == 0, search.stderr
    assert "units/convert_units" in search.stdout

    install = sandbox.run("install", "--client", "claude-desktop")
    assert install.returncode == 0, install.stderr
    installed = json.loads(client_file.read_text())
    entry = installed["mcpServers"]["toolscout"]
    assert entry["args"][-3:] == ["serve", "--config", str(config)]
    assert installed["globalShortcut"] == "Alt+Space"
    assert {"notes", "units"} <= set(installed["mcpServers"])  # without --replace the client keeps its servers
    assert "still starts its own 2 servers beside toolscout (notes, units)" in install.stdout
    assert "--replace" in install.stdout
    assert "DEBUG" not in search.stderr + install.stderr

    # The entry toolscout wrote starts a real gateway that the client can talk to.
    with open(os.devnull, "w") as quiet:
        names = anyio.run(_meta_tools, entry["command"], entry["args"], sandbox.env(), quiet)
    assert names == ["list_mcp_servers", "search_tools", "list_tools", "get_tool_details", "execute_tool"]


def test_install_replace_then_uninstall_restores_the_client(sandbox: Sandbox) -> None:
    client_file = claude_desktop_file(sandbox)
    client_file.parent.mkdir(parents=True)
    client_file.write_text(json.dumps(DEMO_CLIENT, indent=2))
    before = json.loads(client_file.read_text())
    assert sandbox.run("init", "--from", "cursor").returncode == 0  # an empty starting config

    done = sandbox.json("install", "--client", "claude-desktop", "--replace")
    assert sorted(done["moved"]) == ["notes", "units"]
    after = json.loads(client_file.read_text())
    assert set(after["mcpServers"]) == {"toolscout"}
    assert Path(done["backup"]).is_file()
    config = json.loads((sandbox.user_config / "config.json").read_text())
    assert set(config["mcpServers"]) == {"notes", "units"}
    state = sandbox.user_config / "installs.json"
    assert stat.S_IMODE(state.stat().st_mode) == 0o600

    # Installing again updates the entry and still remembers what was moved.
    again = sandbox.json("install", "--client", "claude-desktop")
    assert again["updated"] is True

    undone = sandbox.json("uninstall", "--client", "claude-desktop")
    assert sorted(undone["restored"]) == ["notes", "units"]
    assert json.loads(client_file.read_text()) == before

    nothing = sandbox.run("uninstall", "--client", "claude-desktop")
    assert nothing.returncode == 2
    assert "not installed" in nothing.stderr


def test_install_errors(sandbox: Sandbox) -> None:
    unknown = sandbox.run("install", "--client", "claude-desktp")
    assert unknown.returncode == 1
    assert "did you mean 'claude-desktop'?" in unknown.stderr

    no_config = sandbox.run("install", "--client", "cursor")
    assert no_config.returncode == 2
    assert "toolscout init" in no_config.stderr

    sandbox.write("work/toolscout.json", '{"mcpServers": {}}')
    not_installable = sandbox.run("install", "--client", "docker")
    assert not_installable.returncode == 2
    assert "cannot be installed into Docker" in not_installable.stderr

    # Claude Desktop's folder is a file here: nothing can be written, and nothing is left behind.
    blocker = sandbox.home / ".config" / "Claude"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("not a folder")
    blocked = sandbox.run("install", "--client", "claude-desktop")
    assert blocked.returncode == 2
    assert "Traceback" not in blocked.stderr and str(blocker) in blocked.stderr
    assert blocker.read_text() == "not a folder"


def test_import_every_client_format(sandbox: Sandbox) -> None:
    put_client_files(sandbox)
    plan = sandbox.json("config", "import", "--dry-run")
    assert plan["dryRun"] is True
    added = set(plan["added"]) | {r["to"] for r in plan["renamed"]}
    # One server from each client's fixture, at least.
    for name in ("filesystem", "github", "brave-search", "atlassian", "context7", "figma", "memory"):
        assert any(a == name or a.startswith(f"{name}-") for a in added), (name, added)
    assert {"name": "toolscout", "client": "claude-desktop", "reason": "toolscout itself"} in plan["skipped"]
    assert not (sandbox.user_config / "config.json").exists()

    done = sandbox.json("config", "import")
    config_path = Path(done["config"])
    assert config_path == sandbox.user_config / "config.json"
    config = json.loads(config_path.read_text())
    assert set(config["mcpServers"]) == set(done["added"]) | {r["to"] for r in done["renamed"]}
    assert any(
        rule.get("server", "").startswith("github") for rule in config.get("toolRules", [])
    )  # codex's tool filter
    assert "GITHUB_TOKEN" in done["unsetVariables"]

    validated = sandbox.run("config", "validate", "--json")
    # Valid structure, but variables like GITHUB_TOKEN are not set here: the loader says which.
    assert validated.returncode == 2
    assert "GITHUB_TOKEN is not set" in validated.stderr + validated.stdout

    again = sandbox.json("config", "import")
    assert again["added"] == [] and again["renamed"] == []


def test_import_reports_broken_files_and_imports_the_rest(sandbox: Sandbox) -> None:
    put_client_files(sandbox)
    (sandbox.home / ".cursor" / "mcp.json").write_text('{"mcpServers": {"x": {"command": "a",, }}}')
    done = sandbox.run("config", "import", "--from", "cursor", "--from", "claude-desktop")
    assert done.returncode == 2
    assert f"{sandbox.home / '.cursor' / 'mcp.json'}: line 1, column 38" in done.stdout
    config = json.loads((sandbox.user_config / "config.json").read_text())
    assert "filesystem" in config["mcpServers"]

    assert sandbox.run("config", "import", "--from", "notaclient").returncode == 1
    needs_file = sandbox.run("config", "import", "--from", "custom-yaml")
    assert needs_file.returncode == 1 and "--file" in needs_file.stderr


def test_custom_yaml_import_keeps_static_tools(sandbox: Sandbox) -> None:
    target = sandbox.cwd / "toolscout.yaml"
    target.write_text("# my gateway\nmcpServers: {}\n")
    done = sandbox.json(
        "config", "import", "--from", "custom-yaml", "--file", str(FIXTURES / "custom-yaml" / "servers.yaml")
    )
    assert done["added"]
    text = target.read_text()
    assert text.startswith("# my gateway\n")
    shown = sandbox.json("config", "show")
    github = shown["config"]["mcpServers"]["github"]
    assert [t["name"] for t in github["tools"]][:2] == ["create_issue", "list_repos"]


def test_extract_secrets_moves_them_to_dotenv_and_show_masks_them(sandbox: Sandbox) -> None:
    client_file = claude_desktop_file(sandbox)
    client_file.parent.mkdir(parents=True)
    client_file.write_text(json.dumps(DEMO_CLIENT))
    done = sandbox.json("config", "import", "--extract-secrets")
    assert done["secrets"] == ["UNITS_API_KEY"]
    env_file = sandbox.user_config / ".env"
    assert 'UNITS_API_KEY="sk-live-1234567890abcdef"' in env_file.read_text()
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    config = json.loads((sandbox.user_config / "config.json").read_text())
    assert config["mcpServers"]["units"]["env"] == {"UNITS_API_KEY": "${UNITS_API_KEY}"}

    # The gateway reads the .env next to its config.
    execute = sandbox.run(
        "execute", "units", "convert_units", "--args", '{"value": 1, "from_unit": "m", "to_unit": "cm"}'
    )
    assert execute.returncode == 0, execute.stderr

    # Literal secrets written straight into a config are never printed either.
    target = sandbox.write(
        "work/toolscout.json",
        json.dumps(
            {
                "mcpServers": {
                    "x": {
                        "command": "run",
                        "args": ["--api-key", "hunter2"],
                        "env": {"TOKEN": "sk-live-abcdefghijklmnop"},
                        "disabled": True,
                    },
                    "y": {"url": "https://user:pw@example.com/mcp?token=abc", "headers": {"X-Key": "k"}},
                }
            }
        ),
    )
    for args in (["config", "show"], ["config", "show", "--json"]):
        shown = sandbox.run(*args)
        assert shown.returncode == 0, shown.stderr
        for secret in ("hunter2", "sk-live-abcdefghijklmnop", "pw@", "token=abc", '"k"'):
            assert secret not in shown.stdout, (secret, shown.stdout)
    assert str(target) in sandbox.run("config", "path").stdout


def test_extract_secrets_moves_an_oauth_client_secret_to_dotenv_too(sandbox: Sandbox) -> None:
    # The two clients whose files keep a client secret: Cursor's `auth` and Gemini CLI's `oauth`.
    cursor_secret, gemini_secret = "cursor-client-secret-4d3c2b1a", "gemini-client-secret-8h7g6f5e"
    cursor_auth = {"CLIENT_ID": "fig", "CLIENT_SECRET": cursor_secret}
    cursor = {"figma": {"url": "https://mcp.figma.example/mcp", "auth": cursor_auth}}
    gemini_oauth = {"enabled": True, "clientId": "lin", "clientSecret": gemini_secret, "scopes": ["read"]}
    gemini = {"linear": {"httpUrl": "https://mcp.linear.example/mcp", "oauth": gemini_oauth}}
    sandbox.write("home/.cursor/mcp.json", json.dumps({"mcpServers": cursor}))
    sandbox.write("home/.gemini/settings.json", json.dumps({"mcpServers": gemini}))

    done = sandbox.json("config", "import", "--from", "cursor", "--from", "gemini", "--extract-secrets")
    assert done["secrets"] == ["FIGMA_CLIENT_SECRET", "LINEAR_CLIENT_SECRET"]
    env_file = sandbox.user_config / ".env"
    written = env_file.read_text()
    assert f'FIGMA_CLIENT_SECRET="{cursor_secret}"' in written
    assert f'LINEAR_CLIENT_SECRET="{gemini_secret}"' in written
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    config_file = sandbox.user_config / "config.json"
    text = config_file.read_text()
    assert cursor_secret not in text and gemini_secret not in text, text
    servers = json.loads(text)["mcpServers"]
    assert servers["figma"]["oauth"] == {"clientId": "fig", "clientSecret": "${FIGMA_CLIENT_SECRET}"}
    assert servers["linear"]["oauth"]["clientSecret"] == "${LINEAR_CLIENT_SECRET}"

    # The gateway reads them back from the .env: the sign-in gets the secrets themselves.
    loaded = load_config(config_file, env={}).mcp_servers
    secrets = {name: s.oauth.client_secret for name, s in loaded.items() if isinstance(s, HttpServerConfig) and s.oauth}
    assert secrets == {"figma": cursor_secret, "linear": gemini_secret}
    shown = sandbox.run("config", "show", "--json")
    assert shown.returncode == 0 and cursor_secret not in shown.stdout and gemini_secret not in shown.stdout


def test_config_commands(sandbox: Sandbox) -> None:
    missing = sandbox.run("config", "path")
    assert missing.returncode == 2 and "toolscout init" in missing.stderr

    sandbox.write(
        "work/toolscout.json",
        json.dumps(
            {
                "mcpServers": {
                    "units": {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]},
                    "ghost": {"command": "definitely-not-installed-xyz"},
                },
                "toolRules": [{"pattern": ["*"], "server": "nowhere", "enabled": False}],
            }
        ),
    )
    valid = sandbox.run("config", "validate")
    assert valid.returncode == 0
    assert "is valid: 2 servers, 1 tool rule." in valid.stdout
    assert "no server named 'nowhere'" in valid.stdout
    assert "'definitely-not-installed-xyz' is not on PATH" in valid.stdout

    sources = sandbox.json("config", "sources")
    assert sources["used"] == str(sandbox.cwd / "toolscout.json")

    sandbox.write("work/toolscout.json", '{"mcpServers": {"a": {"command": 1}}}')
    invalid = sandbox.run("config", "validate")
    assert invalid.returncode == 2
    assert "mcpServers.a.command: Input should be a valid string" in invalid.stderr


YAML_CONFIG = """\
# Team gateway: keep this comment.
mcpServers:
  units:  # unit conversion
    command: {python}
    args: [-m, toolscout.demo.units]
  notes:
    command: {python}
    args: [-m, toolscout.demo.notes]
"""


def test_rules_hide_edits_the_file_in_place_and_status_shows_it(sandbox: Sandbox) -> None:
    path = sandbox.write("work/toolscout.yaml", YAML_CONFIG.format(python=PYTHON))
    hidden = sandbox.run("rules", "hide", "delete_*")
    assert hidden.returncode == 0, hidden.stderr
    text = path.read_text()
    assert text.startswith("# Team gateway: keep this comment.\n")
    assert "units:  # unit conversion" in text
    assert list(path.parent.glob("toolscout.yaml.*.bak"))

    status = sandbox.json("rules", "status")
    notes = next(s for s in status["servers"] if s["server"] == "notes")
    assert [t["name"] for t in notes["tools"] if not t["enabled"]] == ["delete_note"]


def test_rules_show_removes_a_plain_hide_and_puts_a_glob_first(sandbox: Sandbox) -> None:
    sandbox.write("work/toolscout.yaml", YAML_CONFIG.format(python=PYTHON))
    sandbox.run("rules", "hide", "delete_*")
    sandbox.run("rules", "hide", "calculate", "--server", "units")
    # A plain name is checked against the remaining rules: removing its hide rule is enough.
    sandbox.run("rules", "hide", "get_note")
    assert sandbox.run("rules", "show", "get_note").returncode == 0
    assert sandbox.json("rules", "status")["rules"][0]["pattern"] == ["calculate"]
    # A glob cannot be checked without every tool name, so a show rule goes first.
    shown = sandbox.run("rules", "show", "delete_*")
    assert shown.returncode == 0
    rules = sandbox.json("rules", "status")["rules"]
    assert rules == [
        {"pattern": ["delete_*"], "enabled": True, "tags": []},
        {"pattern": ["calculate"], "server": "units", "enabled": False, "tags": []},
        {"pattern": ["*"], "enabled": True, "tags": []},
    ]

    human = sandbox.run("rules", "status", "--detailed")
    assert "units (connected): 2 visible, 1 hidden" in human.stdout
    assert "✗ calculate" in human.stdout


def test_rules_show_under_a_broader_hide_keeps_the_rest_visible(sandbox: Sandbox) -> None:
    sandbox.write("work/toolscout.yaml", YAML_CONFIG.format(python=PYTHON))
    sandbox.run("rules", "hide", "calculate", "--server", "units")
    # Showing a tool that a broader rule hides puts a show rule first, and keeps the rest visible.
    sandbox.run("rules", "hide", "*_note")
    sandbox.run("rules", "show", "get_note")
    status = sandbox.json("rules", "status")
    notes = next(s for s in status["servers"] if s["server"] == "notes")
    assert {t["name"] for t in notes["tools"] if t["enabled"]} == {"get_note", "list_notes", "search_notes"}
    assert status["rules"].count({"pattern": ["*"], "enabled": True, "tags": []}) == 1
    units = next(s for s in status["servers"] if s["server"] == "units")
    assert {t["name"] for t in units["tools"] if t["enabled"]} == {"convert_units", "list_units"}


def test_rules_hide_twice_changes_nothing_and_a_bad_pattern_is_refused(sandbox: Sandbox) -> None:
    path = sandbox.write("work/toolscout.yaml", YAML_CONFIG.format(python=PYTHON))
    first = sandbox.json("rules", "hide", "zz_*")
    assert first["changed"] is True and first["rules"][0] == {"pattern": ["zz_*"], "enabled": False}
    again = sandbox.json("rules", "hide", "zz_*")
    assert again["changed"] is False and "already hidden" in again["message"]
    assert sandbox.json("config", "path")["path"] == str(path)

    bad = sandbox.run("rules", "hide", "/(unclosed/")
    assert bad.returncode == 1 and "not a usable pattern" in bad.stderr


def test_init_never_overwrites_silently(sandbox: Sandbox) -> None:
    existing = sandbox.write("home/.config/toolscout/config.json", '{"mcpServers": {"mine": {"command": "x"}}}')
    refused = sandbox.run("init")
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert "mine" in existing.read_text()
    replaced = sandbox.run("init", "--yes")
    assert replaced.returncode == 0, replaced.stderr
    backups = list(existing.parent.glob("config.json.*.bak"))
    assert backups and "mine" in backups[0].read_text()


# How people write their client files: objects on one line, their own indentation. Restored byte for byte.
HAND_WRITTEN_CLIENT = f"""{{
  "mcpServers": {{
    "notes": {{"command": "{PYTHON}", "args": ["-m", "toolscout.demo.notes"]}},
    "units": {{
      "command": "{PYTHON}",
      "args": ["-m", "toolscout.demo.units"]
    }}
  }},
  "globalShortcut": "Alt+Space"
}}
"""


def test_round_trips_keep_one_backup_per_change_and_restore_the_client_byte_for_byte(sandbox: Sandbox) -> None:
    client_file = claude_desktop_file(sandbox)
    client_file.parent.mkdir(parents=True)
    client_file.write_text(HAND_WRITTEN_CLIENT)
    assert sandbox.run("init", "--from", "cursor").returncode == 0  # an empty starting config
    config = sandbox.user_config / "config.json"

    for _ in range(3):
        assert sandbox.run("install", "--client", "claude-desktop", "--replace").returncode == 0
        undone = sandbox.run("uninstall", "--client", "claude-desktop")
        assert undone.returncode == 0, undone.stderr
        assert client_file.read_text() == HAND_WRITTEN_CLIENT  # not the same JSON reformatted: the same bytes

    # Two versions of the client file ever existed besides the current one (as written, with toolscout),
    # and toolscout's config changed once (the servers moved in): one backup per real change.
    client_backups = sorted(p.read_text() for p in client_file.parent.glob("claude_desktop_config.json.*.bak"))
    assert len(client_backups) == 2 and HAND_WRITTEN_CLIENT in client_backups
    assert len(list(config.parent.glob("config.json.*.bak"))) == 1

    # Installing twice in a row changes nothing the second time: no new backup either.
    assert sandbox.run("install", "--client", "claude-desktop").returncode == 0
    assert sandbox.run("install", "--client", "claude-desktop").returncode == 0
    assert len(list(client_file.parent.glob("claude_desktop_config.json.*.bak"))) == 2


def test_uninstall_after_the_user_edited_the_file_keeps_their_edit(sandbox: Sandbox) -> None:
    client_file = claude_desktop_file(sandbox)
    client_file.parent.mkdir(parents=True)
    client_file.write_text(HAND_WRITTEN_CLIENT)
    assert sandbox.run("init", "--from", "cursor").returncode == 0
    assert sandbox.run("install", "--client", "claude-desktop", "--replace").returncode == 0
    edited = json.loads(client_file.read_text())
    edited["globalShortcut"] = "Ctrl+Space"  # changed by hand since toolscout wrote the file
    client_file.write_text(json.dumps(edited, indent=2))

    assert sandbox.run("uninstall", "--client", "claude-desktop").returncode == 0
    restored = json.loads(client_file.read_text())
    assert restored["globalShortcut"] == "Ctrl+Space"  # not the file as it was before the install
    assert set(restored["mcpServers"]) == {"notes", "units"}


def test_init_without_any_client_says_so_and_suggests_no_install(sandbox: Sandbox) -> None:
    done = sandbox.run("init")
    assert done.returncode == 0, done.stderr
    assert "No MCP servers were found in the clients on this machine" in done.stdout
    assert "install --client" not in done.stdout
    assert json.loads((sandbox.user_config / "config.json").read_text()) == {"mcpServers": {}}


def test_init_suggests_installing_into_the_client_the_servers_came_from(sandbox: Sandbox) -> None:
    cursor = sandbox.home / ".cursor" / "mcp.json"
    cursor.parent.mkdir(parents=True)
    cursor.write_text(
        json.dumps({"mcpServers": {"units": {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]}}})
    )
    done = sandbox.run("init")
    assert done.returncode == 0, done.stderr
    assert "`toolscout install --client cursor`" in done.stdout
