"""The `sources` of a configuration: other files whose servers are served beside its `mcpServers`.

A source is an MCP client's file (Claude Desktop, Docker's MCP Toolkit, Windsurf, Cursor: their
`mcpServers`; VS Code: its `servers`) or a `custom` YAML file written the way the discovery design
writes one:

```yaml
servers:
  github:
    description: GitHub API integration
    connection: {type: stdio, command: npx, args: [-y, "@modelcontextprotocol/server-github"]}
    tools: [{name: create_issue, description: Create a GitHub issue}]
```

Each file is read when the configuration is, so a reload (serve/reload.py, which watches these
files too) picks up a client's file edited later. `${VAR}` works as in the configuration. Keys a
client writes that toolscout has no use for (`alwaysAllow`, `autoApprove`, ...) are left out and
named in the log; a name the configuration (or an earlier source) already has is skipped. A file
that does not exist is reported and skipped (a client may not be installed here); one that cannot
be read or parsed is a `ConfigurationError`, as a broken configuration file is.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pydantic import TypeAdapter, ValidationError

from toolscout.config.loader import environment_for, interpolate, load_config, read_text, server_problem
from toolscout.config.loader import parse_text as parse_document
from toolscout.config.models import (
    AnyServerConfig,
    GatewayConfig,
    HttpServerConfig,
    ServerConfig,
    ServerFileSource,
    StdioServerConfig,
)
from toolscout.errors import ConfigurationError

logger = logging.getLogger(__name__)

_SERVER = TypeAdapter[AnyServerConfig](ServerConfig)
_SERVER_KEYS = frozenset(
    {
        *(f.alias or n for n, f in StdioServerConfig.model_fields.items()),
        *(f.alias or n for n, f in HttpServerConfig.model_fields.items()),
        "transport",
        "type",
    }
    - {"kind"}
)


@dataclass(frozen=True)
class SourceState:
    """One source as last read: where, whether it was there, and which servers it gave."""

    type: str
    path: Path
    found: bool
    servers: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    """Names it has that were already taken (by the configuration or an earlier source)."""


def source_path(source: ServerFileSource, config_path: Path | None) -> Path:
    """The file a source names: `~` expanded, a relative path read from the configuration's directory."""
    path = Path(os.path.expanduser(source.path))
    if not path.is_absolute() and config_path is not None:
        path = config_path.parent / path
    return path


def source_paths(config: GatewayConfig, config_path: Path | None) -> list[Path]:
    """Every file `config`'s sources name, in order (what a reload watches besides the configuration)."""
    return [source_path(source, config_path) for source in config.sources]


def load_with_sources(path: Path, env: Mapping[str, str] | None = None) -> GatewayConfig:
    """Load the configuration file at `path`, with the servers of its `sources` added to `mcpServers`."""
    return with_sources(load_config(path, env), path, env)[0]


def with_sources(
    config: GatewayConfig, config_path: Path | None, env: Mapping[str, str] | None = None
) -> tuple[GatewayConfig, list[SourceState]]:
    """`config` with its sources' servers added after its own, and what each source gave."""
    if not config.sources:
        return config, []
    servers: dict[str, AnyServerConfig] = dict(config.mcp_servers)
    states: list[SourceState] = []
    for source in config.sources:
        path = source_path(source, config_path)
        if not path.is_file():
            logger.warning("source %s: %s not found; its servers are left out until it exists", source.type, path)
            states.append(SourceState(source.type, path, found=False))
            continue
        given = read_source(source.type, path, env)
        taken = tuple(name for name in given if name in servers)
        for name in taken:
            logger.warning("source %s (%s): server %r is already configured; skipped", source.type, path, name)
        added = {name: server for name, server in given.items() if name not in servers}
        servers.update(added)
        states.append(SourceState(source.type, path, found=True, servers=tuple(added), skipped=taken))
    return config.model_copy(update={"mcp_servers": servers}), states


def read_source(kind: str, path: Path, env: Mapping[str, str] | None = None) -> dict[str, AnyServerConfig]:
    """The servers of one source file, validated (a `ConfigurationError` names the file and the entry)."""
    origin = f"{path} (source {kind})"
    parsed = parse_document(read_text(path), path.suffix.lstrip(".").lower() or "json", origin)
    if not isinstance(parsed, dict):
        raise ConfigurationError(f"Configuration error in {origin}: the top level must be a mapping of servers.")
    document = cast(dict[str, Any], parsed)
    entries = document.get("mcpServers", document.get("servers", {}))
    if not isinstance(entries, dict):
        raise ConfigurationError(f"Configuration error in {origin}: `mcpServers` must be a mapping of servers.")
    environment = environment_for(path, env)
    servers: dict[str, AnyServerConfig] = {}
    for name, raw in cast(dict[str, Any], entries).items():
        if not isinstance(raw, dict):
            raise ConfigurationError(f"Configuration error in {origin}: {name}: a server entry must be a mapping.")
        entry = _entry(cast(dict[str, Any], raw))
        unused = sorted(set(entry) - _SERVER_KEYS)
        if unused:
            logger.info("source %s: %s: left out keys toolscout does not use: %s", kind, name, ", ".join(unused))
        entry = {key: value for key, value in entry.items() if key in _SERVER_KEYS}
        try:
            servers[str(name)] = _SERVER.validate_python(interpolate(entry, environment))
        except ValidationError as exc:
            problems = "; ".join(server_problem(str(name), err) for err in exc.errors())
            raise ConfigurationError(f"Configuration error in {origin}: {problems}.") from None
    return servers


def _entry(raw: dict[str, Any]) -> dict[str, Any]:
    """A server entry in the `mcpServers` shape: a custom file's `connection` is lifted, its `name` left out."""
    connection = raw.get("connection")
    if not isinstance(connection, dict):
        return raw
    entry = {key: value for key, value in raw.items() if key not in ("connection", "name")}
    entry.update(cast(dict[str, Any], connection))
    if "description" not in entry and isinstance(raw.get("name"), str):
        entry["description"] = raw["name"]
    return entry
