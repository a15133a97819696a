"""Where upstream server configs come from: the config file's `mcpServers`, behind `ServerSource`."""

from __future__ import annotations

import json
from pathlib import Path

from toolscout.config import load_config
from toolscout.config.models import HttpServerConfig, StdioServerConfig
from toolscout.config.server_source import ConfiguredServers, ServerSource

SERVERS = {
    "zeta": {"command": "mcp-server-time"},
    "alpha": {"url": "http://127.0.0.1:3001/mcp"},
    "off": {"command": "x", "disabled": True},
}


def _source(tmp_path: Path, only: list[str] | None = None) -> ServerSource:
    path = tmp_path / "toolscout.json"
    path.write_text(json.dumps({"mcpServers": SERVERS}), encoding="utf-8")
    return ConfiguredServers(load_config(path, env={}), only)


def test_the_config_files_servers_in_file_order_disabled_ones_too(tmp_path: Path) -> None:
    servers = _source(tmp_path).servers()
    assert list(servers) == ["zeta", "alpha", "off"]
    assert isinstance(servers["zeta"], StdioServerConfig) and servers["zeta"].command == "mcp-server-time"
    assert isinstance(servers["alpha"], HttpServerConfig) and servers["alpha"].url == "http://127.0.0.1:3001/mcp"
    assert servers["off"].disabled


def test_only_the_named_servers_unknown_names_ignored(tmp_path: Path) -> None:
    assert list(_source(tmp_path, ["off", "zeta", "nope"]).servers()) == ["zeta", "off"]
    assert list(_source(tmp_path, []).servers()) == []
