"""Changing the gateway's config file from a page: through the same editor as `toolscout rules` and
`toolscout config` (comments and layout kept, a backup of the previous version written, a file
`serve` would refuse never written), then applied to the running gateway at once by its reloader
(reload.py), as if the file had been saved by hand."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio

from toolscout.config.edit import ConfigDocument
from toolscout.config.loader import check_config_text
from toolscout.errors import ToolscoutError
from toolscout.serve.dashboard.context import Dashboard, DashboardError

NO_FILE = (
    "This gateway runs without a config file (the demo, say), so nothing can be saved. Start it with "
    "`--config FILE` to change it from here."
)


@dataclass(frozen=True)
class Saved:
    """A change written to the config file."""

    path: Path
    backup: Path | None
    """The previous version (None: the file did not change)."""
    applied: bool
    """Whether the running gateway took it on at once (its reloader said so)."""


def config_path(dashboard: Dashboard) -> Path:
    """The config file pages write, or the refusal saying there is none."""
    if dashboard.config_path is None:
        raise DashboardError(409, NO_FILE)
    return dashboard.config_path


async def edit_config(dashboard: Dashboard, change: Callable[[ConfigDocument], None]) -> Saved:
    """Apply `change` to the config file, check the result, save it with a backup, and reload."""
    path = config_path(dashboard)

    def write() -> Path | None:
        document = ConfigDocument.load(path)
        change(document)
        check_config_text(document.text(), document.format, str(path))  # never write a file serve refuses
        return document.save()

    async with dashboard.config_lock:
        try:
            backup = await anyio.to_thread.run_sync(write)
        except ToolscoutError as exc:
            raise DashboardError(400, f"{exc.message} Nothing was saved.") from None
        applied = False
        if dashboard.reloader is not None:
            await dashboard.reloader.check(asked=True)
            applied = True
    return Saved(path, backup, applied)


def tool_rules(document: ConfigDocument) -> list[dict[str, Any]]:
    """The document's `toolRules`, as plain dicts to edit."""
    return [dict(cast(dict[str, Any], rule)) for rule in cast(list[Any], document.get(["toolRules"]) or [])]


def read_tool_rules(dashboard: Dashboard) -> list[dict[str, Any]]:
    """The config file's `toolRules` as written now."""
    return tool_rules(ConfigDocument.load(config_path(dashboard)))
