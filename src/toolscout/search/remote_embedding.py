"""Embeddings from a provider the user runs or pays for: any OpenAI-compatible `/embeddings` endpoint, or Ollama.

`RemoteEmbedder` fits the `Embedder` seam (search/embedding.py). It sends texts in batches of
`batchSize` to `POST {baseUrl}/embeddings` (OpenAI's API: `{"model", "input": [...]}` answered with
`{"data": [{"index", "embedding"}]}`) or to Ollama's `POST {baseUrl}/api/embed` (`{"model", "input"}`
answered with `{"embeddings": [...]}`), with the key from `apiKeyEnv` as a bearer token. Every row is
checked (a number per dimension, as many as asked for, the same length as before) and L2-normalised,
so that a cosine is a dot product as with the packaged models.

A failure (no answer in time, refused connection, an HTTP error, an answer that is not embeddings,
vectors of the wrong length) is an `EmbeddingUnavailable` with a `reason`; `DenseBackend` then embeds
the tools with the packaged static model (`fallback`), and ranks a query it cannot embed lexically.
The vectors of the texts asked about lately are kept for `QUERY_TTL` seconds, so a client asking the
same thing again does not wait for the provider twice.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import httpx2
import numpy as np

from toolscout.errors import EmbeddingUnavailable

if TYPE_CHECKING:
    from toolscout.config.models import EmbeddingsConfig
    from toolscout.search.embedding import Embedder, Vectors

QUERY_TTL = 300.0
"""Seconds a text's vector is kept in memory (queries mostly: tool vectors are kept on disk)."""
QUERY_CACHE_SIZE = 1024
"""Texts whose vectors are kept in memory at most."""


def _safe(text: str) -> str:
    """`text` as a file-name part: letters, digits, dot, dash and underscore only."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")[:60] or "model"


class RemoteEmbedder:
    """Embeds texts by asking the configured provider (a blocking client: the index calls it from worker threads)."""

    def __init__(self, config: EmbeddingsConfig, *, fallback: Callable[[], Embedder] | None = None) -> None:
        self.provider = config.provider
        self.model = config.model
        base = config.url()
        self.url = f"{base}/embeddings" if config.provider == "openai" else f"{base}/api/embed"
        self.dimensions = config.dimensions
        self.timeout = config.timeout
        self.batch_size = config.batch_size
        key = config.api_key()
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        # The provider and model name the vectors; the URL and length asked for tell two setups apart.
        digest = hashlib.sha256(f"{self.url}\n{self.model}\n{self.dimensions}".encode()).hexdigest()[:10]
        self._model_id = f"{self.provider}-{_safe(self.model)}-{digest}"
        self._fallback = fallback
        self._fallback_model: Embedder | None = None
        self._lock = threading.Lock()
        self._recent: OrderedDict[str, tuple[float, Vectors]] = OrderedDict()
        self.dims: int | None = config.dimensions
        """The length of the vectors (as asked for, else as first answered)."""
        self.said_down = False
        """Whether the log already says that tools are embedded by the fallback (said once until it answers)."""
        self.said_query_down = False
        """Whether the log already says that queries are ranked lexically (said once until it answers)."""
        self.clock: Callable[[], float] = time.monotonic

    @property
    def model_id(self) -> str:
        """`provider-model-hash`: the vector cache's key, so another provider's or model's vectors never mix."""
        return self._model_id

    @property
    def name(self) -> str:
        """How the provider is named to people: `ollama:nomic-embed-text`."""
        return f"{self.provider}:{self.model}"

    def fallback(self) -> Embedder | None:
        """The packaged model that embeds when the provider cannot (loaded on first need)."""
        if self._fallback_model is None and self._fallback is not None:
            self._fallback_model = self._fallback()
        return self._fallback_model

    def encode(self, texts: Sequence[str]) -> Vectors:
        """One L2-normalised row per text; `EmbeddingUnavailable` when the provider gives none usable."""
        now = self.clock()
        rows: dict[int, Vectors] = {}
        asked: list[int] = []
        with self._lock:
            for i, text in enumerate(texts):
                kept = self._recent.get(text)
                if kept is not None and kept[0] > now:
                    self._recent.move_to_end(text)
                    rows[i] = kept[1]
                else:
                    asked.append(i)
        if asked:
            # A client per call, closed with it: the index lives on no event loop, and asks seldom.
            with httpx2.Client(headers=self._headers, timeout=self.timeout) as client:
                for begin in range(0, len(asked), self.batch_size):
                    batch = asked[begin : begin + self.batch_size]
                    for i, vector in zip(batch, self._ask(client, [texts[i] for i in batch]), strict=True):
                        rows[i] = vector
        with self._lock:
            for i in asked:
                self._recent[texts[i]] = (now + QUERY_TTL, rows[i])
                self._recent.move_to_end(texts[i])
            while len(self._recent) > QUERY_CACHE_SIZE:
                self._recent.popitem(last=False)
        if not texts:
            return np.zeros((0, self.dims or 0), dtype=np.float32)
        return np.stack([rows[i] for i in range(len(texts))]).astype(np.float32)

    def _body(self, texts: Sequence[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": list(texts)}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        if self.provider == "ollama":
            body["truncate"] = True  # a long description is cut, not refused
        return body

    def _ask(self, client: httpx2.Client, texts: Sequence[str]) -> list[Vectors]:
        try:
            response = client.post(self.url, json=self._body(texts))
        except httpx2.TimeoutException:
            raise self._failure(f"did not answer within {self.timeout:g} s", "timeout") from None
        except httpx2.TransportError as exc:
            raise self._failure(f"cannot be reached ({type(exc).__name__})", "unreachable") from None
        if response.status_code >= 400:
            raise self._failure(
                f"answered HTTP {response.status_code}: {response.text[:200]}", "http", status=response.status_code
            )
        try:
            raw = self._rows(response.json())
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise self._failure(f"answered no embeddings ({type(exc).__name__}: {exc})", "bad_answer") from None
        if len(raw) != len(texts):
            raise self._failure(f"answered {len(raw)} vectors for {len(texts)} texts", "bad_answer")
        return [self._checked(row) for row in raw]

    def _rows(self, payload: Any) -> list[Any]:
        if self.provider == "ollama":
            return list(cast(dict[str, Any], payload)["embeddings"])
        data = cast(list[dict[str, Any]], cast(dict[str, Any], payload)["data"])
        # OpenAI says each row's place in `index`; answers may come in another order.
        ordered = sorted(data, key=lambda item: int(item.get("index", 0)))
        return [item["embedding"] for item in ordered]

    def _checked(self, row: Any) -> Vectors:
        vector = np.asarray(row, dtype=np.float32)
        if vector.ndim != 1 or vector.size == 0 or not np.all(np.isfinite(vector)):
            raise self._failure("answered a vector that is not a list of numbers", "bad_answer")
        with self._lock:
            if self.dims is None:
                self.dims = int(vector.size)
            expected = self.dims
        if vector.size != expected:
            raise self._failure(
                f"answered {vector.size}-dimensional vectors where {expected} were expected", "dimensions"
            )
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector

    def _failure(self, what: str, reason: str, **details: Any) -> EmbeddingUnavailable:
        return EmbeddingUnavailable(
            f"The embedding provider {self.name} at {self.url} {what}.", reason=reason, model=self.model, **details
        )
