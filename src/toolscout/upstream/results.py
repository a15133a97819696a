"""What the gateway does to every upstream result on its way to the client, whatever the request."""

from __future__ import annotations

from typing import TypeVar

import mcp_types as types

ResultT = TypeVar("ResultT", bound=types.Result)


def without_hop_metadata(result: ResultT) -> ResultT:
    """Drop the upstream's `serverInfo` stamp: it describes that hop, and the gateway stamps its own."""
    meta = result.meta
    if not meta or types.SERVER_INFO_META_KEY not in meta:
        return result
    rest = {k: v for k, v in meta.items() if k != types.SERVER_INFO_META_KEY}
    return result.model_copy(update={"meta": rest or None})
