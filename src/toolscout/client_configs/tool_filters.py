"""A client's per-server lists of tools to hide or keep, written as toolscout `toolRules` entries."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from toolscout.client_configs.normalize import Draft, str_list

__all__ = ["exclude_rule", "include_rule", "tool_filters"]

_GLOB_META = re.compile(r"[*?\[\]{}]")


def _literal(name: str) -> str:
    """A pattern matching exactly `name` (ignoring case, as every toolscout pattern does).

    Plain names stay readable; names with glob characters become an anchored regex.
    """
    if _GLOB_META.search(name) or name.startswith(("/", "!")):
        return f"/^{re.escape(name)}$/"
    return name


def exclude_rule(server: str, tools: Iterable[str]) -> dict[str, Any]:
    """A toolRules entry disabling exactly these tools of one server."""
    return {"server": _literal(server), "pattern": [_literal(t) for t in tools], "enabled": False}


def include_rule(server: str, tools: Iterable[str]) -> dict[str, Any]:
    """A toolRules entry disabling every tool of one server except these.

    A rule with `enabled: true` would turn toolscout's rules into a whitelist for
    every server, so the allow-list is written as "disable `*` except ...".
    """
    return {
        "server": _literal(server),
        "pattern": ["*", *(f"!{_literal(t)}" for t in tools)],
        "enabled": False,
    }


def tool_filters(raw: Mapping[str, Any], draft: Draft, exclude_key: str, include_key: str) -> None:
    """A client's per-server deny and allow lists of tool names, as toolRules entries on `draft`.

    Exclusion goes first: toolscout's first deciding rule wins, and clients let exclusion win.
    """
    excluded = str_list(raw.get(exclude_key), exclude_key, draft)
    included = str_list(raw.get(include_key), include_key, draft)
    if excluded:
        draft.tool_rules.append(exclude_rule(draft.name, excluded))
        draft.note(f"`{exclude_key}` became a toolRules entry disabling {', '.join(excluded)}")
    if included:
        draft.tool_rules.append(include_rule(draft.name, included))
        draft.note(f"`{include_key}` became a toolRules entry disabling every tool but {', '.join(included)}")
