"""Which server a resource URI as the upstreams say it (without the gateway's prefix) belongs to.

A client may use an upstream's own names rather than the gateway's (naming.py says when, and
what it is told when several servers have one). A bare resource URI belongs to the server that
lists it; failing that, to the server with a resource template that matches it; failing that, to
the one server that offers resources at all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_PATTERNS: dict[str, str] = {
    "": r"[^/?#]*",  # simple expansion percent-encodes reserved characters, so no `/`
    "+": r".*",  # reserved expansion keeps them
    "#": r"(?:#.*)?",
    ".": r"(?:\.[^/?#]*)*",
    "/": r"(?:/[^?#]*)*",
    ";": r"(?:;[^/?#]*)*",
    "?": r"(?:\?[^#]*)?",
    "&": r"(?:&[^#]*)?",
}


@lru_cache(maxsize=1024)
def _template_pattern(template: str) -> re.Pattern[str]:
    parts: list[str] = []
    position = 0
    for match in _EXPRESSION.finditer(template):
        parts.append(re.escape(template[position : match.start()]))
        body = match.group(1)
        operator = body[0] if body and body[0] in "+#./;?&" else ""
        parts.append(_PATTERNS[operator])
        position = match.end()
    parts.append(re.escape(template[position:]))
    return re.compile("".join(parts), re.DOTALL)


def template_matches(template: str, uri: str) -> bool:
    """Whether some expansion of the RFC 6570 `template` could be `uri` (a good guess, not a parser)."""
    return _template_pattern(template).fullmatch(uri) is not None


def uri_owners(
    uri: str,
    resources: Mapping[str, Iterable[str]],
    templates: Mapping[str, Iterable[str]],
    offering: Sequence[str],
) -> list[str]:
    """The servers that could own a bare resource `uri`, best evidence first.

    `resources` and `templates` are each server's known resource URIs and URI templates;
    `offering` the servers that offer resources at all.
    """
    listing = [server for server, uris in resources.items() if uri in uris]
    if listing:
        return listing
    matching = [server for server, found in templates.items() if any(template_matches(t, uri) for t in found)]
    if matching:
        return matching
    return list(offering) if len(offering) == 1 else []
