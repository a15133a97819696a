"""Turning tool metadata and queries into search terms."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import Stemmer  # pyright: ignore[reportMissingTypeStubs]
from bm25s.stopwords import STOPWORDS_EN

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_a-zA-Z]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
STOPWORDS = frozenset(STOPWORDS_EN)
_STEMMER: Any = Stemmer.Stemmer("english")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]


def split_identifier(name: str) -> list[str]:
    """`getUserRepos_v2.list` -> ["get", "user", "repos", "v", "2", "list"] (lower-cased)."""
    parts: list[str] = []
    for word in _WORD.findall(name):
        parts.extend(p.lower() for p in _CAMEL.findall(word))
    return parts


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball (Porter 2) stem of a lower-cased English word: `searching` -> `search`."""
    return str(_STEMMER.stemWord(word))


def terms(text: str) -> list[str]:
    """Search terms of free text: identifier-split, stemmed words without stopwords; CJK characters one by one.

    A word written in camel case also counts whole (`GitHub` gives `git`, `hub` and `github`), so
    it matches however the other side spells it.
    """
    out: list[str] = []
    for whole in _WORD.findall(text):
        if whole.isascii() and whole.isalpha() and whole.islower():
            # Most words: one part, itself (what _CAMEL gives), never CJK; a third of a rebuild's time.
            if whole not in STOPWORDS:
                out.append(stem(whole))
            continue
        parts = [p.lower() for p in _CAMEL.findall(whole)]
        if len(parts) > 1 and whole.isalpha() and not _CJK.search(whole):
            parts.append(whole.lower())
        for word in parts:
            if _CJK.search(word):
                out.extend(ch for ch in word if not ch.isspace())
            elif word not in STOPWORDS:
                out.append(stem(word))
    return out


def normalized_name(name: str) -> str:
    """A name as people type it: `get-File_Info` and `getFileInfo` both give `get file info`."""
    return " ".join(split_identifier(name))
