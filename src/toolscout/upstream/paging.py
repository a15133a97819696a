"""One listing followed across its pages (`nextCursor`), shared by the tool list and the mirror's lists."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

ItemT = TypeVar("ItemT")

MAX_PAGES = 100
"""Pages followed at most: a server whose cursor never ends must not keep a listing going forever."""

PageFetcher = Callable[[str | None], Awaitable[tuple[Sequence[ItemT], str | None]]]
"""Fetches the page at a cursor (None: the first): its items and the next cursor (None: the last page)."""


async def paginate(fetch: PageFetcher[ItemT], *, max_pages: int = MAX_PAGES) -> tuple[list[ItemT], bool]:
    """Every item of a paginated listing, and whether its last page was reached (False: it stopped
    after `max_pages` pages, for the caller to say so in its own log)."""
    items: list[ItemT] = []
    cursor: str | None = None
    for _ in range(max_pages):
        page, cursor = await fetch(cursor)
        items.extend(page)
        if cursor is None:
            return items, True
    return items, False
