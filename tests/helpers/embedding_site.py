"""A scripted embedding provider for `callback_site` to serve: OpenAI's `/v1/embeddings` or Ollama's `/api/embed`.

Its vectors are bags of hashed words (each word of a text adds 1 to one of `dims` places), so texts
sharing words have a high cosine and the search ranks as it would with a real model. A test switches
it to failing (`failure`: an HTTP status and body, bad JSON...) or to vectors of the wrong length
while it runs, and reads `texts`, every text it was asked to embed.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, cast


def bag_of_words(text: str, dims: int) -> list[float]:
    """A vector of `dims` places counting the words of `text` by their hash."""
    vector = [0.0] * dims
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dims] += 1.0
    return vector


@dataclass
class ScriptedEmbeddings:
    """Answers embedding requests as `provider` does, with `dims`-long vectors, or as a test scripts."""

    provider: Literal["openai", "ollama"] = "openai"
    dims: int = 64
    failure: tuple[int, bytes] | None = None
    """Answered instead of vectors while set."""
    wrong_dims: bool = False
    """Answer vectors one place short."""
    texts: list[str] = field(default_factory=list[str])
    """Every text asked for, in order."""
    requests: int = 0

    def answer(self, body: Any) -> tuple[int, bytes]:
        """An `Answer` for `callback_site`."""
        self.requests += 1
        asked = cast(dict[str, Any], body)
        inputs = asked["input"]
        texts = [inputs] if isinstance(inputs, str) else [str(t) for t in cast(list[Any], inputs)]
        self.texts.extend(texts)
        if self.failure is not None:
            return self.failure
        dims = self.dims - 1 if self.wrong_dims else self.dims
        vectors = [bag_of_words(text, dims) for text in texts]
        if self.provider == "ollama":
            return 200, json.dumps({"model": asked["model"], "embeddings": vectors}).encode()
        # Listed last first: the client must order them by `index`.
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)][::-1]
        return 200, json.dumps({"object": "list", "data": data, "model": asked["model"]}).encode()
