"""Where upstream server configs come from: the config file's `mcpServers`, behind `ServerSource`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import anyio
import pytest

from tests.helpers.paths import PYTHON
from toolscout.config import load_config
from toolscout.config.models import (
    AnyServerConfig,
    ConfiguredServers,
    HttpServerConfig,
    ServerSource,
    StdioServerConfig,
)
from toolscout.gateway.core import Gateway

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


class Registered:
    """Another source: servers that no config file names (as runtime registrations will be)."""

    def servers(self) -> Mapping[str, AnyServerConfig]:
        return {"units": StdioServerConfig(command=PYTHON, args=["-m", "toolscout.demo.units"])}


@pytest.mark.anyio
async def test_a_gateway_connects_to_the_servers_its_source_gives(tmp_path: Path) -> None:
    path = tmp_path / "toolscout.json"
    path.write_text(json.dumps({"mcpServers": {"time": {"command": "mcp-server-time"}}}), encoding="utf-8")
    gateway = Gateway.from_config(load_config(path, env={}), source=Registered())
    async with gateway:
        with anyio.fail_after(30):
            tools = await gateway.tools("units")
    assert [upstream.name for upstream in gateway.upstreams] == ["units"]  # not the file's "time"
    assert "convert_units" in [tool.name for tool in tools]
