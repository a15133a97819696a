"""A small LRU cache whose entries expire: smart mode's tool matches and LLM responses (spec 004 "Caching")."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class TTLCache(Generic[V]):
    """At most `max_entries` values, each for `ttl` seconds after it was put; the least recently used
    goes first when full. `clock` is injectable (tests move time without sleeping)."""

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

    def put(self, key: Hashable, value: V) -> None:
        self._entries[key] = (self._clock() + self.ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()
