"""Counting what tool definitions cost an agent, with a real tokenizer (o200k_base)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from typing import Protocol, cast

import mcp_types as types
import quicktok  # pyright: ignore[reportMissingTypeStubs]

ENCODING = "o200k_base"


class _Encoding(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


@cache
def _encoding() -> _Encoding:
    return cast(_Encoding, quicktok.get_encoding(ENCODING))  # pyright: ignore[reportUnknownMemberType]


def count_tokens(text: str) -> int:
    """Tokens of `text` under o200k_base; special-token lookalikes count as plain text."""
    return len(_encoding().encode_ordinary(text))


def tool_definitions_json(tools: Sequence[types.Tool]) -> str:
    """The tools as a client receives them in `tools/list`."""
    return json.dumps(
        [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools],
        ensure_ascii=False,
        separators=(",", ":"),
    )


def tool_tokens(tools: Sequence[types.Tool]) -> int:
    """What exposing `tools` directly costs in every request."""
    return count_tokens(tool_definitions_json(tools)) if tools else 0
