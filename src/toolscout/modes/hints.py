"""What toolscout tells a client that defers tool schemas itself, and the order its native tools are listed in.

Clients and model APIs now keep most tools out of the model's context and find them with a tool
search of their own (Anthropic's tool search tool, Claude Code, OpenAI's `tool_search`). Claude
Code reads two keys of a tool's `_meta`: `anthropic/alwaysLoad: true` keeps the tool in context
whatever it defers, and `anthropic/searchHint` is a short string of words its tool search matches.
toolscout adds both beside whatever `_meta` the upstream gave (`hinted`), never in its place:

* its own tools (the meta-tools of every mode) are always loaded: a client that defers every MCP
  tool must still see the search, or it can find nothing;
* an upstream tool is `eager` or `deferred` (`load` on its server's entry, or on a tool rule, which
  wins); an eager one gets `alwaysLoad: true`. Where neither says, an upstream's own `alwaysLoad`
  stands; a config that says `deferred` turns an upstream's `true` into `false`;
* every native tool gets a `searchHint` made from what the search knows of it (`search_hint`),
  unless its upstream wrote one.

Native lists are ordered so that a client's prompt cache outlives list changes that do not touch a
tool (`native_order`): toolscout's own tools first, then the eager tools, then the deferred ones;
within each, the servers in configuration order and each server's tools by name. By name rather
than as the server listed them: a server that builds its list from a dict or a directory may list
the same tools in another order after a restart, and by name the same tools give the same bytes. A
change to one server then changes the list only from that server's place on.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

import mcp_types as types

from toolscout.catalog import CatalogTool, least_permissive
from toolscout.config.rules import Load
from toolscout.config.scopes import UNSCOPED, current_scope, scoped
from toolscout.gateway.core import Gateway
from toolscout.gateway.index import import_search_package
from toolscout.gateway.visibility import ScopedCache

ALWAYS_LOAD = "anthropic/alwaysLoad"
"""`_meta` key: `true` keeps the tool in the model's context in a client that defers tools."""
SEARCH_HINT = "anthropic/searchHint"
"""`_meta` key: words a client's own tool search matches the tool by."""
OWN_TOOL_META: dict[str, Any] = {ALWAYS_LOAD: True}
"""The `_meta` of toolscout's own tools."""
HINT_LIMIT = 160
"""The characters of a search hint: its keywords and a summary, a sentence's worth."""

_SENTENCE_END = re.compile(r"[.!?。…]+$")


@functools.cache
def _families() -> dict[str, tuple[str, ...]]:
    """Each verb of the search's synonym families, with the rest of its family."""
    import_search_package()
    from toolscout.search.text import SYNONYM_FAMILIES

    found: dict[str, list[str]] = {}
    for family in SYNONYM_FAMILIES:
        for word in family:
            found.setdefault(word, []).extend(w for w in family if w != word)
    return {word: tuple(dict.fromkeys(others)) for word, others in found.items()}


@functools.lru_cache(maxsize=65_536)
def _hint(name: str, title: str, tags: tuple[str, ...], summary: str) -> str:
    import_search_package()
    from toolscout.search.text import STOPWORDS, split_identifier

    own = [w for text in (name, title, *tags) for w in split_identifier(text) if w not in STOPWORDS and len(w) > 1]
    families = _families()
    related = [other for word in own for other in families.get(word, ())]
    words = " ".join(dict.fromkeys([*own, *related]))
    line = _SENTENCE_END.sub("", summary)
    text = f"{words}: {line}" if words and line else words or line
    if len(text) <= HINT_LIMIT:
        return text
    return text[: HINT_LIMIT - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"


def search_hint(entry: CatalogTool) -> str:
    """The words a client's tool search should find `entry` by: the words of its name, title and tags,
    the other verbs of each verb's family the search knows (`create` brings `add`, `new`, ...), then its
    summary; at most `HINT_LIMIT` characters. Remembered per tool text: a large catalog pays for its
    hints once, and after a change only for the tools that changed."""
    return _hint(entry.name, entry.title or "", entry.tags, entry.summary)


def configured_load(entry: CatalogTool, loads: Mapping[str, Load | None]) -> Load | None:
    """What the configuration says of `entry`: its tool rule's `load`, else its server's when the entry
    sets one (`loads`: by server), else None."""
    return entry.load or loads.get(entry.server)


def is_eager(entry: CatalogTool, loads: Mapping[str, Load | None]) -> bool:
    """Whether `entry` is always loaded: the configuration says `eager`, or says nothing and the upstream
    itself marked the tool `alwaysLoad`."""
    said = configured_load(entry, loads)
    if said is not None:
        return said == "eager"
    meta = entry.tool.meta or {}
    return meta.get(ALWAYS_LOAD) is True


def hinted(entry: CatalogTool, name: str, loads: Mapping[str, Load | None]) -> types.Tool:
    """`entry`'s tool as a client sees it natively, under `name`, with toolscout's keys added to its
    `_meta`, every key the upstream gave kept: `searchHint` unless it wrote one, and `alwaysLoad` as the
    configuration says (`true` when eager; `false` only over an upstream's own `true`). Everything else
    is the upstream's own (one copy: a large catalog's list is made of these)."""
    tool = entry.tool
    meta = dict(tool.meta or {})
    if SEARCH_HINT not in meta:
        meta[SEARCH_HINT] = search_hint(entry)
    said = configured_load(entry, loads)
    if said == "eager":
        meta[ALWAYS_LOAD] = True
    elif said == "deferred" and ALWAYS_LOAD in meta:
        meta[ALWAYS_LOAD] = False
    return tool.model_copy(update={"name": name, "meta": meta})


def server_loads(gateway: Gateway) -> dict[str, Load | None]:
    """Each upstream's `load` as its entry sets it (None: unset, so an upstream's own `alwaysLoad` stands),
    of every upstream whoever asks (the order of a list never depends on the scope)."""
    with scoped(UNSCOPED):
        return {u.name: u.spec.load for u in gateway.upstreams}


def native_order(entries: Iterable[CatalogTool], loads: Mapping[str, Load | None]) -> list[CatalogTool]:
    """`entries` (in the catalog's order: servers in configuration order) as a native list shows them:
    the eager tools, then the deferred ones; within each, servers in the order given and each
    server's tools by name (the module's docstring says why)."""
    listed = list(entries)
    place: dict[str, int] = {}
    for entry in listed:
        place.setdefault(entry.server, len(place))
    return sorted(listed, key=lambda e: (not is_eager(e, loads), place[e.server], e.name))


class Reach:
    """The annotations of a tool that runs upstream tools (`execute_tool`, `exec`, `smart_tool_discovery`)
    for the request's scope: the least permissive of the enabled tools the scope sees (`least_permissive`),
    made once per catalog version and scope. `tools/list` may vary by the authorization of a request,
    never by its connection, and so do these."""

    def __init__(self, gateway: Gateway, names: Iterable[str]) -> None:
        self.gateway = gateway
        self.names = frozenset(names)
        """The tools of a surface that run upstream tools."""
        self._cache = ScopedCache[types.ToolAnnotations]()

    def annotations(self) -> types.ToolAnnotations:
        """What the request's scope can reach, as annotations."""
        scope = current_scope()
        gateway = self.gateway
        version = (gateway.catalog.version, tuple(u.name for u in gateway.upstreams))
        return self._cache.get(scope, version, lambda: least_permissive(gateway.visibility.tools(scope)))

    def applied(self, definitions: list[types.Tool]) -> list[types.Tool]:
        """`definitions` with the annotations of the request's scope on the tools that run others."""
        if not any(tool.name in self.names for tool in definitions):
            return definitions
        annotations = self.annotations()
        return [
            tool.model_copy(update={"annotations": annotations}) if tool.name in self.names else tool
            for tool in definitions
        ]
