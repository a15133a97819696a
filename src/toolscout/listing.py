"""Data for a model to read: TOON when it costs fewer tokens than compact JSON, compact JSON otherwise.

TOON (`toon-format`) writes a list of uniform rows once as a header and then one line per row,
which is where it wins; for nested or irregular data it can cost more than JSON. So the choice
is made by counting both with the model's tokenizer, never by guessing from the shape.
"""

from __future__ import annotations

import json
from typing import Any

import toon_format

from toolscout.tokens import count_tokens


def compact_json(data: Any) -> str:
    """JSON without spaces, non-ASCII kept as is."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def model_text(data: Any) -> str:
    """`data` as TOON or compact JSON, whichever is fewer o200k_base tokens (JSON on a tie)."""
    as_json = compact_json(data)
    try:
        as_toon = toon_format.encode(data)
    except (TypeError, ValueError):  # a value TOON cannot write; JSON can, or it would have failed above
        return as_json
    return as_toon if count_tokens(as_toon) < count_tokens(as_json) else as_json
