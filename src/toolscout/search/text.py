"""Search terms: how tool metadata and queries become words, which words a query implies, and names.

`terms` turns text into stemmed, identifier-split words without stop words. Query expansion adds the
words a query means without saying them, so that a person's phrasing finds a tool's. *Synonyms* of
the action a query asks for: tools are named for one verb of a family (`create_note`, `delete_file`,
`get_weather`) while people use another ("add a note", "remove the file", "show the weather"); each
query word of a family brings the rest of it in, at a reduced weight, since the word itself is still
the best evidence, and only in short queries (a long task has words enough). *Implied* words: "what
time is it", "right now", "today" ask for the present, which tools call `current`
(`get_current_time`, `current_weather`); these count as if the query said them, for the lexical and
the semantic ranker. The families are the common verbs of tool and API names, not words of any one
catalog; small catalogs need them most, where one incidental word of a description (`update_note`:
"to add a tag, ...") can otherwise outweigh the tool the query means.

`NameMatcher` finds queries that name a tool or a server: exactly after normalising, or close enough
for a typo (`rapidfuzz`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import Stemmer  # pyright: ignore[reportMissingTypeStubs]
from bm25s.stopwords import STOPWORDS_EN
from rapidfuzz import fuzz, process

from toolscout.catalog import CatalogTool

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_a-zA-Z]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
STOPWORDS = frozenset(STOPWORDS_EN)
_STEMMER: Any = Stemmer.Stemmer("english")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]


def split_identifier(name: str) -> list[str]:
    """Split an identifier into lower-cased words: `getUserRepos_v2.list` gives get, user, repos, v, 2, list."""
    parts: list[str] = []
    for word in _WORD.findall(name):
        parts.extend(p.lower() for p in _CAMEL.findall(word))
    return parts


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball (Porter 2) stem of a lower-cased English word: `searching` -> `search`."""
    return str(_STEMMER.stemWord(word))


def terms(text: str) -> list[str]:
    """Search terms of free text: identifier-split, stemmed words without stopwords; CJK characters one by one.

    A word written in camel case also counts whole (`GitHub` gives `git`, `hub` and `github`), so
    it matches however the other side spells it.
    """
    out: list[str] = []
    for whole in _WORD.findall(text):
        if whole.isascii() and whole.isalpha() and whole.islower():
            # Most words: one part, itself (what _CAMEL gives), never CJK; a third of a rebuild's time.
            if whole not in STOPWORDS:
                out.append(stem(whole))
            continue
        parts = [p.lower() for p in _CAMEL.findall(whole)]
        if len(parts) > 1 and whole.isalpha() and not _CJK.search(whole):
            parts.append(whole.lower())
        for word in parts:
            if _CJK.search(word):
                out.extend(ch for ch in word if not ch.isspace())
            elif word not in STOPWORDS:
                out.append(stem(word))
    return out


def normalized_name(name: str) -> str:
    """A name as people type it: `get-File_Info` and `getFileInfo` both give `get file info`."""
    return " ".join(split_identifier(name))


SYNONYM_WEIGHT = 0.5
"""What a synonym counts against a word of the query itself (tuned on `../shared/train`, where it hardly matters)."""

SYNONYM_MAX_TERMS = 6
"""Synonyms are added to short queries only (at most this many terms, about ten words): what a
person types when one word decides. A long task already has words enough, and a synonym for each
of its verbs only adds noise: BM25 alone ranked LiveMCPBench's long tasks worse with them, and the
training pairs are level either way."""

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

# Keeping a result somewhere named by its path: "save it to ~/reports/q3.md", "write the list into
# notes.txt", "export the table as /tmp/out.csv". The step needs a tool that writes a file, though
# the request never says "file".
_SAVE_TO_PATH = re.compile(
    r"\b(?:save|saving|saved|write|writing|store|storing|export|exporting|output)\b[^.!?;\n]{0,80}?"
    r"\b(?:to|into|as|in|under|at)\s+(?:(?:a|the|new|local)\s+)*"
    r"(?:files?\b|~?/[\w.~-]+(?:/[\w.~-]+)*|[\w-]+(?:/[\w.-]+)*\.[A-Za-z][A-Za-z0-9]{0,4}\b)",
    re.IGNORECASE,
)
SAVE_WORDS = "write file"

# Reading what a web address holds: "summarize https://example.com/post", "read www.python.org/about",
# "what does https://... say". The step needs a tool that fetches a page, though the request names
# only the address. A URL handed to a tool as its argument ("shorten https://...", "the whois of
# www.example.com") implies nothing: only verbs of reading count.
_READ_URL = re.compile(
    r"\b(?:read|reading|visit|visiting|fetch|fetching|summari[sz]e|summari[sz]ing|scrape|"
    r"scraping|browse|browsing|look\s+at|what\s+does|extract\s+(?:the\s+)?(?:text|contents?)\s+(?:of|from))\b"
    r"[^.!?;\n]{0,60}?(?:https?://|www\.)",
    re.IGNORECASE,
)
READ_URL_WORDS = "fetch web page"


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
    """Words the query means but does not say ("what time is it" -> ["current"], "save it to
    ~/out.md" -> ["write file"], "summarize https://example.com/post" -> ["fetch web page"])."""
    found = [PRESENT_WORD] if _PRESENT.search(query) else []
    if _SAVE_TO_PATH.search(query):
        found.append(SAVE_WORDS)
    if _READ_URL.search(query):
        found.append(READ_URL_WORDS)
    return found


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


# A query of this many words or fewer may be a tool name with a typo in it; longer ones are
# descriptions, and fuzzy matching them against names only finds coincidences.
FUZZY_MAX_WORDS = 6
# rapidfuzz ratio (0-100) from which a name counts as meant: one typo in an 8-letter name is ~88.
FUZZY_CUTOFF = 85.0
SERVER_BOOST = 0.3
OTHER_SERVERS_NAME = 0.9
"""The name score of a tool named without its server when the query names the same tool of another server."""


class NameMatcher:
    """The scores in [0, 1] that a query's names give each tool.

    A query naming the tool exactly (any case, `-`/`_`/space/camel spelling) scores 1, a short query
    close to a name its typo-tolerant similarity (unless `fuzzy` is off: `search.fuzzyNames`), and a
    query naming a server gives that server's tools a smaller boost."""

    def __init__(self, *, fuzzy: bool = True) -> None:
        self.fuzzy = fuzzy
        self._tools: list[CatalogTool] = []
        self._names: list[str] = []
        self._by_name: dict[str, list[int]] = {}
        self._by_qualified: dict[str, list[int]] = {}
        self._by_server: dict[str, list[int]] = {}
        self._longest = 1

    def rebuild(self, tools: Sequence[CatalogTool]) -> None:
        self._tools = list(tools)
        self._names = [normalized_name(t.name) for t in self._tools]
        self._by_name = {}
        self._by_qualified = {}
        self._by_server = {}
        servers: dict[str, str] = {}  # a server's name normalised once, not once per tool
        for i, (tool, name) in enumerate(zip(self._tools, self._names, strict=True)):
            server = servers.get(tool.server)
            if server is None:
                server = servers[tool.server] = normalized_name(tool.server)
            self._by_name.setdefault(name, []).append(i)
            self._by_qualified.setdefault(f"{server} {name}", []).append(i)
            self._by_server.setdefault(server, []).append(i)
        self._longest = max((len(k.split()) for k in self._by_qualified), default=1)

    def scores(self, query: str) -> np.ndarray[Any, np.dtype[np.float32]]:
        out = np.zeros(len(self._tools), dtype=np.float32)
        words = normalized_name(query).split()
        if not words or not self._tools:
            return out
        whole = " ".join(words)
        grams = {
            " ".join(words[i : i + n])
            for n in range(1, min(self._longest, len(words)) + 1)
            for i in range(len(words) - n + 1)
        }
        qualified: set[int] = set()
        for gram in grams:
            for i in self._by_server.get(gram, ()):
                out[i] = max(out[i], SERVER_BOOST)
            # A one-word name inside a longer query ("search the web") is a common word, not a name.
            if " " in gram or gram == whole:
                for i in self._by_name.get(gram, ()):
                    out[i] = 1.0
                for i in self._by_qualified.get(gram, ()):
                    out[i] = 1.0
                    qualified.add(i)
        # "filesystem/read_file" names one server's tool: another server's `read_file` is named
        # too, but less (it still comes before the tools not named at all).
        named = {self._names[i] for i in qualified}
        for i in np.flatnonzero(out >= 1.0):
            if i not in qualified and self._names[i] in named:
                out[i] = OTHER_SERVERS_NAME
        if self.fuzzy and len(words) <= FUZZY_MAX_WORDS and float(out.max()) < 1.0:
            for _, score, i in process.extract(
                whole, self._names, scorer=fuzz.ratio, score_cutoff=FUZZY_CUTOFF, limit=5
            ):
                out[i] = max(out[i], float(score) / 100 * 0.95)
        return out
