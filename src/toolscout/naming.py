"""How the gateway names an upstream's tools and prompts, and how a name leads back to its server.

Native names. Passthrough and dynamic mode list tools, and every mode lists prompts, as
`server__name`, or a tool by its own name where `toolNames` allows it
(modes/passthrough.py). Names must be valid for every major client: at most 64 characters of
`[a-zA-Z0-9_-]` (the strictest common rule; Claude, OpenAI and Gemini all accept it). Anything
else is replaced by `_`, and a name that is too long, or that two items would share after that,
gets a short hash of the original `server` and `name` instead of its tail, so names are
deterministic and unique.

Upstreams' own names. A client that already knows an upstream (a conformance suite, a script
written against the server itself, a resource link an upstream put in a tool result) uses that
upstream's own names instead of the gateway's. Those are routed too, when exactly one server has
them (`only_owner`); otherwise the caller is told which servers could, under which gateway names.
The gateway's own names always win, so a bare name never shadows a listed one.

What people read. The command line writes an upstream tool as `server/tool` wherever a person reads
one (search hits, details, an execution, suggestions), the spelling smart mode already shows, and
reads it back wherever a tool is named (`tool_label`, `split_tool_label`). It keeps both names as
they are: a native name is cleaned and may be hashed, so it cannot always be read back.

Call targets. A meta-tool call names the upstream tool it is about under `server`/`tool`
(discovery, dynamic) or `server_name`/`tool_name` (compact): `call_target` reads either, for
the error results and the audit of a call refused before it reached a server.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolscout.errors import AmbiguousName

MAX_NAME = 64
SEPARATOR = "__"
LABEL_SEPARATOR = "/"
"""Between the server and the tool in the spelling people read and type (`units/convert_units`)."""
LABEL_SEPARATORS = (LABEL_SEPARATOR, ":", SEPARATOR)
"""Every spelling a person may type: toolscout's own, the discovery service design's `server:tool`
(its command line prints that), and the native `server__tool`."""
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")

CALL_TARGET_KEYS: dict[str, tuple[str, ...]] = {"server": ("server", "server_name"), "tool": ("tool", "tool_name")}
"""Where a meta-tool's arguments name the upstream tool: discovery's keys, then compact's."""


def _hash(server: str, name: str, length: int) -> str:
    return hashlib.sha256(f"{server}\0{name}".encode()).hexdigest()[:length]


def _clean(name: str) -> str:
    return _INVALID.sub("_", name)


def _plain(server: str, name: str) -> str:
    return _clean(server) + SEPARATOR + _clean(name)


def _hashed(base: str, pair: tuple[str, str], length: int) -> str:
    suffix = "_" + _hash(*pair, length)
    return base[: MAX_NAME - len(suffix)] + suffix


def native_names(
    pairs: Iterable[tuple[str, str]],
    *,
    bare: bool = False,
    preferred: Mapping[tuple[str, str], str] | None = None,
) -> dict[tuple[str, str], str]:
    """A unique, client-valid name for each `(server, name)`; the same set always gets the same names.

    `bare`: an item's own name (made valid) where no other server has one of that name; the
    others, and every name with `bare` false, are `server__name`. `preferred`: the name an item
    would have (made valid) in place of those, as a run's registrations name their tools; two items
    preferring one name each get a hash, as any two that would share a name do.
    """
    unique = sorted(set(pairs))
    owners: defaultdict[str, set[str]] = defaultdict(set)
    if bare:
        for server, name in unique:
            owners[_clean(name)].add(server)

    def base(pair: tuple[str, str]) -> str:
        if preferred is not None and pair in preferred:
            return _clean(preferred[pair])
        own = _clean(pair[1])
        return own if bare and own and len(owners[own]) == 1 else _plain(*pair)

    names: dict[tuple[str, str], str] = {}
    groups: defaultdict[str, list[tuple[str, str]]] = defaultdict(list)
    bases = {pair: base(pair) for pair in unique}
    for pair, name in bases.items():
        groups[name if len(name) <= MAX_NAME else _hashed(name, pair, 8)].append(pair)
    taken = {name for name, members in groups.items() if len(members) == 1}
    for name, members in groups.items():
        if len(members) == 1:
            names[members[0]] = name
            continue
        # Several items would share a name: each gets its own hash, longer until none collide.
        for pair in members:
            length = 8
            candidate = _hashed(bases[pair], pair, length)
            while candidate in taken:
                length += 4
                candidate = _hashed(bases[pair], pair, length)
            taken.add(candidate)
            names[pair] = candidate
    return names


def only_owner(kind: str, name: str, owners: Sequence[str], gateway_names: Iterable[str]) -> str | None:
    """The one server in `owners` that has an upstream's own `name` (None when none); several raise
    `AmbiguousName`, naming the gateway's name of each (`kind`: what `name` is, for the message)."""
    unique = sorted(set(owners))
    if len(unique) > 1:
        named = ", ".join(gateway_names)
        raise AmbiguousName(
            f"Several servers have a {kind} {name!r} ({', '.join(unique)}): use the gateway's name for it, {named}.",
            name=name,
            servers=unique,
        )
    return unique[0] if unique else None


def call_target(arguments: Mapping[str, Any]) -> dict[str, str]:
    """The `server` and `tool` a meta-tool call's `arguments` name (under any of `CALL_TARGET_KEYS`),
    those that are strings, the first key that has one winning; missing ones are left out."""
    target: dict[str, str] = {}
    for key, aliases in CALL_TARGET_KEYS.items():
        value = next((v for alias in aliases if isinstance(v := arguments.get(alias), str)), None)
        if value is not None:
            target[key] = value
    return target


def tool_label(server: str, tool: str) -> str:
    """Return the spelling of an upstream tool people read and type: `server/tool`."""
    return f"{server}{LABEL_SEPARATOR}{tool}"


def tool_spellings(server: str, tool: str) -> frozenset[str]:
    """Return every spelling that names `tool` of `server` (`LABEL_SEPARATORS`), for matching names a
    person or a model gives against a tool."""
    return frozenset(f"{server}{separator}{tool}" for separator in LABEL_SEPARATORS)


def split_tool_label(label: str, servers: Iterable[str]) -> tuple[str, str] | None:
    """Return the `(server, tool)` that `label` names as `server/tool` (or as `server:tool` or the
    native `server__tool`), or None when no configured server in `servers` starts it.

    Server names may hold the separator themselves, so the longest configured name that fits wins.
    """
    for separator in LABEL_SEPARATORS:
        fits = [s for s in servers if label.startswith(s + separator) and len(label) > len(s) + len(separator)]
        if fits:
            server = max(fits, key=len)
            return server, label[len(server) + len(separator) :]
    return None
