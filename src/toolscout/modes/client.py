"""The client a mode answers: what a mode knows of it, and how the face tells it that a list changed.

`SurfaceClient` is the seam between the modes and the face's per-client state (serve/sessions.py).
`digest` sums up a list the face serves (tools, resources, templates, prompts). The face keeps, per
client, the digest of each list it was last shown, and tells the client only when the digest of
the list as it is now differs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Protocol

import anyio
from pydantic import BaseModel


class SurfaceClient(Protocol):
    """What a surface knows of the client it answers (the face's per-client state is one)."""

    loaded: dict[tuple[str, str], None]
    """Tools this client loaded in dynamic mode, as `(server, tool)`, in loading order."""
    modern: bool
    """Whether it speaks 2026-07-28 (no tool list of its own: dynamic mode loads nothing for it)."""

    def mark_tools_changed(self) -> None:
        """Record that this client's tool list changed (the face tells the client)."""
        ...


def digest(items: Sequence[BaseModel]) -> str:
    """Return what a list says, as a short digest: equal lists, equal digests.

    It is made item by item: one `json.dumps` of a whole long list holds the GIL so long that even in
    a worker thread it stalled the event loop; small calls let it switch threads in between.
    """
    hashed = hashlib.sha256()
    for item in items:
        hashed.update(
            json.dumps(item.model_dump(mode="json", by_alias=True, exclude_none=True), sort_keys=True).encode()
        )
        hashed.update(b"\n")  # (a dumped item has no raw newline: each is told apart)
    return hashed.hexdigest()


DIGEST_INLINE_ITEMS = 100
"""Up to this many items, a digest costs less than a worker thread's round trip."""


async def digest_off_loop(items: Sequence[BaseModel]) -> str:
    """Return `digest(items)`, computed in a worker thread for a long list, which would hold the loop too long."""
    if len(items) <= DIGEST_INLINE_ITEMS:
        return digest(items)
    return await anyio.to_thread.run_sync(digest, list(items))
