"""Editing config files in place: JSON/JSONC splices, YAML and TOML round trips, safe saves."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from toolscout.config.edit import ConfigDocument
from toolscout.errors import ConfigurationError

VSCODE_SETTINGS = """\
// Place your settings in this file to overwrite the default settings
{
    "editor.fontSize": 14, // bigger than the default
    "editor.rulers": [80, 120],
    /* Files */
    "files.exclude": {
        "**/.git": true,
        "**/node_modules": true,
    },
    "mcp": {
        "servers": {
            "time": {
                "command": "uvx",
                "args": ["mcp-server-time"],
            },
        },
    },
    // "workbench.colorTheme": "Default Dark+",
}
"""

CLAUDE_DESKTOP = """\
{
  "mcpServers": {
    "time": {
      "command": "uvx",
      "args": ["mcp-server-time", "--local-timezone=UTC"]
    },
    "fetch": {
      "command": "uvx",
      "args": ["mcp-server-fetch"]
    }
  },
  "globalShortcut": "Ctrl+Space"
}
"""

TOOLSCOUT_YAML = """\
# toolscout gateway
mcpServers:
  time:  # the clock
    command: mcp-server-time
    args: ["--local-timezone", 'UTC']
  # fetch pages
  fetch:
    command: 'uvx'
    args:
      - mcp-server-fetch
# rules come last
toolRules:
  - pattern: "*delete*"  # dangerous
    enabled: false
mode: discovery
"""

CODEX_TOML = """\
# Codex settings
model = "o3"  # the default model
approval_policy = "on-request"

[mcp_servers.time]
command = "uvx"
args = ["mcp-server-time"]

# Profiles for different work
[profiles.fast]
model = "o4-mini"
"""

UNTOUCHED = {
    "settings.json": VSCODE_SETTINGS,
    "claude_desktop_config.json": CLAUDE_DESKTOP,
    "compact.json": '{"a":1,"b":[true,null,"x"]}',
    "crlf.json": '{\r\n\t"a": 1, // one\r\n\t"b": {}\r\n}\r\n',
    "bom.json": '\ufeff{"a": 1}\n',
    "empty.json": "",
    "odd.json": ' { "a" : [ 1 , 2 ] , "b" : { } }  // done',
    "toolscout.yaml": TOOLSCOUT_YAML,
    "crlf.yml": "a: 1  # one\r\nb:\r\n    c: 'x'\r\n",
    "config.toml": CODEX_TOML,
    "crlf.toml": 'a = 1\r\n\r\n[t]\r\nb = "x"  # x\r\n',
}


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def edit(tmp_path: Path, name: str, text: str, change: Callable[[ConfigDocument], object]) -> str:
    """The text after applying `change`; it also has to load again with the same data."""
    doc = ConfigDocument.load(write(tmp_path, name, text))
    change(doc)
    result = doc.text()
    reloaded = ConfigDocument.load(write(tmp_path, "again-" + name, result))
    assert reloaded.data() == doc.data()
    return result


def siblings(path: Path) -> set[str]:
    return {p.name for p in path.parent.iterdir()}


# --- every format -------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "text"), UNTOUCHED.items())
def test_untouched_documents_round_trip_exactly(tmp_path: Path, name: str, text: str) -> None:
    doc = ConfigDocument.load(write(tmp_path, name, text))
    assert doc.text() == text
    doc.set(["nothing", "new"], 1)
    doc.delete(["nothing"])
    if name.endswith(".json") and text:  # splices put everything back byte for byte
        assert doc.text() == text


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("a.json", "json"),
        ("mcp.json", "json"),
        ("settings.jsonc", "json"),
        ("a.yaml", "yaml"),
        ("a.YML", "yaml"),
        ("config.toml", "toml"),
        ("noext", "json"),
    ],
)
def test_format_comes_from_the_extension(tmp_path: Path, name: str, fmt: str) -> None:
    assert ConfigDocument.new(tmp_path / name).format == fmt


@pytest.mark.parametrize(
    ("name", "text"), [("a.json", CLAUDE_DESKTOP), ("a.yaml", TOOLSCOUT_YAML), ("a.toml", CODEX_TOML)]
)
def test_get_data_and_missing_keys(tmp_path: Path, name: str, text: str) -> None:
    doc = ConfigDocument.load(write(tmp_path, name, text))
    data = doc.data()
    assert isinstance(data, dict)
    first = next(iter(data))
    assert doc.get([first]) == data[first]
    assert doc.get(["no", "such", "key"]) is None
    assert doc.get([first, "no-such-key"]) is None
    assert doc.delete(["no", "such"]) is False
    assert doc.text() == text
    with pytest.raises(TypeError, match="sequence of strings"):
        doc.get(first)


@pytest.mark.parametrize("name", ["a.json", "a.yaml", "a.toml"])
def test_plain_values_out(tmp_path: Path, name: str) -> None:
    doc = ConfigDocument.new(tmp_path / name)
    value = {"s": "text", "i": 3, "f": 1.5, "b": True, "l": [1, "two", False], "m": {"k": "v"}}
    doc.set(["all"], value)
    assert doc.get(["all"]) == value
    assert type(doc.get(["all", "b"])) is bool
    assert type(doc.get(["all", "i"])) is int
    assert type(doc.get(["all", "s"])) is str
    assert doc.data() == {"all": value}


@pytest.mark.parametrize(
    ("name", "text"), [("a.json", CLAUDE_DESKTOP), ("a.yaml", TOOLSCOUT_YAML), ("a.toml", CODEX_TOML)]
)
def test_setting_through_a_non_mapping_is_refused(tmp_path: Path, name: str, text: str) -> None:
    doc = ConfigDocument.load(write(tmp_path, name, text))
    first = next(k for k, v in doc.data().items() if isinstance(v, str))
    with pytest.raises(ConfigurationError, match=rf"cannot set {re.escape(first)}\.x: {re.escape(first)} is a string"):
        doc.set([first, "x"], 1)
    assert doc.text() == text


@pytest.mark.parametrize(
    ("name", "text"), [("a.json", CLAUDE_DESKTOP), ("a.yaml", TOOLSCOUT_YAML), ("a.toml", CODEX_TOML)]
)
def test_setting_the_same_value_changes_nothing(tmp_path: Path, name: str, text: str) -> None:
    doc = ConfigDocument.load(write(tmp_path, name, text))
    for key, value in doc.data().items():
        doc.set([key], value)
    assert doc.text() == text


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("bad.json", '{\n  "a": 1,\n  "b": tru\n}\n', "line 3, column 8"),
        ("bad.json", '{\n  "a": 1\n  "b": 2\n}\n', "line 3, column 3"),
        ("bad.json", '{\n  "a": "unterminated\n}\n', "line 2, column 8"),
        ("bad.json", '{"a": 1} /* open', "line 1, column 10"),
        ("bad.json", '{\n  "a": [1, 2\n', "line 3, column 1"),
        ("bad.json", '{"a": 1}\n{"b": 2}\n', "line 2, column 1"),
        ("bad.json", "{\n  a: 1\n}\n", "line 2, column 3"),
        ("bad.yaml", "a: 1\nb: [1, 2\nc: 3\n", "line 3, column 2"),
        ("bad.yaml", "a: 1\na: 2\n", "line 2, column 1"),
        ("bad.toml", "a = 1\nb = \n[t]\n", "line 2, column 5"),
        ("bad.toml", "a = 1\n[t\n", "line 2, column 3"),
    ],
)
def test_syntax_errors_name_the_file_line_and_column(tmp_path: Path, name: str, text: str, where: str) -> None:
    path = write(tmp_path, name, text)
    with pytest.raises(ConfigurationError) as caught:
        ConfigDocument.load(path)
    assert str(path) in str(caught.value)
    assert where in str(caught.value)
    assert "run the command again" in str(caught.value)


@pytest.mark.parametrize(
    ("name", "text"), [("a.json", "[1, 2]\n"), ("a.json", '"x"'), ("a.yaml", "- a\n- b\n"), ("a.yaml", "just text\n")]
)
def test_top_level_must_be_a_mapping(tmp_path: Path, name: str, text: str) -> None:
    path = write(tmp_path, name, text)
    with pytest.raises(ConfigurationError, match="top level must be"):
        ConfigDocument.load(path)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="does not exist"):
        ConfigDocument.load(tmp_path / "missing.json")
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(ConfigurationError, match="is a directory"):
        ConfigDocument.load(tmp_path / "dir.json")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"a: 1\nname: caf\xe9\n")
    with pytest.raises(ConfigurationError, match=r"latin\.yaml is not UTF-8 text \(invalid byte on line 2"):
        ConfigDocument.load(latin)


def test_unreadable_permissions(tmp_path: Path) -> None:
    secret = write(tmp_path, "secret.json", "{}")
    secret.chmod(0)
    try:
        if os.access(secret, os.R_OK):
            pytest.skip("running as root: mode 000 does not stop this process from reading")
        with pytest.raises(ConfigurationError, match=rf"cannot read {re.escape(str(secret))}: Permission denied"):
            ConfigDocument.load(secret)
    finally:
        secret.chmod(0o600)


def test_load_or_new(tmp_path: Path) -> None:
    fresh = ConfigDocument.load_or_new(tmp_path / "new.json")
    assert fresh.data() == {}
    path = write(tmp_path, "old.json", '{"a": 1}')
    assert ConfigDocument.load_or_new(path).data() == {"a": 1}


# --- JSON / JSONC: exact text ---------------------------------------------------------------


def test_json_set_new_top_level_key(tmp_path: Path) -> None:
    result = edit(tmp_path, "c.json", CLAUDE_DESKTOP, lambda d: d.set(["theme"], "dark"))
    assert result == CLAUDE_DESKTOP.replace('"Ctrl+Space"\n', '"Ctrl+Space",\n  "theme": "dark"\n')


def test_json_replace_existing_value(tmp_path: Path) -> None:
    result = edit(tmp_path, "c.json", CLAUDE_DESKTOP, lambda d: d.set(["mcpServers", "fetch", "args"], ["x"]))
    assert result == CLAUDE_DESKTOP.replace('"args": ["mcp-server-fetch"]', '"args": [\n        "x"\n      ]')


def test_json_add_member_to_nested_object(tmp_path: Path) -> None:
    server = {"command": "npx", "args": ["-y", "server-github"], "env": {"GITHUB_TOKEN": "t"}}
    result = edit(tmp_path, "c.json", CLAUDE_DESKTOP, lambda d: d.set(["mcpServers", "github"], server))
    assert result == CLAUDE_DESKTOP.replace(
        '      "args": ["mcp-server-fetch"]\n    }\n',
        '      "args": ["mcp-server-fetch"]\n'
        "    },\n"
        '    "github": {\n'
        '      "command": "npx",\n'
        '      "args": [\n'
        '        "-y",\n'
        '        "server-github"\n'
        "      ],\n"
        '      "env": {\n'
        '        "GITHUB_TOKEN": "t"\n'
        "      }\n"
        "    }\n",
    )


def test_json_creates_intermediate_objects(tmp_path: Path) -> None:
    result = edit(tmp_path, "c.json", '{\n  "a": {}\n}\n', lambda d: d.set(["a", "b", "c"], 1))
    assert result == '{\n  "a": {\n    "b": {\n      "c": 1\n    }\n  }\n}\n'
    result = edit(tmp_path, "c.json", '{\n  "a": 1\n}\n', lambda d: d.set(["x", "y"], "z"))
    assert result == '{\n  "a": 1,\n  "x": {\n    "y": "z"\n  }\n}\n'


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("a", '{\n  "b": 2, // two\n  "c": 3\n}\n'),
        ("b", '{\n  "a": 1,\n  "c": 3\n}\n'),
        ("c", '{\n  "a": 1,\n  "b": 2 // two\n}\n'),
    ],
)
def test_json_delete_first_middle_last(tmp_path: Path, key: str, expected: str) -> None:
    text = '{\n  "a": 1,\n  "b": 2, // two\n  "c": 3\n}\n'
    assert edit(tmp_path, "d.json", text, lambda d: d.delete([key])) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{\n  "x": {\n    "only": true\n  },\n  "y": 1\n}\n', '{\n  "x": {},\n  "y": 1\n}\n'),
        ('{"x": {"only": true}, "y": 1}', '{"x": {}, "y": 1}'),
        ('{\n  "x": {\n    // keep me\n    "only": true\n  }\n}\n', '{\n  "x": {\n    // keep me\n  }\n}\n'),
        ('{\n  "only": 1\n}\n', "{}\n"),
    ],
)
def test_json_delete_only_member(tmp_path: Path, text: str, expected: str) -> None:
    def change(doc: ConfigDocument) -> None:
        assert doc.delete(["x", "only"] if '"x"' in text else ["only"])

    assert edit(tmp_path, "d.json", text, change) == expected


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        ('{"a": 1, "b": 2, "c": 3}', "b", '{"a": 1, "c": 3}'),
        ('{"a": 1, "b": 2, "c": 3}', "c", '{"a": 1, "b": 2}'),
        ('{"a": 1, "b": 2,}', "b", '{"a": 1,}'),
        ('{\n  "a": 1, "b": 2\n}', "a", '{\n  "b": 2\n}'),
        ('{\n  "a": 1,\n  "b": 2}', "b", '{\n  "a": 1}'),
        ('{\n  "a": 1,\n  "b": 2,\n}\n', "b", '{\n  "a": 1,\n}\n'),
        ('{\n  "a": 1,\n  "a": 2\n}\n', "a", "{}\n"),
    ],
)
def test_json_delete_shapes(tmp_path: Path, text: str, key: str, expected: str) -> None:
    assert edit(tmp_path, "d.json", text, lambda d: d.delete([key])) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{}", '{\n  "k": 1\n}'),
        ("{ }\n", '{\n  "k": 1\n}\n'),
        ('{"a": {}}', '{"a": {}, "k": 1}'),
        ('{"a":1}', '{"a":1,"k":1}'),
        ('{"a": 1,}', '{"a": 1, "k": 1,}'),
        ('{\n  "a": 1 // one\n}\n', '{\n  "a": 1, // one\n  "k": 1\n}\n'),
        ('{\n  "a": 1 /* one */\n}\n', '{\n  "a": 1, /* one */\n  "k": 1\n}\n'),
        ('{\n  "a": 1,\n  // "b": 2\n}\n', '{\n  "a": 1,\n  "k": 1,\n  // "b": 2\n}\n'),
        ('{\n  "a": 1\n  /* the end */\n}\n', '{\n  "a": 1,\n  "k": 1\n  /* the end */\n}\n'),
        ("{\n  // nothing yet\n}\n", '{\n  // nothing yet\n  "k": 1\n}\n'),
        ("// only a comment\n", '// only a comment\n{\n  "k": 1\n}\n'),
        ("", '{\n  "k": 1\n}\n'),
    ],
)
def test_json_insert_shapes(tmp_path: Path, text: str, expected: str) -> None:
    assert edit(tmp_path, "i.json", text, lambda d: d.set(["k"], 1)) == expected


def test_jsonc_vscode_settings(tmp_path: Path) -> None:
    server = {"command": "npx", "args": ["-y", "server-github"], "env": {"GITHUB_TOKEN": "${input:token}"}}

    def change(doc: ConfigDocument) -> None:
        doc.set(["mcp", "servers", "github"], server)
        doc.set(["editor.fontSize"], 16)
        assert doc.delete(["files.exclude", "**/node_modules"])
        doc.set(["chat.mcp.enabled"], True)

    expected = """\
// Place your settings in this file to overwrite the default settings
{
    "editor.fontSize": 16, // bigger than the default
    "editor.rulers": [80, 120],
    /* Files */
    "files.exclude": {
        "**/.git": true,
    },
    "mcp": {
        "servers": {
            "time": {
                "command": "uvx",
                "args": ["mcp-server-time"],
            },
            "github": {
                "command": "npx",
                "args": [
                    "-y",
                    "server-github"
                ],
                "env": {
                    "GITHUB_TOKEN": "${input:token}"
                }
            },
        },
    },
    "chat.mcp.enabled": true,
    // "workbench.colorTheme": "Default Dark+",
}
"""
    assert edit(tmp_path, "settings.json", VSCODE_SETTINGS, change) == expected


def test_jsonc_mapping_over_mapping_keeps_comments_inside(tmp_path: Path) -> None:
    text = '{\n  "s": {\n    "command": "a", // the binary\n    "args": [] /* none */,\n    "old": 1\n  }\n}\n'
    result = edit(tmp_path, "m.json", text, lambda d: d.set(["s"], {"command": "a", "args": ["x"], "env": {}}))
    # Deleting "old" takes the comma before it (after the comment); adding "env" puts one back
    # right after the value, so the comment stays on the line of the member it describes.
    assert result == (
        '{\n  "s": {\n    "command": "a", // the binary\n'
        '    "args": [\n      "x"\n    ], /* none */\n'
        '    "env": {}\n  }\n}\n'
    )


def test_json_crlf_newlines_are_kept(tmp_path: Path) -> None:
    text = '{\r\n  "a": 1,\r\n  "b": {\r\n    "c": 2\r\n  }\r\n}\r\n'

    def change(doc: ConfigDocument) -> None:
        doc.set(["b", "d"], {"e": [1]})
        doc.delete(["a"])

    result = edit(tmp_path, "crlf.json", text, change)
    assert (
        result
        == '{\r\n  "b": {\r\n    "c": 2,\r\n    "d": {\r\n      "e": [\r\n        1\r\n      ]\r\n    }\r\n  }\r\n}\r\n'
    )


def test_json_tab_indentation_is_detected(tmp_path: Path) -> None:
    text = '{\n\t"a": {\n\t\t"b": 1\n\t}\n}'
    result = edit(tmp_path, "tabs.json", text, lambda d: d.set(["a", "c"], {"d": [True]}))
    assert result == '{\n\t"a": {\n\t\t"b": 1,\n\t\t"c": {\n\t\t\t"d": [\n\t\t\t\ttrue\n\t\t\t]\n\t\t}\n\t}\n}'


def test_json_four_space_indentation_is_detected_from_nested_content(tmp_path: Path) -> None:
    text = '{"a": {\n    "b": 1\n}}\n'
    result = edit(tmp_path, "four.json", text, lambda d: d.set(["a", "c"], {"d": 1}))
    assert result == '{"a": {\n    "b": 1,\n    "c": {\n        "d": 1\n    }\n}}\n'


def test_json_keeps_bom_and_unicode(tmp_path: Path) -> None:
    result = edit(tmp_path, "bom.json", '\ufeff{"a": "é"}', lambda d: d.set(["b"], "ü ✓"))
    assert result == '\ufeff{"a": "é", "b": "ü ✓"}'


# --- YAML -----------------------------------------------------------------------------------


def test_yaml_set_new_top_level_key(tmp_path: Path) -> None:
    result = edit(tmp_path, "t.yaml", TOOLSCOUT_YAML, lambda d: d.set(["logLevel"], "debug"))
    assert result == TOOLSCOUT_YAML + "logLevel: debug\n"


def test_yaml_replace_keeps_comment_and_quotes(tmp_path: Path) -> None:
    def change(doc: ConfigDocument) -> None:
        doc.set(["mcpServers", "fetch", "command"], "uv")
        doc.set(["mode"], "passthrough")
        doc.set(["mcpServers", "time", "args"], ["--local-timezone", "Europe/Paris"])

    result = edit(tmp_path, "t.yaml", TOOLSCOUT_YAML, change)
    assert result == (
        TOOLSCOUT_YAML.replace("command: 'uvx'", "command: 'uv'")
        .replace("mode: discovery", "mode: passthrough")
        .replace("""args: ["--local-timezone", 'UTC']""", "args: [--local-timezone, Europe/Paris]")
    )


def test_yaml_add_member_to_nested_mapping(tmp_path: Path) -> None:
    server = {"command": "npx", "args": ["-y", "server-github"], "env": {"GITHUB_TOKEN": "t"}}
    result = edit(tmp_path, "t.yaml", TOOLSCOUT_YAML, lambda d: d.set(["mcpServers", "github"], server))
    assert result == TOOLSCOUT_YAML.replace(
        "      - mcp-server-fetch\n",
        "      - mcp-server-fetch\n"
        "  github:\n"
        "    command: npx\n"
        "    args:\n"
        "      - -y\n"
        "      - server-github\n"
        "    env:\n"
        "      GITHUB_TOKEN: t\n",
    )


def test_yaml_creates_intermediate_mappings(tmp_path: Path) -> None:
    result = edit(tmp_path, "t.yaml", "a: 1  # one\n", lambda d: d.set(["x", "y", "z"], True))
    assert result == "a: 1  # one\nx:\n  y:\n    z: true\n"


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (["a"], "# head\n# about b\nb: 2  # B\n# about c\nc: 3\n# tail\n"),
        (["b"], "# head\na: 1  # A\n# about b\n# about c\nc: 3\n# tail\n"),
        (["c"], "# head\na: 1  # A\n# about b\nb: 2  # B\n# about c\n# tail\n"),
    ],
)
def test_yaml_delete_first_middle_last_keeps_neighbouring_comments(
    tmp_path: Path, keys: list[str], expected: str
) -> None:
    text = "# head\na: 1  # A\n# about b\nb: 2  # B\n# about c\nc: 3\n# tail\n"
    assert edit(tmp_path, "d.yaml", text, lambda d: d.delete(keys)) == expected


def test_yaml_delete_last_entry_of_nested_mapping_keeps_following_comment(tmp_path: Path) -> None:
    result = edit(tmp_path, "t.yaml", TOOLSCOUT_YAML, lambda d: d.delete(["mcpServers", "fetch"]))
    assert result == TOOLSCOUT_YAML.replace(
        "  # fetch pages\n  fetch:\n    command: 'uvx'\n    args:\n      - mcp-server-fetch\n", "  # fetch pages\n"
    )


def test_yaml_delete_only_member(tmp_path: Path) -> None:
    result = edit(tmp_path, "t.yaml", "a:\n  only: 1\nb: 2\n", lambda d: d.delete(["a", "only"]))
    assert result == "a: {}\nb: 2\n"


def test_yaml_new_nested_entry_goes_above_the_comment_of_the_next_key(tmp_path: Path) -> None:
    # ruamel files "# rules come last" under the last line of mcpServers; it must stay above toolRules.
    result = edit(tmp_path, "t.yaml", TOOLSCOUT_YAML, lambda d: d.set(["mcpServers", "new", "command"], "x"))
    assert result == TOOLSCOUT_YAML.replace(
        "      - mcp-server-fetch\n", "      - mcp-server-fetch\n  new:\n    command: x\n"
    )


def test_yaml_empty_flow_mapping_grows_into_a_block(tmp_path: Path) -> None:
    result = edit(tmp_path, "t.yaml", "servers: {}\nother: 1\n", lambda d: d.set(["servers", "a"], {"command": "x"}))
    assert result == "servers:\n  a:\n    command: x\nother: 1\n"


def test_yaml_four_space_indentation_and_crlf(tmp_path: Path) -> None:
    text = "servers:\r\n    time:\r\n        args:\r\n        - a\r\n"
    result = edit(tmp_path, "t.yml", text, lambda d: d.set(["servers", "x"], {"args": ["b"]}))
    assert (
        result == "servers:\r\n    time:\r\n        args:\r\n        - a\r\n    x:\r\n        args:\r\n        - b\r\n"
    )


def test_yaml_uses_yaml_12(tmp_path: Path) -> None:
    doc = ConfigDocument.load(write(tmp_path, "t.yaml", "off: yes\nno: on\nflag: true\n"))
    assert doc.data() == {"off": "yes", "no": "on", "flag": True}
    doc.set(["mode"], "no")
    assert ConfigDocument.load(write(tmp_path, "u.yaml", doc.text())).get(["mode"]) == "no"


# --- TOML -----------------------------------------------------------------------------------


def test_toml_set_new_top_level_key_goes_above_the_tables(tmp_path: Path) -> None:
    result = edit(tmp_path, "c.toml", CODEX_TOML, lambda d: d.set(["sandbox_mode"], "workspace-write"))
    assert result == CODEX_TOML.replace('"on-request"\n', '"on-request"\nsandbox_mode = "workspace-write"\n')


def test_toml_replace_keeps_comment(tmp_path: Path) -> None:
    result = edit(tmp_path, "c.toml", CODEX_TOML, lambda d: d.set(["model"], "o4"))
    assert result == CODEX_TOML.replace('model = "o3"', 'model = "o4"')


def test_toml_new_server_is_a_table_with_inline_env(tmp_path: Path) -> None:
    server = {"command": "npx", "args": ["-y", "server-github"], "env": {"GITHUB_TOKEN": "t"}}
    result = edit(tmp_path, "c.toml", CODEX_TOML, lambda d: d.set(["mcp_servers", "github"], server))
    assert result == CODEX_TOML.replace(
        'args = ["mcp-server-time"]\n',
        'args = ["mcp-server-time"]\n'
        "\n"
        "[mcp_servers.github]\n"
        'command = "npx"\n'
        'args = ["-y", "server-github"]\n'
        'env = { GITHUB_TOKEN = "t" }\n',
    )


def test_toml_long_or_nested_mappings_become_sub_tables(tmp_path: Path) -> None:
    env = {f"SOME_RATHER_LONG_VARIABLE_{i}": "with a value" for i in range(3)}
    doc = ConfigDocument.new(tmp_path / "c.toml")
    doc.set(["mcp_servers", "big"], {"command": "x", "env": env, "nested": {"deep": {"k": 1}}})
    assert doc.text() == (
        "[mcp_servers.big]\n"
        'command = "x"\n'
        "\n"
        "[mcp_servers.big.env]\n"
        'SOME_RATHER_LONG_VARIABLE_0 = "with a value"\n'
        'SOME_RATHER_LONG_VARIABLE_1 = "with a value"\n'
        'SOME_RATHER_LONG_VARIABLE_2 = "with a value"\n'
        "\n"
        "[mcp_servers.big.nested.deep]\n"
        "k = 1\n"
    )


def test_toml_add_member_and_intermediate_tables(tmp_path: Path) -> None:
    def change(doc: ConfigDocument) -> None:
        doc.set(["mcp_servers", "time", "env"], {"TZ": "UTC"})
        doc.set(["tools", "web_search"], True)
        doc.set(["a", "b", "c"], {"k": "v"})

    result = edit(tmp_path, "c.toml", CODEX_TOML, change)
    assert result == CODEX_TOML.replace(
        'args = ["mcp-server-time"]\n', 'args = ["mcp-server-time"]\nenv = { TZ = "UTC" }\n'
    ) + ('\n[tools]\nweb_search = true\n\n[a.b.c]\nk = "v"\n')


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (["t", "a"], "[t]\nb = 2  # two\nc = 3\n\n[u]\nx = 1\n"),
        (["t", "b"], "[t]\na = 1\nc = 3\n\n[u]\nx = 1\n"),
        (["t", "c"], "[t]\na = 1\nb = 2  # two\n\n[u]\nx = 1\n"),
        (["u", "x"], "[t]\na = 1\nb = 2  # two\nc = 3\n\n[u]\n"),
        (["t"], "[u]\nx = 1\n"),
    ],
)
def test_toml_delete(tmp_path: Path, keys: list[str], expected: str) -> None:
    text = "[t]\na = 1\nb = 2  # two\nc = 3\n\n[u]\nx = 1\n"
    assert edit(tmp_path, "d.toml", text, lambda d: d.delete(keys)) == expected


@pytest.mark.parametrize("keys", [["mcp_servers", "time"], ["mcp_servers"]])
def test_toml_deleting_a_table_keeps_the_comment_above_the_next_one(tmp_path: Path, keys: list[str]) -> None:
    result = edit(tmp_path, "c.toml", CODEX_TOML, lambda d: d.delete(keys))
    assert result == CODEX_TOML.replace('[mcp_servers.time]\ncommand = "uvx"\nargs = ["mcp-server-time"]\n\n', "")


def test_toml_arrays_of_tables_keep_their_comments(tmp_path: Path) -> None:
    text = "[a]\nx = 1\n\n[[rules]]\np = 1\n\n# second rule\n[[rules]]\np = 2\n"

    def change(doc: ConfigDocument) -> None:
        doc.set(["rules"], [{"p": 1}, {"p": 2}])
        assert doc.delete(["a"])

    assert edit(tmp_path, "r.toml", text, change) == "[[rules]]\np = 1\n\n# second rule\n[[rules]]\np = 2\n"


def test_toml_edits_inside_inline_tables(tmp_path: Path) -> None:
    text = '[s]\nenv = { A = "1", B = "2" }  # secrets\n'

    def change(doc: ConfigDocument) -> None:
        doc.set(["s", "env", "C"], "3")
        assert doc.delete(["s", "env", "A"])
        assert not doc.delete(["s", "env", "nope"])

    assert edit(tmp_path, "i.toml", text, change) == '[s]\nenv = { B = "2", C = "3" }  # secrets\n'


def test_toml_lists_of_mappings_become_arrays_of_tables(tmp_path: Path) -> None:
    doc = ConfigDocument.new(tmp_path / "r.toml")
    doc.set(["toolRules"], [{"pattern": "*delete*", "enabled": False}, {"pattern": "read_*"}])
    assert doc.text() == '[[toolRules]]\npattern = "*delete*"\nenabled = false\n\n[[toolRules]]\npattern = "read_*"\n'


def test_toml_refuses_null(tmp_path: Path) -> None:
    doc = ConfigDocument.new(tmp_path / "n.toml")
    with pytest.raises(ConfigurationError, match="TOML has no null"):
        doc.set(["a"], {"b": None})


def test_toml_crlf(tmp_path: Path) -> None:
    result = edit(tmp_path, "c.toml", 'a = 1\r\n\r\n[t]\r\nb = "x"\r\n', lambda d: d.set(["t", "c"], 2))
    assert result == 'a = 1\r\n\r\n[t]\r\nb = "x"\r\nc = 2\r\n'


# --- saving ---------------------------------------------------------------------------------


def test_save_makes_a_backup_of_the_previous_content(tmp_path: Path) -> None:
    path = write(tmp_path, "claude_desktop_config.json", CLAUDE_DESKTOP)
    doc = ConfigDocument.load(path)
    doc.set(["theme"], "dark")
    backup = doc.save()
    assert backup is not None
    assert backup.parent == tmp_path
    assert re.fullmatch(r"claude_desktop_config\.json\.\d{8}-\d{6}\.bak", backup.name)
    assert backup.read_text() == CLAUDE_DESKTOP
    assert path.read_text() == doc.text()
    assert siblings(path) == {path.name, backup.name}

    # Saving again in the same second gets a counter instead of overwriting the first backup.
    doc.set(["theme"], "light")
    second = doc.save()
    assert second is not None and second != backup
    assert backup.read_text() == CLAUDE_DESKTOP
    assert '"dark"' in second.read_text()
    assert ConfigDocument.load(path).get(["theme"]) == "light"


def test_save_without_backup_and_for_new_files(tmp_path: Path) -> None:
    path = write(tmp_path, "a.yaml", "a: 1\n")
    doc = ConfigDocument.load(path)
    doc.set(["b"], 2)
    assert doc.save(backup=False) is None
    assert siblings(path) == {"a.yaml"}

    target = tmp_path / "deep" / "er" / "config.toml"
    fresh = ConfigDocument.load_or_new(target)
    fresh.set(["mcp_servers", "time", "command"], "uvx")
    assert fresh.save() is None
    assert target.read_text() == '[mcp_servers.time]\ncommand = "uvx"\n'
    assert siblings(target) == {"config.toml"}


def test_save_keeps_the_permission_bits(tmp_path: Path) -> None:
    path = write(tmp_path, "secret.json", '{"token": "x"}')
    path.chmod(0o600)
    doc = ConfigDocument.load(path)
    doc.set(["token"], "y")
    backup = doc.save()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert backup is not None and stat.S_IMODE(backup.stat().st_mode) == 0o600


def test_save_keeps_the_owner(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can hand a file to another user, so there is no foreign owner to keep")
    path = write(tmp_path, "user.json", '{"a": 1}')
    os.chown(path, 65534, 65534)
    doc = ConfigDocument.load(path)
    doc.set(["a"], 2)
    backup = doc.save()
    assert (path.stat().st_uid, path.stat().st_gid) == (65534, 65534)
    assert backup is not None and backup.stat().st_uid == 65534


def test_save_leaves_no_temp_files_and_a_second_save_works(tmp_path: Path) -> None:
    path = write(tmp_path, "c.toml", CODEX_TOML)
    doc = ConfigDocument.load(path)
    doc.set(["model"], "o4")
    doc.save(backup=False)
    doc.set(["model"], "o5")
    doc.save(backup=False)
    assert siblings(path) == {"c.toml"}
    assert ConfigDocument.load(path).get(["model"]) == "o5"


def test_save_refuses_when_the_file_changed_on_disk(tmp_path: Path) -> None:
    path = write(tmp_path, "a.json", '{"a": 1}\n')
    doc = ConfigDocument.load(path)
    doc.set(["b"], 2)
    path.write_text('{"a": 1, "edited": "elsewhere"}\n')
    with pytest.raises(ConfigurationError, match=r"changed on disk since it was read; run the command again"):
        doc.save()
    assert path.read_text() == '{"a": 1, "edited": "elsewhere"}\n'
    assert siblings(path) == {"a.json"}

    path.unlink()
    with pytest.raises(ConfigurationError, match="changed on disk"):
        doc.save()

    fresh = ConfigDocument.new(tmp_path / "b.json")
    write(tmp_path, "b.json", "{}")
    with pytest.raises(ConfigurationError, match="changed on disk"):
        fresh.save()


def test_save_after_save_detects_later_changes(tmp_path: Path) -> None:
    path = write(tmp_path, "a.yaml", "a: 1\n")
    doc = ConfigDocument.load(path)
    doc.set(["a"], 2)
    doc.save(backup=False)
    path.write_text("a: 3\n")
    doc.set(["a"], 4)
    with pytest.raises(ConfigurationError, match="changed on disk"):
        doc.save()


def test_save_writes_through_a_symlink(tmp_path: Path) -> None:
    real = write(tmp_path, "real.json", '{"a": 1}')
    link = tmp_path / "link.json"
    link.symlink_to(real)
    doc = ConfigDocument.load(link)
    doc.set(["b"], 2)
    backup = doc.save()
    assert link.is_symlink()
    assert real.read_text() == '{"a": 1, "b": 2}'
    assert backup is not None and backup.name.startswith("real.json.")


def test_save_into_read_only_directory(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = write(folder, "a.json", '{"a": 1}')
    doc = ConfigDocument.load(path)
    doc.set(["a"], 2)
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):
            # Root ignores directory modes; the two tests below cover the same path as root.
            pytest.skip("running as root: a read-only directory is still writable for this process")
        with pytest.raises(ConfigurationError, match=rf"cannot write {re.escape(str(path))}: Permission denied"):
            doc.save()
    finally:
        folder.chmod(0o700)
    assert path.read_text() == '{"a": 1}'
    assert siblings(path) == {"a.json"}


def test_save_where_the_parent_is_a_file(tmp_path: Path) -> None:
    blocker = write(tmp_path, "blocker", "not a directory")
    target = blocker / "config.json"
    doc = ConfigDocument.load_or_new(target)
    doc.set(["a"], 1)
    with pytest.raises(ConfigurationError, match=rf"cannot write {re.escape(str(target))}"):
        doc.save()
    assert blocker.read_text() == "not a directory"
    assert siblings(blocker) == {"blocker"}


_SAVE_TOO_LARGE = """
import resource, signal, sys
from toolscout.config.edit import ConfigDocument
from toolscout.errors import ConfigurationError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
doc = ConfigDocument.load(sys.argv[1])
doc.set(["big"], "x" * 8192)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
try:
    doc.save()
except ConfigurationError as exc:
    print(exc)
"""


def test_failed_write_leaves_the_original_untouched(tmp_path: Path) -> None:
    # A real write failure even for root: the kernel refuses files above RLIMIT_FSIZE (EFBIG).
    # The limit is set in a child process: in pytest's own process it would also stop pytest
    # from writing its report to a log file larger than the limit.
    path = write(tmp_path, "a.json", '{\n  "a": 1\n}\n')
    done = subprocess.run(
        [sys.executable, "-c", _SAVE_TOO_LARGE, str(path)], capture_output=True, text=True, timeout=60, check=True
    )
    assert re.search(rf"cannot write {re.escape(str(path))}: File too large", done.stdout), done.stdout + done.stderr
    assert path.read_text() == '{\n  "a": 1\n}\n'
    assert siblings(path) == {"a.json"}
