"""A static sentence embedder for tool search: numpy + tokenizers only, no torch, no network.

The packaged model (`model/`, made by `scripts/distill_embeddings.py`) is a model2vec-style
distillation of all-MiniLM-L6-v2: one vector per WordPiece token. Encoding a text is what
model2vec's `StaticModel.encode` does: cut the text to `max_length * median token length`
characters, tokenise without special tokens (truncated to `max_length` tokens), drop unknown
tokens, average the token vectors and L2-normalise the mean when the config says so. A text
with no known token gives a zero row.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "model"
DEFAULT_MAX_LENGTH = 512  # model2vec's default when the config names none
CHUNK_TOKENS = 1 << 15
"""Tokens whose vectors are gathered at once when encoding (a longer text goes alone)."""


class StaticEmbedder:
    """Token-vector lookup + mean pooling; `encode` returns float32 rows."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        vectors: npt.NDArray[np.floating[Any]],
        *,
        normalize: bool,
        max_length: int | None,
        model_id: str,
    ) -> None:
        if vectors.ndim != 2 or vectors.shape[0] != tokenizer.get_vocab_size():
            raise ValueError(f"{vectors.shape} vectors for a vocabulary of {tokenizer.get_vocab_size()} tokens")
        self._tokenizer = tokenizer
        self._vectors = vectors
        self._normalize = normalize
        self._max_length = max_length
        self._model_id = model_id
        self._tokenizer.no_padding()
        if max_length is None:
            self._tokenizer.no_truncation()
        else:
            cast(Any, self._tokenizer).enable_truncation(max_length)  # stub has untyped **kwargs
        lengths = [len(token) for token in tokenizer.get_vocab()]
        self._max_chars = None if max_length is None else max_length * int(np.median(lengths))
        unk = getattr(tokenizer.model, "unk_token", None)  # WordPiece/BPE/WordLevel name one
        self._unk_id: int | None = tokenizer.token_to_id(unk) if isinstance(unk, str) else None

    @classmethod
    def load(cls, path: Path | None = None) -> StaticEmbedder:
        """Load a model directory (default: the one packaged with toolscout)."""
        directory = DEFAULT_MODEL_DIR if path is None else path
        config = cast(dict[str, Any], json.loads((directory / "config.json").read_text(encoding="utf-8")))
        raw = (directory / "embeddings.npy").read_bytes()
        weights_sha = hashlib.sha256(raw).hexdigest()
        expected = config.get("embeddings_sha256")
        if expected is not None and expected != weights_sha:
            raise ValueError(f"{directory / 'embeddings.npy'}: sha256 {weights_sha} does not match config.json")
        # Kept as stored (float16 packaged): only the rows a text uses are widened, in `encode`;
        # widening all 7.5M at load would cost 70 ms of every start.
        vectors = npy_view(raw)
        if not np.issubdtype(vectors.dtype, np.floating):
            raise ValueError(f"{directory / 'embeddings.npy'}: {vectors.dtype} vectors, not floating point")
        tokenizer_bytes = (directory / "tokenizer.json").read_bytes()
        tokenizer = Tokenizer.from_str(tokenizer_bytes.decode("utf-8"))
        normalize = bool(config.get("normalize", False))
        max_length = cast(int | None, config.get("max_length", DEFAULT_MAX_LENGTH))
        key = hashlib.sha256()
        for part in (weights_sha, hashlib.sha256(tokenizer_bytes).hexdigest(), str(normalize), str(max_length)):
            key.update(part.encode())
        model_id = f"static-minilm-{vectors.shape[1]}d-{key.hexdigest()[:12]}"
        return cls(tokenizer, vectors, normalize=normalize, max_length=max_length, model_id=model_id)

    @property
    def model_id(self) -> str:
        """Stable id of these weights + tokenizer + settings, for use as a cache key."""
        return self._model_id

    @property
    def vectors(self) -> npt.NDArray[np.float32]:
        """The token vectors, one row per vocabulary id (a float32 copy)."""
        return self._vectors.astype(np.float32)

    @property
    def dims(self) -> int:
        return int(self._vectors.shape[1])

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids per text, as model2vec's `StaticModel.tokenize` (unknown tokens dropped)."""
        if self._max_chars is not None:
            texts = [text[: self._max_chars] for text in texts]
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        if self._unk_id is None:
            return [encoding.ids for encoding in encodings]
        return [[i for i in encoding.ids if i != self._unk_id] for encoding in encodings]

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One row per text: the mean of its token vectors, L2-normalised if the model says so."""
        ids = self.tokenize(texts)
        out = np.zeros((len(ids), self.dims), dtype=np.float32)
        # A chunk of texts at a time: the token rows gathered for the means stay a few MiB, where
        # 10,000 tools at once gathered 700 MiB of them.
        begin = 0
        while begin < len(ids):
            end, tokens = begin + 1, len(ids[begin])
            while end < len(ids) and tokens + len(ids[end]) <= CHUNK_TOKENS:
                tokens += len(ids[end])
                end += 1
            self._mean_into(ids[begin:end], out[begin:end])
            begin = end
        if self._normalize:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out /= np.maximum(norms, np.float32(1e-32))
        return out

    def _mean_into(self, ids: Sequence[Sequence[int]], out: npt.NDArray[np.float32]) -> None:
        lengths = np.fromiter((len(row) for row in ids), dtype=np.int64, count=len(ids))
        filled = np.flatnonzero(lengths)
        if filled.size:
            flat = np.fromiter((i for row in ids for i in row), dtype=np.int64, count=int(lengths.sum()))
            starts = np.concatenate(([0], np.cumsum(lengths[filled])[:-1]))
            sums = np.add.reduceat(self._vectors[flat], starts, axis=0, dtype=np.float32)
            out[filled] = sums / lengths[filled, None].astype(np.float32)


def npy_view(raw: bytes) -> npt.NDArray[Any]:
    """The array of an .npy file's bytes, read-only and without a copy (`np.load` copies 15 MB)."""
    header = io.BytesIO(raw)
    version = np.lib.format.read_magic(header)
    if version == (1, 0):
        shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(header)
    elif version == (2, 0):
        shape, fortran_order, dtype = np.lib.format.read_array_header_2_0(header)
    else:
        return np.load(io.BytesIO(raw), allow_pickle=False)
    if dtype.hasobject:
        raise ValueError("object arrays are not model weights")
    count = int(np.prod(shape, dtype=np.int64))
    flat = np.frombuffer(raw, dtype=dtype, count=count, offset=header.tell())
    return flat.reshape(shape, order="F" if fortran_order else "C")
