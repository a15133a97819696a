"""Tool search: the backend seam, the lexical, semantic and hybrid backends, and how to pick one."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from toolscout.errors import ConfigurationError
from toolscout.search.base import SearchBackend, SearchHit
from toolscout.search.bm25 import BM25Backend
from toolscout.search.hybrid import MINILM_WEIGHTS, HybridBackend

BACKENDS = ("hybrid", "bm25", "dense", "weighted")
MODELS = ("static", "minilm")

if TYPE_CHECKING:
    from toolscout.config.models import EmbeddingsConfig

log = logging.getLogger(__name__)

__all__ = ["BACKENDS", "MODELS", "BM25Backend", "HybridBackend", "SearchBackend", "SearchHit", "make_backend"]


def make_backend(
    name: str = "hybrid",
    *,
    model: str = "static",
    embeddings: EmbeddingsConfig | None = None,
    cache_dir: Path | None = None,
    use_cache: bool = True,
    fuzzy_names: bool = True,
) -> SearchBackend:
    """A search backend by name: `hybrid` (default), `bm25` (lexical only), `dense` (embeddings only) or
    `weighted` (the discovery-engine design's fixed-weight relevance).

    `model` is the embedding model: `static` (packaged, no torch) or `minilm` (the `minilm` extra);
    `embeddings`, when given, a provider that embeds instead (the static model its fallback).
    Tool vectors are cached under `cache_dir` (default: the user cache directory) unless `use_cache` is off.
    `fuzzy_names` off, a hybrid backend's names count only when written exactly (`search.fuzzyNames`).
    """
    backend = _backend(name, model=model, embeddings=embeddings, cache_dir=cache_dir, use_cache=use_cache)
    if isinstance(backend, HybridBackend):
        backend.names.fuzzy = fuzzy_names
    return backend


def _backend(
    name: str, *, model: str, embeddings: EmbeddingsConfig | None, cache_dir: Path | None, use_cache: bool
) -> SearchBackend:
    if name == "bm25":
        return BM25Backend()
    if name == "weighted":
        from toolscout.search.weighted import WeightedBackend

        return WeightedBackend()
    if name not in BACKENDS:
        raise ConfigurationError(f"unknown search backend {name!r}; choose one of: {', '.join(BACKENDS)}.")
    if model not in MODELS:
        raise ConfigurationError(f"unknown search model {model!r}; choose one of: {', '.join(MODELS)}.")
    from toolscout.config.locations import user_cache_dir
    from toolscout.search.embedding import DenseBackend, StaticEmbedder, VectorCache

    directory = (cache_dir or user_cache_dir() / "embeddings") if use_cache else None
    if embeddings is not None:
        from toolscout.search.remote_embedding import RemoteEmbedder

        # Nothing is asked of the provider here: the first rebuild does, and falls back if it must.
        remote = DenseBackend(RemoteEmbedder(embeddings, fallback=StaticEmbedder.load), VectorCache(directory))
        # A provider's cosines run on a scale of their own: fused as MiniLM's are, divided by the best.
        return remote if name == "dense" else HybridBackend(remote, MINILM_WEIGHTS)
    if model == "minilm":
        from toolscout.search.embedding import MiniLMEmbedder

        # Asked for by name: a missing extra is the user's to fix, so it is an error, not a fallback.
        dense = DenseBackend(MiniLMEmbedder.load(), VectorCache(directory))
        return dense if name == "dense" else HybridBackend(dense, MINILM_WEIGHTS)
    try:
        embedder = StaticEmbedder.load()
    except (OSError, ValueError) as exc:
        if name == "dense":
            raise ConfigurationError(
                f"The search model cannot be loaded ({exc}); reinstall toolscout, or use the bm25 backend."
            ) from None
        # Search must keep working without the model: lexical ranking alone, and say why.
        log.warning("search runs lexical only: the embedding model cannot be loaded (%s)", exc)
        return HybridBackend(None)
    dense = DenseBackend(embedder, VectorCache(directory))
    return dense if name == "dense" else HybridBackend(dense)
