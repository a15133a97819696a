"""What the gateway counts of its discovery work while it runs: searches, smart calls, the methods
that chose a tool, and the caches that answered, read by `GET /api/v1/discovery/stats`.

Counting is an increment on the event loop per search or call; nothing here takes a lock or a
thread. The counts start at zero when the gateway starts and are not kept across runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from pydantic.alias_generators import to_camel


class DiscoveryStats:
    """The counts of one gateway's searches and smart calls."""

    def __init__(self) -> None:
        self.searches = 0
        self.searches_found = 0
        self.explained = 0
        self.smart_calls = 0
        self.smart_ran = 0
        self.selections: Counter[str] = Counter()

    def searched(self, hits: int) -> None:
        """A search answered with `hits` hits."""
        self.searches += 1
        if hits:
            self.searches_found += 1

    def smart_call(self, method: str | None, *, ran: bool) -> None:
        """A smart call: `method` chose its tool (None: none was chosen, as when the request named one)."""
        self.smart_calls += 1
        if ran:
            self.smart_ran += 1
        if method is not None:
            self.selections[method] += 1

    def snapshot(self, cache_counts: Mapping[str, tuple[int | None, int, int]]) -> dict[str, Any]:
        """The counts as `GET /api/v1/discovery/stats` answers them (camelCase keys), with the caches'
        `cache_counts` (entries, hits, misses by cache, as `Metrics.cache_counts` gives them)."""
        caches: dict[str, dict[str, Any]] = {}
        for name, (entries, hits, misses) in cache_counts.items():
            caches[to_camel(name)] = {
                **({"entries": entries} if entries is not None else {}),
                "hits": hits,
                "misses": misses,
                "hitRate": rate(hits, hits + misses),
            }
        return {
            "searches": {
                "total": self.searches,
                "withResults": self.searches_found,
                "hitRate": rate(self.searches_found, self.searches),
                "explained": self.explained,
            },
            "smart": {
                "calls": self.smart_calls,
                "ran": self.smart_ran,
                "hitRate": rate(self.smart_ran, self.smart_calls),
                "selections": dict(sorted(self.selections.items())),
            },
            "caches": caches,
        }


def rate(part: int, whole: int) -> float | None:
    """`part / whole` to 4 places; None when there was nothing to count."""
    return round(part / whole, 4) if whole else None
