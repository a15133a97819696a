"""The did-you-mean for names a user or a model got slightly wrong, and the name errors that carry it.

A tool a server does not have is the catalog's to describe (`Catalog.not_found`): it knows the other
servers that have one of that name.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolscout.errors import ServerNotFound, ToolNotFound

MAX_SUGGESTIONS = 3
"""At most this many names are suggested for one that was not found."""
NAME_CUTOFF = 60
"""How alike (rapidfuzz WRatio, 0-100) a name must be to be suggested for a name a model got wrong."""


def closest(name: str, choices: Sequence[str], limit: int = MAX_SUGGESTIONS, cutoff: int = NAME_CUTOFF) -> list[str]:
    """Up to `limit` of `choices` that look like `name`, best first.

    The one did-you-mean of toolscout: unknown servers, tools, resources and prompts, and the
    command line's and the config's unknown keys and client ids (which ask for one, and a closer match).
    """
    from rapidfuzz import fuzz, process  # (here: only a name not found needs it, and commands start faster)

    matches = process.extract(name, choices, scorer=fuzz.WRatio, limit=limit, score_cutoff=cutoff)
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
