"""Semantic ranking: cosine similarity of sentence embeddings, with tool vectors cached on disk."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from toolscout.catalog import CatalogTool
from toolscout.search.base import SearchHit, top_hits
from toolscout.search.expansion import with_implied_words

log = logging.getLogger(__name__)

Vectors = np.ndarray[Any, np.dtype[np.float32]]

# Cached vectors kept per model: the current catalog first, then older ones up to this many.
CACHE_LIMIT = 50_000


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors; `model_id` changes whenever the vectors would."""

    @property
    def model_id(self) -> str: ...

    def encode(self, texts: Sequence[str]) -> Vectors: ...


def tool_text(tool: CatalogTool) -> str:
    """What a tool's vector is made from: where it lives, its name and what it says it does."""
    return " ".join(part for part in (tool.server, tool.name, tool.title or "", tool.description) if part)


def summary_text(tool: CatalogTool) -> str:
    """The same with only the description's first sentence: what the tool is for."""
    return " ".join(part for part in (tool.server, tool.name, tool.title or "", tool.summary) if part)


class VectorCache:
    """Tool vectors on disk, keyed by a hash of the text and the model, so a restart embeds nothing twice."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    def _file(self, model_id: str) -> Path | None:
        return None if self.directory is None else self.directory / f"{model_id}.npz"

    def load(self, model_id: str) -> dict[str, Vectors]:
        path = self._file(model_id)
        if path is None or not path.is_file():
            return {}
        try:
            with np.load(path, allow_pickle=False) as data:
                keys = [str(k) for k in data["keys"]]
                vectors = np.asarray(data["vectors"], dtype=np.float32)
        except (OSError, ValueError, KeyError) as exc:
            log.warning("ignoring the unreadable embedding cache %s: %s", path, exc)
            return {}
        return {k: vectors[i] for i, k in enumerate(keys)} if len(keys) == len(vectors) else {}

    def save(self, model_id: str, current: Mapping[str, Vectors], older: Mapping[str, Vectors]) -> None:
        path = self._file(model_id)
        if path is None:
            return
        merged = dict(current)
        for key, vector in older.items():
            if len(merged) >= CACHE_LIMIT:
                break
            merged.setdefault(key, vector)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Written aside and renamed: a reader never sees half a file, whoever writes at once.
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp.npz")
            with os.fdopen(fd, "wb") as out:
                np.savez(out, keys=np.array(list(merged)), vectors=np.stack(list(merged.values())).astype(np.float16))
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("could not write the embedding cache %s: %s", path, exc)


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class DenseBackend:
    """Ranks tools by the cosine of their vector with the query's; relevance is that cosine, clipped to [0, 1].

    A tool's vector is the mean of its full text's and its summary's (`tool_text`, `summary_text`),
    renormalised: an average of token vectors drowns what a tool does in the details of a long
    description ("convert miles": `convert_units`, with a paragraph of supported units, fell below
    `list_units`), while the summary alone loses the words only the details carry.
    """

    ranks_by = "semantic"
    """The one method it ranks by (`search.base.method_hits`)."""

    def __init__(self, embedder: Embedder, cache: VectorCache | None = None) -> None:
        self.embedder = embedder
        self.cache = cache or VectorCache(None)
        self._tools: list[CatalogTool] = []
        self._matrix: Vectors = np.zeros((0, 0), dtype=np.float32)

    def rebuild(self, tools: Sequence[CatalogTool], servers: Mapping[str, str] | None = None) -> None:
        self._tools = list(tools)
        texts = [tool_text(t) for t in self._tools] + [summary_text(t) for t in self._tools]
        keys = [_key(text) for text in texts]
        text_of = dict(zip(keys, texts, strict=True))  # a one-sentence description: one text, one vector
        model = self.embedder.model_id
        known = self.cache.load(model)
        missing = [k for k in text_of if k not in known]
        fresh: dict[str, Vectors] = {}
        if missing:
            encoded = self.embedder.encode([text_of[k] for k in missing])
            fresh = {k: encoded[i] for i, k in enumerate(missing)}
        vectors = {**known, **fresh}
        if self._tools:
            both = np.stack([vectors[k] for k in keys]).astype(np.float32)
            mixed = both[: len(self._tools)] + both[len(self._tools) :]
            norms = np.linalg.norm(mixed, axis=1, keepdims=True)
            self._matrix = (mixed / np.maximum(norms, np.float32(1e-12))).astype(np.float32)
        else:
            self._matrix = np.zeros((0, 0), dtype=np.float32)
        if fresh:
            self.cache.save(model, {k: vectors[k] for k in text_of}, known)

    def scores(self, query: str) -> Vectors:
        """The cosine of every indexed tool with the query."""
        return self.scores_many([query])[0]

    def scores_many(self, queries: Sequence[str]) -> Vectors:
        """One row per query: the cosine of every indexed tool with it (embedded in one batch)."""
        if not self._tools:
            return np.zeros((len(queries), 0), dtype=np.float32)
        # The words a query implies ("what time is it": current) are embedded with it.
        return self.embedder.encode([with_implied_words(q) for q in queries]) @ self._matrix.T

    def search(self, query: str, *, server: str | None = None, limit: int = 10) -> list[SearchHit]:
        scores = np.clip(self.scores(query), 0.0, 1.0)
        return top_hits(self._tools, scores, 1.0, server=server, limit=limit)
