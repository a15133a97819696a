"""toolscout: an MCP gateway that lets an agent discover tools instead of carrying all of them.

`toolscout.open_gateway` opens one in process (`toolscout.api`, docs/PYTHON_API.md). It is imported
when first named, not with the package: the command line imports `toolscout` for every command, and
most of them never load the MCP SDK the gateway needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolscout.api import Hit, Scout, ServerInfo, ToolDetails, open_gateway

__version__ = "0.1.0"

__all__ = ["Hit", "Scout", "ServerInfo", "ToolDetails", "open_gateway"]

_API_NAMES = frozenset(__all__)


def __getattr__(name: str) -> Any:
    if name in _API_NAMES:
        import toolscout.api

        return getattr(toolscout.api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
