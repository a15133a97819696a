"""Data for a model to read: TOON when it costs fewer tokens than compact JSON, compact JSON otherwise.

TOON (`toon-format`) writes a list of uniform rows once as a header and then one line per row,
which is where it wins; for nested or irregular data it can cost more than JSON. So the choice
is made by counting both with the model's tokenizer, never by guessing from the shape.
"""

from __future__ import annotations

import json
from typing import Any, cast

import toon_format

from toolscout.render.tokens import count_tokens


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


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def tabular(data: Any) -> Any:
    """`data` with every list of objects made into a table TOON can write as one header and rows.

    TOON writes a list of objects as a table only when every row has the same keys and only
    scalar values. Listings are nearly that: a key some rows lack becomes null in those rows,
    and a list of scalars (tags) becomes one comma-separated string. Nothing else changes.
    """
    if isinstance(data, dict):
        return {k: tabular(v) for k, v in cast(dict[str, Any], data).items()}
    if not isinstance(data, list):
        return data
    items = cast(list[Any], data)
    if not items or not all(isinstance(item, dict) for item in items):
        return [tabular(item) for item in items]
    rows = [cast(dict[str, Any], item) for item in items]
    keys = list(dict.fromkeys(key for row in rows for key in row))
    table: list[dict[str, Any]] = []
    for row in rows:
        cells: dict[str, Any] = {}
        for key in keys:
            value = row.get(key)
            if isinstance(value, list) and all(_is_scalar(v) for v in cast(list[Any], value)):
                value = ", ".join("" if v is None else str(v) for v in cast(list[Any], value))
            cells[key] = tabular(value)
        table.append(cells)
    return table


def listing_text(data: Any) -> str:
    """A listing for the model: its rows as a table, in TOON or compact JSON, whichever is fewer tokens."""
    return model_text(tabular(data))
