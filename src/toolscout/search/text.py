"""Turning tool metadata and queries into search terms."""

from __future__ import annotations

import re

from bm25s.stopwords import STOPWORDS_EN

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_a-zA-Z]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
STOPWORDS = frozenset(STOPWORDS_EN)


def split_identifier(name: str) -> list[str]:
    """`getUserRepos_v2.list` -> ["get", "user", "repos", "v", "2", "list"] (lower-cased)."""
    parts: list[str] = []
    for word in _WORD.findall(name):
        parts.extend(p.lower() for p in _CAMEL.findall(word))
    return parts


def terms(text: str) -> list[str]:
    """Search terms of free text: identifier-split words, CJK characters one by one, no stopwords."""
    out: list[str] = []
    for word in split_identifier(text):
        if _CJK.search(word):
            out.extend(ch for ch in word if not ch.isspace())
        elif word not in STOPWORDS:
            out.append(word)
    return out
