"""`toolscout cache show | clear`: the persistent catalog (each server's last known tools).

Neither command connects to a server; both work without a configuration file (then on the
default file in the user cache directory).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from toolscout.cli.common import ConfigOption, JsonOption, Output, load
from toolscout.config import GatewayConfig, find_config
from toolscout.config.models import CatalogCacheConfig
from toolscout.errors import ConfigurationError

if TYPE_CHECKING:
    from toolscout.gateway.store import CatalogStore

cache_app = typer.Typer(
    name="cache", help="The persistent catalog: each server's last known tools.", no_args_is_help=True
)

ServerOption = Annotated[str | None, typer.Option("--server", "-s", help="Only this server's cached catalog.")]


def register(app: typer.Typer) -> None:
    app.add_typer(cache_app)


def _config(config: Path | None, output: Output, *, strict: bool) -> GatewayConfig | None:
    """The configuration, or None when none is named and none is found (the defaults apply then)."""
    if config is None:
        try:
            find_config(None)
        except ConfigurationError:
            return None
    # `show` compares config hashes, which need `${VAR}`s filled in as `serve` fills them.
    return load(config, output, lenient=not strict)[0]


def _store(gateway_config: GatewayConfig | None) -> CatalogStore:
    # Imported here: the MCP types it needs are slow to import, and most commands never touch the cache.
    from toolscout.gateway.store import CatalogStore, store_path

    settings = gateway_config.catalog_cache if gateway_config is not None else CatalogCacheConfig()
    return CatalogStore(store_path(settings))


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


@cache_app.command()
def show(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Cached servers: tool counts, when each was listed, and whether it still matches the config."""
    from toolscout.upstream.spec import config_hash

    output = Output(as_json)
    gateway_config = _config(config, output, strict=True)
    store = _store(gateway_config)
    current = (
        {name: config_hash(server) for name, server in gateway_config.mcp_servers.items()}
        if gateway_config is not None
        else None
    )
    rows: list[dict[str, Any]] = []
    for entry in store.entries():
        if current is None:
            state = None
        elif entry.server not in current:
            state = "not configured"
        else:
            state = "current" if current[entry.server] == entry.config_hash else "config changed"
        rows.append(
            {
                "server": entry.server,
                "toolCount": entry.tool_count,
                "savedAt": _when(entry.saved_at),
                "configHash": entry.config_hash[:12],
                "state": state,
            }
        )
    enabled = gateway_config is None or gateway_config.catalog_cache.enabled
    if output.json_mode:
        output.data({"path": str(store.path), "enabled": enabled, "entries": rows})
        return
    note = "" if enabled else " (catalogCache is off in this config)"
    output.print(f"Catalog cache: {escape(str(store.path))}{note}")
    if not rows:
        output.print("  (empty)")
    for row in rows:
        state = {"current": "[green]current[/green]", None: ""}.get(row["state"], f"[dim]{row['state']}[/dim]")
        output.print(f"  {escape(row['server'])}: {row['toolCount']} tools, saved {row['savedAt']}  {state}".rstrip())
    if any(r["state"] == "config changed" for r in rows):
        output.note("Entries for a changed config are never served; the next connection saves a current one.")


@cache_app.command()
def clear(config: ConfigOption = None, server: ServerOption = None, as_json: JsonOption = False) -> None:
    """Remove every cached catalog (or one server's): the next start waits for the servers again."""
    output = Output(as_json)
    store = _store(_config(config, output, strict=False))
    removed = store.clear(server)
    if output.json_mode:
        output.data({"path": str(store.path), "server": server, "removed": removed})
        return
    what = ("entry" if removed == 1 else "entries") + (f" of {escape(server)}" if server else "")
    output.print(f"Removed {removed} cached catalog {what} from {escape(str(store.path))}.")
