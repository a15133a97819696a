"""Categories of tools (network, file, database, …): the last fallback when no tool clears the threshold.

When smart mode finds no tool it trusts, a request's words still often say what kind of tool it
wants ("ping", "url": network; "table", "sql": database). `request_category` names the category
whose words the request uses most, and `best_of_category` offers the best tools of that category:
those whose name, description or tags use the category's words, ranked by the confidence the
selection gave them (the ones it did not rank come after, in catalog order).

The table is one of words, not of tools: a category is what its words are, so it works for any
catalog. A word counts in its plain forms (`files` is `file`, `queried` and `queries` are `query`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from toolscout.catalog import CatalogTool

CATEGORIES: dict[str, frozenset[str]] = {
    "network": frozenset(
        {
            "network",
            "ping",
            "http",
            "https",
            "url",
            "request",
            "fetch",
            "download",
            "upload",
            "dns",
            "host",
            "hostname",
            "connectivity",
            "web",
            "website",
            "api",
            "endpoint",
            "socket",
            "port",
            "ip",
            "curl",
            "webhook",
            "latency",
            "traceroute",
            "domain",
            "post",
        }
    ),
    "file": frozenset(
        {
            "file",
            "folder",
            "directory",
            "dir",
            "path",
            "disk",
            "copy",
            "move",
            "rename",
            "backup",
            "archive",
            "zip",
            "filesystem",
            "document",
            "sync",
            "attachment",
            "upload",
        }
    ),
    "database": frozenset(
        {
            "database",
            "db",
            "sql",
            "query",
            "table",
            "row",
            "column",
            "record",
            "postgres",
            "postgresql",
            "mysql",
            "sqlite",
            "mongo",
            "mongodb",
            "redis",
            "schema",
            "insert",
            "collection",
        }
    ),
    "text": frozenset(
        {
            "text",
            "word",
            "string",
            "sentence",
            "paragraph",
            "character",
            "letter",
            "translate",
            "summarize",
            "summary",
            "spell",
            "grammar",
            "uppercase",
            "lowercase",
            "regex",
            "diff",
            "language",
            "markdown",
        }
    ),
    "math": frozenset(
        {
            "calculate",
            "calculation",
            "math",
            "number",
            "sum",
            "average",
            "convert",
            "conversion",
            "unit",
            "measure",
            "measurement",
            "metric",
            "imperial",
            "percent",
            "equation",
            "multiply",
            "divide",
        }
    ),
    "time": frozenset(
        {
            "time",
            "date",
            "clock",
            "timezone",
            "calendar",
            "schedule",
            "meeting",
            "reminder",
            "deadline",
            "hour",
            "minute",
            "week",
            "month",
            "year",
            "timestamp",
        }
    ),
    "system": frozenset(
        {
            "system",
            "process",
            "command",
            "shell",
            "execute",
            "exec",
            "script",
            "build",
            "cpu",
            "memory",
            "health",
            "service",
            "restart",
            "log",
            "logs",
            "monitor",
            "kill",
            "env",
        }
    ),
    "messaging": frozenset(
        {
            "email",
            "mail",
            "message",
            "send",
            "chat",
            "slack",
            "notify",
            "notification",
            "sms",
            "channel",
            "inbox",
            "reply",
        }
    ),
    "code": frozenset(
        {"git", "commit", "branch", "repository", "repo", "code", "pull", "merge", "review", "diff", "lint", "compile"}
    ),
    "notes": frozenset({"note", "notes", "notebook", "memo", "todo", "journal", "vault"}),
}
"""Each category's words, in their plain form. Verbs any kind of tool uses (get, list, read, run) are
left out: they would pull every request towards one category."""

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def plain(word: str) -> str:
    """`word` in its plain form: lower case, without a plural or past ending (`queries`, `queried` → `query`)."""
    word = word.lower()
    if len(word) > 4 and word.endswith(("ies", "ied")):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("sses"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """The plain words of `text`, names split at `_`, `-` and case changes (`readFile` is read, file)."""
    return [plain(w) for w in _WORD.findall(text)]


def _hits(found: Iterable[str]) -> dict[str, list[str]]:
    """Each category with the words of `found` that belong to it (categories without any left out)."""
    out: dict[str, list[str]] = {}
    for word in found:
        for name, vocabulary in CATEGORIES.items():
            if word in vocabulary and word not in out.get(name, []):
                out.setdefault(name, []).append(word)
    return out


@dataclass(frozen=True)
class Category:
    """The category a request points at, and its words that did."""

    name: str
    words: tuple[str, ...]


def request_category(request: str) -> Category | None:
    """The category whose words `request` uses most (the first in the table on a tie), or None."""
    hits = _hits(words(request))
    if not hits:
        return None
    order = list(CATEGORIES)
    name = max(hits, key=lambda n: (len(hits[n]), -order.index(n)))
    return Category(name, tuple(hits[name]))


def tool_categories(tool: CatalogTool) -> frozenset[str]:
    """The categories whose words the tool's name, description or tags use."""
    text = " ".join((tool.name, tool.title or "", tool.description, " ".join(tool.tags)))
    return frozenset(_hits(words(text)))


@dataclass(frozen=True)
class Ranked:
    """A tool offered by the fallback, with the confidence the selection gave it (0 when it was not ranked)."""

    tool: CatalogTool
    confidence: float
    reasoning: str


def best_of_category(
    category: Category, ranked: Sequence[Ranked], catalog: Sequence[CatalogTool], *, limit: int
) -> list[Ranked]:
    """The best `limit` tools of `category`: the ranked ones first, by confidence, then the rest of `catalog`."""
    out: list[Ranked] = []
    seen: set[tuple[str, str]] = set()
    for entry in sorted(ranked, key=lambda r: -r.confidence):
        key = (entry.tool.server, entry.tool.name)
        if key not in seen and category.name in tool_categories(entry.tool):
            out.append(entry)
            seen.add(key)
    for tool in catalog:
        key = (tool.server, tool.name)
        if key not in seen and category.name in tool_categories(tool):
            out.append(Ranked(tool, 0.0, f"A {category.name} tool"))
            seen.add(key)
    return out[:limit]
