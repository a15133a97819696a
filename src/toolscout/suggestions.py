"""Did-you-mean suggestions for names a user or a model got slightly wrong."""

from __future__ import annotations

from collections.abc import Sequence

from rapidfuzz import fuzz, process

MAX_SUGGESTIONS = 3


def closest(name: str, choices: Sequence[str], limit: int = MAX_SUGGESTIONS) -> list[str]:
    """Up to `limit` of `choices` that look like `name`, best first."""
    matches = process.extract(name, choices, scorer=fuzz.WRatio, limit=limit, score_cutoff=60)
    return [m[0] for m in matches]


def did_you_mean(close: Sequence[str]) -> str:
    """` Did you mean 'a', 'b'?`, or nothing when there is nothing close."""
    return f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
