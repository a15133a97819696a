"""The seam every search backend fits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from toolscout.catalog import CatalogTool


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A tool found for a query. `relevance` is in [0, 1], higher is better."""

    tool: CatalogTool
    relevance: float


class SearchBackend(Protocol):
    """Ranks catalog tools for a free-text query."""

    def rebuild(self, tools: Sequence[CatalogTool]) -> None:
        """Index `tools`, replacing whatever was indexed before."""
        ...

    def search(self, query: str, *, server: str | None = None, limit: int = 10) -> list[SearchHit]:
        """The best `limit` tools for `query`, optionally only from `server`; best first."""
        ...
