"""One JSON text for a value whatever the order its keys came in: what a hash of it (a pinned tool
definition, a confirmed call's arguments) is taken over."""

from __future__ import annotations

import json
from typing import Any


def canonical_json(value: Any) -> bytes:
    """`value` as JSON with sorted keys and no spaces, in UTF-8 (a non-JSON value as its `str`)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return text.encode("utf-8", "surrogatepass")
