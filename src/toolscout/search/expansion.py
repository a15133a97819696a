"""Query expansion: words a query means without saying them, so that a person's phrasing finds a tool's.

Two kinds. *Synonyms* of the action a query asks for: tools are named for one verb of a family
(`create_note`, `delete_file`, `get_weather`) while people use another ("add a note", "remove the
file", "show the weather"); each query word of a family brings the rest of it in, at a reduced
weight, since the word itself is still the best evidence, and only in short queries (a long task
has words enough). *Implied* words: "what time is it",
"right now", "today" ask for the present, which tools call `current` (`get_current_time`,
`current_weather`); these count as if the query said them, for the lexical and the semantic ranker.

The families are the common verbs of tool and API names, not words of any one catalog; small
catalogs need them most, where one incidental word of a description (`update_note`: "to add a
tag, ...") can otherwise outweigh the tool the query means.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from toolscout.search.text import terms

SYNONYM_WEIGHT = 0.5
"""What a synonym counts against a word of the query itself (tuned on `../shared/train`, flat from 0.5 to 1)."""

SYNONYM_MAX_TERMS = 6
"""Synonyms are added to short queries only (at most this many terms, about ten words): what a
person types when one word decides. A long task already has words enough, and a synonym for each
of its verbs only adds noise (BM25 alone on LiveMCPBench's long tasks lost MRR with them; the
training pairs are level either way)."""

SYNONYM_FAMILIES: tuple[tuple[str, ...], ...] = (
    ("create", "add", "new", "make", "insert", "register"),
    ("delete", "remove", "erase", "drop", "destroy", "discard"),
    ("update", "edit", "modify", "change", "rename", "set", "alter"),
    ("get", "fetch", "retrieve", "show", "display", "view", "read", "look"),
    ("search", "find", "query", "lookup", "look"),
    ("list", "enumerate", "browse"),
    ("send", "post", "publish", "submit"),
    ("run", "execute", "start", "launch", "trigger", "invoke"),
    ("stop", "cancel", "halt", "kill", "abort", "terminate"),
    ("convert", "transform"),
    ("calculate", "compute", "evaluate"),
    ("compare", "diff"),
    ("save", "store", "write"),
)

# A question about the present: "what time is it", "what's the date", "right now", "today", ...
_PRESENT = re.compile(
    r"\bwhat(?:'s|s|\s+is)?\s+(?:the\s+)?\w+\s+is\s+it\b"
    r"|\bwhat(?:'s|s|\s+is)\s+the\s+(?:time|date|day|weather)\b"
    r"|\b(?:right\s+)?now\b|\bcurrently\b|\btoday\b|\bat\s+the\s+moment\b",
    re.IGNORECASE,
)
PRESENT_WORD = "current"


def _synonym_table() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for family in SYNONYM_FAMILIES:
        stems = {term for word in family for term in terms(word)}
        for stem in stems:
            table.setdefault(stem, set()).update(stems - {stem})
    return {stem: frozenset(others) for stem, others in table.items()}


SYNONYMS = _synonym_table()
"""Stemmed word -> the stems of its family (without itself)."""


@dataclass(frozen=True, slots=True)
class Expansion:
    """A query's search terms: its own plus the implied ones (`terms`), and the synonyms' (`synonyms`)."""

    terms: tuple[str, ...]
    synonyms: tuple[str, ...]


def implied_words(query: str) -> list[str]:
    """Words the query means but does not say ("what time is it" -> ["current"])."""
    return [PRESENT_WORD] if _PRESENT.search(query) else []


def expand(query: str) -> Expansion:
    """The query's stemmed terms with the implied ones, and (for a short query) their synonyms, each once."""
    own = list(dict.fromkeys([*terms(query), *(t for word in implied_words(query) for t in terms(word))]))
    seen = set(own)
    synonyms: list[str] = []
    if len(own) > SYNONYM_MAX_TERMS:
        return Expansion(tuple(own), ())
    for term in own:
        for synonym in sorted(SYNONYMS.get(term, ())):
            if synonym not in seen:
                seen.add(synonym)
                synonyms.append(synonym)
    return Expansion(tuple(own), tuple(synonyms))


def with_implied_words(query: str) -> str:
    """The query for an embedding model: its text with the implied words after it."""
    implied = implied_words(query)
    return f"{query} ({' '.join(implied)})" if implied else query
