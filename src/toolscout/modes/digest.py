"""What a list the face serves says, as a short digest: how it tells whether a client's list changed.

The face keeps, per client, the digest of each list (tools, resources, templates, prompts) it was
last shown, and tells the client only when the digest of the list as it is now differs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import anyio
from pydantic import BaseModel


def digest(items: Sequence[BaseModel]) -> str:
    """What a list says, as a short digest: equal lists, equal digests.

    Item by item: one `json.dumps` of a whole list of 10,000 tools held the GIL for 0.4 s, so even
    in a worker thread it stalled the event loop; small calls let it switch threads in between.
    """
    hashed = hashlib.sha256()
    for item in items:
        hashed.update(
            json.dumps(item.model_dump(mode="json", by_alias=True, exclude_none=True), sort_keys=True).encode()
        )
        hashed.update(b"\n")  # (a dumped item has no raw newline: each is told apart)
    return hashed.hexdigest()


DIGEST_INLINE_ITEMS = 100
"""Up to this many items a digest costs less than a worker thread's round trip (~1 ms at 100 tools)."""


async def digest_off_loop(items: Sequence[BaseModel]) -> str:
    """`digest(items)`, in a worker thread for a long list (10,000 tools: over a second)."""
    if len(items) <= DIGEST_INLINE_ITEMS:
        return digest(items)
    return await anyio.to_thread.run_sync(digest, list(items))
