"""Did-you-mean suggestions for names a user or a model got slightly wrong, and the errors that carry them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolscout.errors import ServerNotFound, ToolNotFound

if TYPE_CHECKING:
    from toolscout.gateway.catalog import Catalog

MAX_SUGGESTIONS = 3


def closest(name: str, choices: Sequence[str], limit: int = MAX_SUGGESTIONS) -> list[str]:
    """Up to `limit` of `choices` that look like `name`, best first."""
    from rapidfuzz import fuzz, process  # (here: only a name not found needs it, and commands start faster)

    matches = process.extract(name, choices, scorer=fuzz.WRatio, limit=limit, score_cutoff=60)
    return [m[0] for m in matches]


def did_you_mean(close: Sequence[str]) -> str:
    """` Did you mean 'a', 'b'?`, or nothing when there is nothing close."""
    return f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""


def server_not_found(name: str, known: Sequence[str]) -> ServerNotFound:
    """The error for an unknown server name, with the closest configured names."""
    close = closest(name, known)
    return ServerNotFound(
        f"No server named {name!r}.{did_you_mean(close)}",
        next_step="list_servers",
        server=name,
        suggestions=close or None,
    )


def tool_not_found(catalog: Catalog, server: str, name: str) -> ToolNotFound:
    """The error for a tool `server` does not have, with the closest of its tools and the other
    servers that have one of that name."""
    suggestions = [{"server": server, "tool": t} for t in closest(name, [t.name for t in catalog.tools(server)])]
    for other in catalog.servers_with_tool(name):
        entry = catalog.get(other, name)
        if other != server and entry is not None and entry.enabled:
            suggestions.insert(0, {"server": other, "tool": name})
    suggestions = suggestions[:MAX_SUGGESTIONS]
    hint = " Did you mean " + ", ".join(f"{s['tool']!r} on {s['server']!r}" for s in suggestions) + "?"
    return ToolNotFound(
        f"Server {server!r} has no tool {name!r}.{hint if suggestions else ''}",
        next_step="find_tool",
        server=server,
        tool=name,
        suggestions=suggestions or None,
    )


LISTED_IN_FULL = 10
"""Up to this many tools, an unknown tool's error names them all; beyond, the closest only."""


def unknown_tool(name: str, offered: Sequence[str]) -> ToolNotFound:
    """The error for a `tools/call` name the client's tool list does not have (the protocol's
    unknown tool, INVALID_PARAMS at the edge), with the closest names it does have."""
    close = closest(name, offered)
    if len(offered) <= LISTED_IN_FULL:
        rest = f" This gateway offers {', '.join(offered)}." if offered else " This gateway offers no tools yet."
    else:
        rest = f" tools/list names all {len(offered)} tools this gateway offers."
    return ToolNotFound(f"Unknown tool {name!r}.{did_you_mean(close)}{rest}", tool=name, suggestions=close or None)
