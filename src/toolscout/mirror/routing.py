"""Names as the upstreams say them: a tool, prompt or resource URI without the gateway's prefix.

The gateway lists everything under names that say whose it is (`server__tool`, `server__prompt`,
`toolscout://server/uri`). A client that already knows an upstream (a conformance suite, a
script written against the server itself, a resource link an upstream put in a tool result)
uses that upstream's own names instead. Those are routed too, when exactly one server can
own them; otherwise the caller is told which servers could, under which gateway names. The
gateway's own names always win, so a bare name never shadows a listed one.

A bare resource URI belongs to the server that lists it; failing that, to the server with a
resource template that matches it; failing that, to the one server that offers resources at all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from toolscout.errors import AmbiguousName

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


def only_owner(kind: str, name: str, owners: Sequence[str], gateway_names: Iterable[str]) -> str | None:
    """The one server in `owners` (None when none); several raise `AmbiguousName` with the gateway names."""
    unique = sorted(set(owners))
    if len(unique) > 1:
        named = ", ".join(gateway_names)
        raise AmbiguousName(
            f"Several servers have a {kind} {name!r} ({', '.join(unique)}): use the gateway's name for it, {named}.",
            name=name,
            servers=unique,
        )
    return unique[0] if unique else None


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
