"""Formats toolscout reads but cannot install into: Docker's MCP Toolkit and the custom YAML format.

Docker's Toolkit keeps no client-style server entries. `~/.docker/mcp/registry.yaml`
lists the catalog servers the user enabled (`registry: {<name>: {ref: ...}}`), and
every client is told to run one stdio command, `docker mcp gateway run`, which
starts the enabled servers in containers with their config and secrets. So an
import runs that gateway: one entry per enabled server, each limited to it with
`--servers=<name>` (so toolscout keeps servers apart and one failing server does
not take the others down), or, when the registry lists none, the whole gateway
as one server named `MCP_DOCKER`, as `docker mcp client connect` names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from toolscout.client_configs.base import BaseClient, ConfigLocation, DiscoveredServer, ReadResult
from toolscout.client_configs.json_clients import McpJson
from toolscout.client_configs.normalize import (
    Draft,
    Entry,
    EntryError,
    as_dict,
    generic_client_entry,
    note_unused,
    number,
    read_entries,
    standard_entry,
)
from toolscout.client_configs.parsing import load_yaml

__all__ = ["GATEWAY_NAME", "CustomYaml", "Docker"]

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
