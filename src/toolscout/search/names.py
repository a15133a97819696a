"""Queries that name a tool or a server: exact after normalising, or close enough for a typo (`rapidfuzz`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from rapidfuzz import fuzz, process

from toolscout.catalog import CatalogTool
from toolscout.search.text import normalized_name

# A query of this many words or fewer may be a tool name with a typo in it; longer ones are
# descriptions, and fuzzy matching them against names only finds coincidences.
FUZZY_MAX_WORDS = 6
# rapidfuzz ratio (0-100) from which a name counts as meant: one typo in an 8-letter name is ~88.
FUZZY_CUTOFF = 85.0
SERVER_BOOST = 0.3


class NameMatcher:
    """Scores in [0, 1] per tool: 1 for a query naming the tool exactly (any case, `-`/`_`/space/camel
    spelling), the typo-tolerant similarity for a short query close to a name, a smaller boost for the
    tools of a server the query names."""

    def __init__(self) -> None:
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
        for gram in grams:
            for i in self._by_server.get(gram, ()):
                out[i] = max(out[i], SERVER_BOOST)
            # A one-word name inside a longer query ("search the web") is a common word, not a name.
            if " " in gram or gram == whole:
                for i in self._by_name.get(gram, ()):
                    out[i] = 1.0
                for i in self._by_qualified.get(gram, ()):
                    out[i] = 1.0
        if len(words) <= FUZZY_MAX_WORDS and float(out.max()) < 1.0:
            for _, score, i in process.extract(
                whole, self._names, scorer=fuzz.ratio, score_cutoff=FUZZY_CUTOFF, limit=5
            ):
                out[i] = max(out[i], float(score) / 100 * 0.95)
        return out
