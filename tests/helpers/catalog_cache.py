"""The persistent catalog in tests: a config with its own cache file, snapshots stored ahead of a start,
a server that never answers (so only the cache can), and meta-tool calls straight on a gateway."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, cast

import mcp_types as types

from tests.helpers.paths import PYTHON
from toolscout.config import GatewayConfig
from toolscout.config.models import config_hash
from toolscout.gateway.core import Gateway
from toolscout.gateway.store import CatalogStore, ServerSnapshot
from toolscout.modes.discovery import BY_NAME, run_meta_tool

# A stdio "server" that starts and never says a word: its handshake never finishes.
HANGING = {"command": PYTHON, "args": ["-c", "import time; time.sleep(3600)"]}

UNIT_TOOLS = (
    types.Tool(
        name="convert_units",
        description="Convert a value between units of length, mass and temperature (miles to kilometers).",
        input_schema={
            "type": "object",
            "properties": {"value": {"type": "number"}, "from": {"type": "string"}, "to": {"type": "string"}},
            "required": ["value", "from", "to"],
        },
    ),
    types.Tool(
        name="calculate", description="Evaluate an arithmetic expression safely.", input_schema={"type": "object"}
    ),
)


def snapshot(server: str, key: str, tools: tuple[types.Tool, ...] = UNIT_TOOLS, **identity: Any) -> ServerSnapshot:
    return ServerSnapshot(server=server, config_hash=key, tools=tools, saved_at=time.time(), **identity)


def cached_config(tmp_path: Path, servers: dict[str, Any]) -> GatewayConfig:
    return GatewayConfig.model_validate(
        {"mcpServers": servers, "catalogCache": {"path": str(tmp_path / "catalog.sqlite3")}}
    )


def remember(config: GatewayConfig, server: str, **identity: Any) -> ServerSnapshot:
    """Store UNIT_TOOLS as `server`'s catalog under its current configuration."""
    assert config.catalog_cache.path is not None
    saved = snapshot(server, config_hash(config.mcp_servers[server]), **identity)
    CatalogStore(Path(config.catalog_cache.path)).save([saved])
    return saved


async def meta(gateway: Gateway, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await run_meta_tool(BY_NAME, gateway, name, arguments)
    assert result is not None and not result.is_error, result
    return cast(dict[str, Any], result.structured_content)
