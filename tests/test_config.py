"""Configuration: formats, interpolation, lookup order, and every kind of mistake."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from toolscout.config import (
    GatewayConfig,
    HttpServerConfig,
    SseServerConfig,
    StdioServerConfig,
    find_config,
    load_config,
)
from toolscout.config.locations import candidate_paths, user_config_dir
from toolscout.errors import ConfigurationError

ISSUE_EXAMPLE = {
    "mcpServers": {
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"], "env": {"TZ": "${TZ:-UTC}"}},
        "everything": {"url": "http://127.0.0.1:3001/mcp"},
        "legacy": {
            "url": "http://127.0.0.1:3002/sse",
            "transport": "sse",
            "headers": {"Authorization": "Bearer ${TOKEN}"},
        },
        "off": {"command": "x", "disabled": True},
    },
    "toolRules": [{"pattern": ["*delete*", "/^drop_/i"], "enabled": False, "tags": ["dangerous"]}],
    "mode": "discovery",
}

YAML_EXAMPLE = """\
mcpServers:
  time:
    command: mcp-server-time
    args: ["--local-timezone", "UTC"]
    env: {TZ: "${TZ:-UTC}"}
  everything:
    url: http://127.0.0.1:3001/mcp
  legacy:
    url: http://127.0.0.1:3002/sse
    transport: sse
    headers: {Authorization: "Bearer ${TOKEN}"}
  off: {command: x, disabled: true}
toolRules:
  - pattern: ["*delete*", "/^drop_/i"]
    enabled: false
    tags: [dangerous]
mode: discovery
"""

TOML_EXAMPLE = """\
mode = "discovery"

[mcpServers.time]
command = "mcp-server-time"
args = ["--local-timezone", "UTC"]
env = { TZ = "${TZ:-UTC}" }

[mcpServers.everything]
url = "http://127.0.0.1:3001/mcp"

[mcpServers.legacy]
url = "http://127.0.0.1:3002/sse"
transport = "sse"
headers = { Authorization = "Bearer ${TOKEN}" }

[mcpServers.off]
command = "x"
disabled = true

[[toolRules]]
pattern = ["*delete*", "/^drop_/i"]
enabled = false
tags = ["dangerous"]
"""

ENV = {"TOKEN": "s3cret"}


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _check_example(config: GatewayConfig) -> None:
    servers = config.mcp_servers
    time = servers["time"]
    assert isinstance(time, StdioServerConfig)
    assert (time.command, time.args, time.env) == ("mcp-server-time", ["--local-timezone", "UTC"], {"TZ": "UTC"})
    assert isinstance(servers["everything"], HttpServerConfig)
    legacy = servers["legacy"]
    assert isinstance(legacy, SseServerConfig)
    assert legacy.headers == {"Authorization": "Bearer s3cret"}
    assert servers["off"].disabled
    assert config.tool_rules[0].pattern == ["*delete*", "/^drop_/i"]
    assert config.tool_rules[0].enabled is False


@pytest.mark.parametrize(
    ("name", "text"),
    [("toolscout.json", json.dumps(ISSUE_EXAMPLE)), ("toolscout.yaml", YAML_EXAMPLE), ("toolscout.toml", TOML_EXAMPLE)],
)
def test_the_three_formats_read_the_same(tmp_path: Path, name: str, text: str) -> None:
    _check_example(load_config(_write(tmp_path, name, text), env=ENV))


def test_transport_is_inferred_from_the_url_and_type_is_accepted(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "c.json",
        json.dumps(
            {
                "mcpServers": {
                    "a": {"url": "https://example.com/mcp/sse/"},
                    "b": {"url": "https://example.com/sse", "type": "http"},
                    "c": {"type": "stdio", "command": "run"},
                    "d": {"url": "https://example.com/v1/mcp", "transport": "streamable-http", "timeout": 5},
                }
            }
        ),
    )
    servers = load_config(path).mcp_servers
    assert isinstance(servers["a"], SseServerConfig)
    assert isinstance(servers["b"], HttpServerConfig)
    assert isinstance(servers["c"], StdioServerConfig)
    assert isinstance(servers["d"], HttpServerConfig) and servers["d"].timeout == 5


def test_json_may_carry_comments_and_trailing_commas(tmp_path: Path) -> None:
    text = '{\n  // my servers\n  "mcpServers": {"a": {"command": "run", /* why */ "args": ["x",],},},\n}\n'
    server = load_config(_write(tmp_path, "c.json", text)).mcp_servers["a"]
    assert isinstance(server, StdioServerConfig) and server.args == ["x"]


def test_interpolation_defaults_and_escapes(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "c.json",
        json.dumps(
            {
                "mcpServers": {
                    "a": {
                        "command": "run",
                        "args": ["${HOME_DIR}/x", "${MISSING:-fallback}", "${EMPTY:-was empty}", "$${LITERAL}"],
                    }
                }
            }
        ),
    )
    server = load_config(path, env={"HOME_DIR": "/home/me", "EMPTY": ""}).mcp_servers["a"]
    assert isinstance(server, StdioServerConfig)
    assert server.args == ["/home/me/x", "fallback", "was empty", "${LITERAL}"]


def _error(tmp_path: Path, name: str, text: str, env: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigurationError) as caught:
        load_config(_write(tmp_path, name, text), env=env or {})
    message = str(caught.value)
    assert str(tmp_path / name) in message
    return message


def test_unset_variable_names_the_key(tmp_path: Path) -> None:
    message = _error(tmp_path, "c.json", json.dumps(ISSUE_EXAMPLE))
    assert "mcpServers.legacy.headers.Authorization: environment variable TOKEN is not set" in message


def test_unset_variable_in_a_disabled_server_is_tolerated(tmp_path: Path) -> None:
    text = json.dumps({"mcpServers": {"off": {"command": "x", "disabled": True, "env": {"K": "${NOPE}"}}}})
    assert load_config(_write(tmp_path, "c.json", text), env={}).mcp_servers["off"].disabled


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("c.json", '{"mcpServers": {"a": {"command": "x" "args": []}}}', "invalid JSON at line 1, column 38"),
        ("c.json", '{\n  "mcpServers": {\n    "a": {"command": "x"\n  }\n', "invalid JSON at line 5, column 1"),
        ("c.yaml", "mcpServers:\n  a:\n    command: x\n   args: [1]\n", "invalid YAML at line 4, column 4"),
        ("c.toml", '[mcpServers.a]\ncommand = "x\n', "invalid TOML"),
        ("c.toml", '[mcpServers.a]\ncommand = "x"\nargs = ["a" "b"]\n', "line 3"),
    ],
)
def test_syntax_errors_say_where(tmp_path: Path, name: str, text: str, expected: str) -> None:
    assert expected in _error(tmp_path, name, text)


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"mcpServers": {"a": {"command": "x", "agrs": []}}}, "mcpServers.a.agrs: unknown key (did you mean 'args'?)"),
        ({"mcpservers": {}}, "mcpservers: unknown key (did you mean 'mcpServers'?)"),
        ({"mcpServers": {"a": {"comand": "x"}}}, "mcpServers.a: needs either `command`"),
        ({"mcpServers": {"a": {"command": ["x"]}}}, "mcpServers.a.command: Input should be a valid string"),
        ({"mcpServers": {"a": {"command": "x", "timeout": "soon"}}}, "mcpServers.a.timeout"),
        (
            {"mcpServers": {"a": {"command": "x", "timeout": -1}}},
            "mcpServers.a.timeout: Input should be greater than 0",
        ),
        ({"mcpServers": {"a": {"url": "ftp://x"}}}, "mcpServers.a.url: must be an http:// or https:// URL"),
        ({"mcpServers": {"a": {"url": "http://x", "transport": "carrier-pigeon"}}}, "mcpServers.a"),
        ({"mcpServers": []}, "mcpServers: Input should be a valid dictionary"),
        ({"toolRules": [{"pattern": ["/(/"]}]}, "toolRules[0].pattern: invalid regular expression '/(/'"),
        ({"toolRules": [{"pattern": ["*"], "enabled": "yes please"}]}, "toolRules[0].enabled"),
        ({"toolRules": [{"patern": ["*"]}]}, "toolRules[0].patern: unknown key (did you mean 'pattern'?)"),
        ({"mode": "chaos"}, "mode: Input should be 'discovery'"),
        ({"smartTol": True}, "smartTol: unknown key (did you mean 'smartTool'?)"),
        (
            {"smart": {"toolSelectionMod": "hybrid"}},
            "smart.toolSelectionMod: unknown key (did you mean 'toolSelectionMode'?)",
        ),
        (
            {"llm": {"baseUrl": "http://x/v1", "model": "m", "apiKey": "k"}},
            "llm.apiKey: unknown key (did you mean 'apiKeyEnv'?)",
        ),
        ({"maxOutputChar": 5}, "maxOutputChar: unknown key (did you mean 'maxOutputChars'?)"),
        ({"registry": {"backend": "redis"}}, 'registry: backend "redis" needs url'),
        ({"registry": {"backend": "redis", "url": "http://x:6379"}}, "registry.url: must be a redis://, rediss://"),
        ({"registry": {"backend": "postgres"}}, "registry.backend: Input should be 'sqlite' or 'redis'"),
    ],
)
def test_validation_errors_name_the_key(tmp_path: Path, doc: object, expected: str) -> None:
    assert expected in _error(tmp_path, "c.json", json.dumps(doc))


def test_several_errors_are_reported_together(tmp_path: Path) -> None:
    message = _error(tmp_path, "c.json", json.dumps({"mcpServers": {"a": {"command": "x", "agrs": []}}, "mood": 1}))
    assert message.startswith("Configuration errors in")
    assert "mcpServers.a.agrs" in message and "mood" in message


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    assert "top level must be a mapping" in _error(tmp_path, "c.json", "[1, 2]")


def test_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    cwd = tmp_path / "project"
    cwd.mkdir()
    (tmp_path / "xdg" / "toolscout").mkdir(parents=True)
    user_file = _write(tmp_path / "xdg" / "toolscout", "config.yaml", "mcpServers: {}\n")
    assert find_config(env={}, cwd=cwd).path == user_file

    local = _write(cwd, "toolscout.toml", "")
    assert find_config(env={}, cwd=cwd).path == local
    local_json = _write(cwd, "toolscout.json", "{}")
    assert find_config(env={}, cwd=cwd).path == local_json  # json before yaml before toml

    from_env = _write(tmp_path, "env.json", "{}")
    assert find_config(env={"TOOLSCOUT_CONFIG": str(from_env)}, cwd=cwd).origin == "$TOOLSCOUT_CONFIG"
    explicit = _write(tmp_path, "explicit.json", "{}")
    found = find_config(explicit, env={"TOOLSCOUT_CONFIG": str(from_env)}, cwd=cwd)
    assert (found.path, found.origin) == (explicit, "--config")


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="XDG_CONFIG_HOME only applies on Linux and BSD")
@pytest.mark.parametrize("xdg", ["", "relative/dir"])
def test_user_config_dir_ignores_empty_or_relative_xdg(
    xdg: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The XDG base directory spec: such a value is invalid and means ~/.config.
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", xdg)
    assert user_config_dir() == tmp_path / ".config" / "toolscout"


def test_missing_files_are_explained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    with pytest.raises(ConfigurationError, match=r"nope.json \(from --config\) does not exist"):
        find_config(tmp_path / "nope.json", env={})
    with pytest.raises(ConfigurationError, match=r"gone.yaml \(from \$TOOLSCOUT_CONFIG\) does not exist"):
        find_config(env={"TOOLSCOUT_CONFIG": str(tmp_path / "gone.yaml")})
    with pytest.raises(ConfigurationError, match="No configuration file found") as caught:
        find_config(env={}, cwd=tmp_path)
    for candidate in candidate_paths(tmp_path):
        assert str(candidate.path) in str(caught.value)
    assert "--demo" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{broken", "invalid JSON at line 1, column 2"),
        ('{"mcpServers": {"a": {"command": "x", "agrs": []}}}', "mcpServers.a.agrs: unknown key"),
        ('{"mcpServers": {"a": {"url": "http://h/mcp", "headers": {"X": "${UNSET_FOR_TEST}"}}}}', "UNSET_FOR_TEST"),
    ],
)
def test_serve_exits_2_with_one_clear_message(tmp_path: Path, text: str, expected: str) -> None:
    path = _write(tmp_path, "bad.json", text)
    done = subprocess.run(
        [sys.executable, "-m", "toolscout", "serve", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert expected in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"✗ Configuration error in {path}")


def test_serve_without_any_config_exits_2_when_one_is_required(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolscout", "serve", "--require-config"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")},
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "No configuration file found" in done.stderr and "Traceback" not in done.stderr
