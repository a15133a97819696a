"""The packaged static embedder, the on-disk vector cache and the fallback when the model is missing."""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import logging
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Literal

import mcp_types as types
import numpy as np
import pytest
from benchmarks import train_data

from tests.helpers.paths import PYTHON
from toolscout.catalog import Catalog, CatalogTool
from toolscout.errors import ConfigurationError
from toolscout.search import HybridBackend, make_backend
from toolscout.search import embedding as embedding_module
from toolscout.search.embedding import DEFAULT_MODEL_DIR, DenseBackend, StaticEmbedder, VectorCache, Vectors


def _tools() -> list[CatalogTool]:
    catalog = Catalog()
    catalog.set_server_tools(
        "weather",
        [
            types.Tool(name="forecast", description="Rain, wind and temperature for a city.", input_schema={}),
        ],
    )
    catalog.set_server_tools(
        "mail",
        [types.Tool(name="send", description="Send an e-mail message to a recipient.", input_schema={})],
    )
    return catalog.tools()


class CountingEmbedder:
    """The packaged model, counting how many texts it was asked to embed."""

    def __init__(self) -> None:
        self.inner = StaticEmbedder.load()
        self.texts: list[str] = []

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def encode(self, texts: Sequence[str]) -> Vectors:
        self.texts.extend(texts)
        return self.inner.encode(texts)


def test_packaged_model_embeds_meaning_not_just_words() -> None:
    model = StaticEmbedder.load()
    assert model.model_id.startswith("static-minilm-")
    vectors = model.encode(["will it rain tomorrow", "weather forecast", "send an email", ""])
    assert vectors.shape == (4, model.dims)
    assert np.allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, atol=1e-3)
    assert not vectors[3].any()  # no known token: a zero row, not NaN
    # No word in common, yet rain is closer to a forecast than to e-mail.
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.1


def test_the_packaged_model_was_fine_tuned_only_on_sources_it_may_ship_and_says_so() -> None:
    # The weights ship in the wheel: only MIT/Apache-2.0 training sources (never the CC-BY-SA
    # SGD rows), never the held-out group the generalisation check is measured on, and the model
    # card names each source the config records.
    config = json.loads((DEFAULT_MODEL_DIR / "config.json").read_text(encoding="utf-8"))
    tuning = config["fine_tuning"]
    groups: dict[str, str] = tuning["groups"]
    assert groups and set(groups) <= set(train_data.GROUPS)
    assert set(groups.values()) <= {"MIT", "Apache-2.0"}
    assert groups == {g: train_data.LICENCES[g] for g in groups}, "a group's licence differs from the corpus's"
    assert train_data.HELD_OUT not in groups and tuning["held_out_group"] == train_data.HELD_OUT
    assert "scripts/train_embeddings.py" in tuning["command"]
    card = (DEFAULT_MODEL_DIR / "README.md").read_text(encoding="utf-8")
    assert all(f"`{group}` ({licence}" in card for group, licence in groups.items()), groups
    assert tuning["start"]["embeddings_sha256"] != config["embeddings_sha256"]


def test_the_packaged_vectors_stay_half_precision_and_encode_as_widened_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = StaticEmbedder.load()
    texts = ["will it rain tomorrow", "", "convert 26.2 miles to kilometers", "x", "a longer text than a chunk"]
    widened = StaticEmbedder(
        model.tokenizer,
        model.vectors,
        normalize=True,
        max_length=512,
        model_id="float32",
    )
    assert model.vectors.dtype == np.float32
    assert model._vectors.dtype == np.float16  # pyright: ignore[reportPrivateUsage]
    assert np.array_equal(model.encode(texts), widened.encode(texts))
    # A few texts' tokens at a time (a text longer than a chunk alone): the same rows.
    whole = widened.encode(texts)
    monkeypatch.setattr(embedding_module, "CHUNK_TOKENS", 4)
    assert np.array_equal(model.encode(texts), whole)


def test_dense_search_ranks_by_meaning() -> None:
    backend = DenseBackend(StaticEmbedder.load())
    backend.rebuild(_tools())
    hits = backend.search("is an umbrella needed tomorrow", limit=2)
    assert [h.tool.name for h in hits] == ["forecast", "send"]
    assert all(0.0 <= h.relevance <= 1.0 for h in hits)


def test_tool_vectors_are_cached_on_disk_and_reused(tmp_path: Path) -> None:
    first = CountingEmbedder()
    DenseBackend(first, VectorCache(tmp_path)).rebuild(_tools())
    assert len(first.texts) == 2
    assert [p.name for p in tmp_path.iterdir()] == [f"{first.model_id}.npz"]

    second = CountingEmbedder()
    backend = DenseBackend(second, VectorCache(tmp_path))
    backend.rebuild(_tools())
    assert second.texts == []  # every tool vector came from the cache
    assert backend.search("rain", limit=1)[0].tool.name == "forecast"

    # A changed description is embedded again, the unchanged tool is not.
    tools = _tools()
    changed = [tools[0], replace(tools[1], tool=tools[1].tool.model_copy(update={"description": "Hail."}))]
    third = CountingEmbedder()
    DenseBackend(third, VectorCache(tmp_path)).rebuild(changed)
    assert len(third.texts) == 1
    assert "Hail." in third.texts[0]


def test_unreadable_cache_is_ignored_and_rewritten(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    embedder = CountingEmbedder()
    (tmp_path / f"{embedder.model_id}.npz").write_bytes(b"not a numpy file")
    with caplog.at_level(logging.WARNING):
        DenseBackend(embedder, VectorCache(tmp_path)).rebuild(_tools())
    assert "unreadable embedding cache" in caplog.text
    assert len(embedder.texts) == 2
    again = CountingEmbedder()
    DenseBackend(again, VectorCache(tmp_path)).rebuild(_tools())
    assert again.texts == []


def _mapping_of(model: StaticEmbedder) -> tuple[str, int]:
    """The file behind `model`'s weights and how much of that mapping is resident (KiB), from /proc/self/smaps."""
    address = int(model._vectors.__array_interface__["data"][0])  # pyright: ignore[reportPrivateUsage]
    inside, name = False, ""
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and not fields[0].endswith(":"):
            start, end = (int(part, 16) for part in fields[0].split("-"))
            inside = start <= address < end
            name = fields[-1] if inside else ""
        elif inside and fields[0] == "Rss:":
            return name, int(fields[1])
    return "", 0


def test_the_weights_are_mapped_and_only_used_rows_stay_resident() -> None:
    path = (DEFAULT_MODEL_DIR / "embeddings.npy").resolve()
    model = StaticEmbedder.load()
    size_kib = path.stat().st_size // 1024
    # The load hashed every page and handed them back: the file mapped, not copied, little of it resident.
    name, resident = _mapping_of(model)
    assert name == str(path)
    assert resident < size_kib // 4
    assert model._ready is None  # pyright: ignore[reportPrivateUsage]  # made on first use
    model.encode(["convert miles to kilometers"])
    assert model._ready is not None  # pyright: ignore[reportPrivateUsage]
    # A catalog's worth of texts touches most rows; afterwards they are handed back again.
    vocab = json.loads((DEFAULT_MODEL_DIR / "tokenizer.json").read_text())["model"]["vocab"]
    words = [word for word in list(vocab)[999:] if word.isalpha()]
    catalog = [" ".join(words[i : i + 60]) for i in range(0, 60 * 300, 60)]
    assert len(catalog) >= embedding_module.RELEASE_AFTER_TEXTS
    vectors = model.encode(catalog)
    assert _mapping_of(model)[1] < size_kib // 4
    assert np.array_equal(vectors, model.encode(catalog))  # pages mapped again read the same rows


def test_a_backend_with_no_tools_never_makes_the_tokenizer() -> None:
    backend = make_backend("hybrid", use_cache=False)
    assert isinstance(backend, HybridBackend) and backend.dense is not None
    embedder = backend.dense.embedder
    assert isinstance(embedder, StaticEmbedder)
    backend.rebuild([])
    assert backend.search("convert miles", limit=3) == []
    assert embedder._ready is None  # pyright: ignore[reportPrivateUsage]
    backend.rebuild(_tools())
    assert embedder._ready is not None  # pyright: ignore[reportPrivateUsage]


def test_a_damaged_tokenizer_is_found_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    broken = tmp_path / "model"
    shutil.copytree(embedding_module.DEFAULT_MODEL_DIR, broken)
    (broken / "tokenizer.json").write_text('{"version": "1.0", "model": {}}')
    with pytest.raises(ValueError, match=r"tokenizer\.json: sha256 .* does not match config\.json"):
        StaticEmbedder.load(broken)
    monkeypatch.setattr(embedding_module, "DEFAULT_MODEL_DIR", broken)
    with caplog.at_level(logging.WARNING):
        backend = make_backend("hybrid", cache_dir=tmp_path / "cache")
    assert isinstance(backend, HybridBackend) and backend.dense is None
    assert "lexical only" in caplog.text
    # A model directory whose config records no tokenizer hash still fails at load, not at first use.
    config = json.loads((broken / "config.json").read_text())
    del config["tokenizer_sha256"]
    (broken / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"tokenizer\.json: data did not match"):
        StaticEmbedder.load(broken)


def test_missing_model_falls_back_to_lexical_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    broken = tmp_path / "model"
    shutil.copytree(embedding_module.DEFAULT_MODEL_DIR, broken)
    (broken / "embeddings.npy").write_bytes(b"truncated")
    monkeypatch.setattr(embedding_module, "DEFAULT_MODEL_DIR", broken)

    with caplog.at_level(logging.WARNING):
        backend = make_backend("hybrid", cache_dir=tmp_path / "cache")
    assert isinstance(backend, HybridBackend)
    assert backend.dense is None
    assert "lexical only" in caplog.text
    backend.rebuild(_tools())
    assert backend.search("send e-mail", limit=1)[0].tool.name == "send"

    with pytest.raises(ConfigurationError, match="use the bm25 backend"):
        make_backend("dense")


def test_unknown_backend_is_a_config_error() -> None:
    with pytest.raises(ConfigurationError, match="hybrid, bm25, dense"):
        make_backend("semantic")


def test_heavier_model_without_its_extra_says_what_to_install() -> None:
    if importlib.util.find_spec("sentence_transformers") is not None:
        # This environment has the extra: the model must load and rank instead.
        backend = make_backend("hybrid", model="minilm", use_cache=False)
        backend.rebuild(_tools())
        assert backend.search("is an umbrella needed tomorrow", limit=1)[0].tool.name == "forecast"
        return
    with pytest.raises(ConfigurationError, match=r"pip install 'toolscout\[minilm\]'"):
        make_backend("hybrid", model="minilm")
    with pytest.raises(ConfigurationError, match="static, minilm"):
        make_backend("hybrid", model="large")


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is not None,
    reason="the minilm extra is installed here, so there is no missing extra to report",
)
def test_gateway_with_a_missing_model_extra_exits_with_the_fix(tmp_path: Path) -> None:
    config = tmp_path / "toolscout.json"
    config.write_text(json.dumps({"mcpServers": {}, "search": {"model": "minilm"}}))
    # (`list` answers without the search model now: only what searches needs it.)
    for command in (["search", "convert miles"], ["serve"]):
        done = subprocess.run(
            [PYTHON, "-m", "toolscout", *command, "--config", str(config)],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert "pip install 'toolscout[minilm]'" in done.stderr
        assert "Traceback" not in done.stderr


def test_hybrid_says_nothing_matches_for_nonsense_but_not_for_synonyms() -> None:
    backend = make_backend("hybrid", use_cache=False)
    backend.rebuild(_tools())
    # Every tool has some cosine with any text; without a word in common that is not a match.
    assert backend.search("zebra migration patterns") == []
    assert backend.search("asdf qwerty") == []
    # No word in common with "Send an e-mail message", yet close in meaning: found, and first.
    hits = backend.search("notify my colleague by email")
    assert hits[0].tool.name == "send"


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize(
    ("dtype", "shape"), [("float16", (4, 6)), ("<f4", (24,)), (">f8", (2, 3, 4)), ("int8", (0, 3))]
)
def test_weights_are_read_without_a_copy_as_np_load_reads_them(
    order: Literal["C", "F"], dtype: str, shape: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    weights = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape, order=order)
    buffer = io.BytesIO()
    np.save(buffer, weights)
    raw = buffer.getvalue()
    expected = np.load(io.BytesIO(raw))
    # numpy's own header reader parses with `ast`, which CPython 3.11 does not make safe in two threads
    # at once (the index loads the model in a worker thread): the header is read without it.
    monkeypatch.setattr(ast, "literal_eval", _no_ast)
    view = embedding_module.npy_view(raw)
    assert view.dtype == expected.dtype and view.shape == expected.shape and np.array_equal(view, expected)
    assert not view.flags.writeable  # the file's bytes, shared: nothing may write through it
    if weights.size:
        with pytest.raises(ValueError, match="smaller than requested"):  # a truncated file: lexical search only
            embedding_module.npy_view(raw[:-8])


def _no_ast(*_: object) -> object:
    raise AssertionError("the .npy header was parsed with ast")


def test_what_a_tool_is_for_is_not_drowned_by_the_details_of_its_description() -> None:
    catalog = Catalog()
    catalog.set_server_tools(
        "units",
        [
            types.Tool(
                name="convert_units",
                description=(
                    "Convert a value from one unit to another unit of the same dimension.\n\n"
                    "Supports length (m, km, cm, mm, mi, yd, ft, in), mass (kg, g, lb, oz), temperature "
                    "(C, F, K), time (s, min, h, day) and data size (B, KB, MB, GB decimal; KiB, MiB, GiB "
                    'binary). Unit names are case-insensitive and accept full names and plurals such as "kilometers" '
                    'or "fahrenheit". Call list_units for every accepted spelling.'
                ),
                input_schema={},
            ),
            types.Tool(
                name="list_units",
                description="List the units convert_units accepts, grouped by dimension, with their accepted aliases.",
                input_schema={},
            ),
        ],
    )
    embedder = CountingEmbedder()
    backend = DenseBackend(embedder, VectorCache(None))
    backend.rebuild(catalog.tools())
    # The long description is embedded whole and as its first sentence; the one-sentence one once.
    assert len(embedder.texts) == 3
    # The mean over the whole paragraph once put list_units first for "convert miles".
    assert [h.tool.name for h in backend.search("convert miles")] == ["convert_units", "list_units"]
