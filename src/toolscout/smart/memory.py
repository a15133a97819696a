"""What smart mode keeps between calls: the tools that ran for past requests, and its caches.

With `smart.enableLearning`, a request is kept as its normalised terms (split, stemmed, stop words
out: `search.text.terms`), with the tool that ran successfully for it and how often. A later request
is compared with each remembered one by the overlap of their terms (Jaccard); from `MIN_SIMILARITY`
up, the remembered tool's odds rise (`selection.LEARNED_ODDS`); for the very same words it wins (a
tool the caller named for them replaces what else ran for them). The file is JSON beside the persistent
catalog, replaced whole (written to a temporary file, then renamed), so a crash never leaves half of
it; a file that cannot be read is set aside, never a reason not to serve. `toolscout smart forget`
deletes it.

`TTLCache` is a small LRU cache whose entries expire, for smart mode's tool matches and LLM answers.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

from toolscout.search.text import terms

logger = logging.getLogger(__name__)

MIN_SIMILARITY = 0.5
"""The least term overlap for which a remembered request counts as similar."""
MAX_REQUESTS = 5000
"""Requests remembered at most; the oldest go first."""
MEMORY_FILE = "smart-memory.json"

Key = tuple[str, str]


def normalised(request: str) -> str:
    """The request as its sorted distinct terms: word order, case and inflection left out."""
    return " ".join(sorted(set(terms(request))))


class SmartMemory:
    """Requests and the tools that ran successfully for them, kept in `path` (None: in memory only)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._requests: dict[str, dict[str, int]] = {}
        """Normalised request → {"server/tool": times it ran successfully}, oldest first."""
        self._loaded = False
        self.version = 0
        """Counts changes: a cached tool match made before one is stale."""

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if self.path is None or not self.path.exists():
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            requests = cast(dict[str, Any], data["requests"])
            self._requests = {
                str(request): {str(tool): int(count) for tool, count in cast(dict[str, Any], tools).items()}
                for request, tools in requests.items()
            }
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            logger.warning("smart mode's memory %s cannot be read (%s); starting afresh", self.path, exc)
            self._requests = {}

    def similar(self, request: str) -> dict[Key, float]:
        """Each tool remembered for a request like this one, with the best similarity in [0, 1]."""
        self._load()
        mine = set(normalised(request).split())
        if not mine:
            return {}
        found: dict[Key, float] = {}
        for remembered, tools in self._requests.items():
            theirs = set(remembered.split())
            similarity = len(mine & theirs) / len(mine | theirs)
            if similarity < MIN_SIMILARITY:
                continue
            for qualified in tools:
                server, _, tool = qualified.partition("/")
                found[(server, tool)] = max(found.get((server, tool), 0.0), round(similarity, 3))
        return found

    def remember(self, request: str, server: str, tool: str, *, named: bool = False) -> None:
        """Note that `server/tool` ran successfully for `request`, and save.

        `named`: the caller named the tool for these words (a call with `tool`), which corrects
        whatever else ran for the very same words: that is forgotten."""
        self._load()
        key = normalised(request)
        if not key:
            return
        tools = self._requests.pop(key, {})  # re-inserted: most recent last
        if named:
            tools = {name: count for name, count in tools.items() if name == f"{server}/{tool}"}
        tools[f"{server}/{tool}"] = tools.get(f"{server}/{tool}", 0) + 1
        self._requests[key] = tools
        self.version += 1
        while len(self._requests) > MAX_REQUESTS:
            del self._requests[next(iter(self._requests))]
        self._save()

    def forget(self) -> int:
        """Forget everything (the file too); how many requests were remembered."""
        self._load()
        count = len(self._requests)
        self._requests = {}
        self.version += 1
        if self.path is not None:
            self.path.unlink(missing_ok=True)
        return count

    def _save(self) -> None:
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=".smart-memory-", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as file:
                    json.dump({"version": 1, "requests": self._requests}, file, ensure_ascii=False)
                os.replace(temp, self.path)
            except BaseException:
                Path(temp).unlink(missing_ok=True)
                raise
        except OSError as exc:  # learning is a nicety: a full disk costs it, never the call
            logger.warning("smart mode's memory cannot be saved to %s: %s", self.path, exc)


V = TypeVar("V")


class TTLCache(Generic[V]):
    """A small LRU cache whose entries expire, for smart mode's tool matches and LLM answers.

    It holds at most `max_entries` values, each for `ttl` seconds after it was put; the least recently
    used goes first when full. `clock` is injectable (tests move time without sleeping)."""

    def __init__(self, max_entries: int, ttl: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_entries = max_entries
        self.ttl = ttl
        self._clock = clock
        self._entries: OrderedDict[Hashable, tuple[float, V]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> V | None:
        """The value put under `key` less than `ttl` seconds ago, else None."""
        found = self._entries.get(key)
        if found is None or found[0] <= self._clock():
            if found is not None:
                del self._entries[key]
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return found[1]

    def live(self) -> list[tuple[Hashable, V]]:
        """Every entry not expired, least recently used first (neither a hit nor a miss)."""
        now = self._clock()
        return [(key, value) for key, (expires, value) in self._entries.items() if expires > now]

    def put(self, key: Hashable, value: V) -> None:
        self._entries[key] = (self._clock() + self.ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()
