"""Secrets out of a tool call's arguments before they are written down (the audit log).

A value under a secret-looking name goes as a whole; in every other string, what
`toolscout.masking.mask_text` recognises goes, and matches of the configured patterns. Long
strings are cut (`MAX_STRING_CHARS`), deep nesting stops (`[TOO DEEP]`), NaN and Infinity become
strings: what comes out is always JSON.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from toolscout.config.rules import compile_pattern
from toolscout.masking import card_number, mask_text, secret_name, secrets_generation

REDACTED = "[REDACTED]"

MAX_STRING_CHARS = 10_000
"""Longer string arguments are cut: a file's content passed to `write_file` does not belong in the
log, and a multi-megabyte line would stall the event loop while it is written."""
_MAX_DEPTH = 64
_MAX_REMEMBERED = 4096
"""Argument names, and short strings found to hold no secret, that a `Redactor` remembers its verdict on."""
_REMEMBERED_CHARS = 256
_CUT_MARGIN = 1024
"""Characters past the cut that are searched for secrets too (a token, a key pair straddling it)."""
_SMALLEST_CARD = 10**12
"""The smallest 13-digit number: a smaller int cannot be a card number."""


class Redactor:
    """Copies arguments with secrets replaced by `[REDACTED]`, at any depth.

    A value under a secret-looking key (`toolscout.masking.secret_name`, or one of `keys`) goes as a
    whole (booleans and null stay: `useAuth: true` reveals nothing); in every other string, what
    `toolscout.masking.mask_text` hides goes (`password=…` and `token: …` pairs, URLs' secrets,
    token shapes, card numbers, configured secrets' values), and matches of `patterns`.

    Tools are called with the same argument names, and often the same short values, again and
    again: the verdict on each name, and which short strings no pattern matches, are remembered
    (a bounded number), so a call's record costs little more than its JSON. A string that held a
    secret is never remembered.
    """

    def __init__(self, keys: Sequence[str] = (), patterns: Sequence[str] = ()) -> None:
        self._key_matchers = [compile_pattern(p) for p in keys]
        self._patterns = [re.compile(p) for p in patterns]
        self._secret_keys: dict[str, bool] = {}
        self._clean: set[str] = set()
        self._generation = secrets_generation()

    def secret(self, key: str) -> bool:
        known = self._secret_keys.get(key)
        if known is None:
            known = secret_name(key) or any(match(key) for match in self._key_matchers)
            if len(self._secret_keys) >= _MAX_REMEMBERED:
                self._secret_keys.clear()
            self._secret_keys[key] = known
        return known

    def __call__(self, value: Any, depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            return "[TOO DEEP]"
        # The common leaves first: a str or a number is never a Mapping (whose check is the slow one).
        if isinstance(value, str):
            if self._generation != secrets_generation():  # secrets to mask by value came since
                self._clean.clear()
                self._generation = secrets_generation()
            if value in self._clean:
                return value
            original = value
            # Only what is kept is searched (a megabyte argument would hold the event loop up), with a
            # margin so that a secret across the cut is still seen whole, and hidden, before the cut.
            value = mask_text(value[: MAX_STRING_CHARS + _CUT_MARGIN], marker=REDACTED, colon=True)
            for pattern in self._patterns:
                value = pattern.sub(REDACTED, value)
            if value == original and len(value) <= _REMEMBERED_CHARS:
                if len(self._clean) >= _MAX_REMEMBERED:
                    self._clean.clear()
                self._clean.add(value)
            if len(original) > MAX_STRING_CHARS:
                value = f"{value[:MAX_STRING_CHARS]}…[+{len(original) - MAX_STRING_CHARS} chars]"
            return value
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)  # NaN and Infinity are not JSON
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and value >= _SMALLEST_CARD
            and card_number(str(value))
        ):
            return REDACTED  # a card number passed as a number
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, Mapping):
            mapping = cast(Mapping[Any, Any], value)
            return {
                str(k): REDACTED
                if self.secret(str(k)) and v is not None and not isinstance(v, bool)
                else self(v, depth + 1)
                for k, v in mapping.items()
            }
        if isinstance(value, list | tuple):
            return [self(v, depth + 1) for v in cast(Sequence[Any], value)]
        return str(value)


REDACT_INLINE_CHARS = 65_536
"""Arguments with fewer characters in their strings than this are redacted on the event loop
(about 10 ms at this size on 2 cores); larger ones in a worker thread."""


def larger_than(value: Any, budget: int) -> bool:
    """Whether the strings in `value` (keys too) add up to more than `budget` characters; stops as
    soon as they do, so it costs little on any size."""
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            budget -= len(item)
        elif isinstance(item, Mapping):
            mapping = cast(Mapping[Any, Any], item)
            pending.extend(mapping.keys())
            pending.extend(mapping.values())
        elif isinstance(item, list | tuple):
            pending.extend(cast(Sequence[Any], item))
        else:
            budget -= 8  # a number, a boolean, null: a few characters of JSON each
        if budget < 0:
            return True
    return False
