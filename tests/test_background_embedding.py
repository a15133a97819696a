"""A catalog of many tools the model has not read is searchable by its words while it is embedded.

At 10,000 tools the first search from a cold embedding cache waited seconds for every tool to be
embedded. A serving gateway now answers from an index of the tools' words meanwhile, says so, and
takes the full index once the embeddings are done; a command that answers once still waits for
them (its background work would be abandoned at exit and its vectors never cached).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from toolscout.demo.catalog_server import build_server
from toolscout.gateway import index as index_module
from toolscout.gateway.core import Gateway
from toolscout.modes.discovery import SearchToolsArgs, search_tools
from toolscout.search import HybridBackend
from toolscout.search.embedding import DenseBackend, StaticEmbedder, VectorCache, Vectors
from toolscout.upstream import InProcessUpstream, UpstreamSpec

WAIT = 30.0
"""The longest any step may take (a slow machine's worst case, not its expected time)."""


class GatedEmbedder:
    """The packaged model, holding every catalog's worth of texts until `gate` opens (a query's one text passes)."""

    def __init__(self, hold: float = WAIT) -> None:
        self.inner = StaticEmbedder.load()
        self.hold = hold
        """The longest the gate holds a catalog's texts."""
        self.gate = threading.Event()
        self.waiting = threading.Event()
        """Set once a catalog's texts are held at the gate."""

    @property
    def model_id(self) -> str:
        return "gated-" + self.inner.model_id

    def encode(self, texts: Sequence[str]) -> Vectors:
        if len(texts) > 1:
            self.waiting.set()
            assert self.gate.wait(self.hold), "the test never opened the gate"
        return self.inner.encode(texts)


def _tools(count: int) -> list[types.Tool]:
    made = [
        types.Tool(
            name="convert_units",
            description="Convert a value from one unit to another.",
            input_schema={"type": "object"},
        ),
        types.Tool(
            name="send_email", description="Send an e-mail message to a recipient.", input_schema={"type": "object"}
        ),
    ]
    made += [
        types.Tool(
            name=f"report_{i}", description=f"Quarterly sales report number {i}.", input_schema={"type": "object"}
        )
        for i in range(count - len(made))
    ]
    return made


def _gateway(embedder: GatedEmbedder, cache: Path, *, background: bool) -> Gateway:
    spec = UpstreamSpec("office", InProcessUpstream(build_server("office", _tools(40))))
    backend = HybridBackend(DenseBackend(embedder, VectorCache(cache)))
    return Gateway([spec], search_factory=lambda: backend, embed_in_background=background)


def _embedded_dimensions(gateway: Gateway) -> int | None:
    """The length of the vectors the gateway's full index holds (None: nothing embedded)."""
    backend = gateway.search_backend
    assert isinstance(backend, HybridBackend) and isinstance(backend.dense, DenseBackend)
    return backend.dense.dimensions


@pytest.mark.anyio
async def test_a_serving_gateway_ranks_by_words_while_the_tools_are_embedded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "EMBED_IN_BACKGROUND_FROM", 10)
    embedder = GatedEmbedder()
    async with _gateway(embedder, tmp_path, background=True) as gateway:
        try:
            with anyio.fail_after(WAIT):
                await gateway.settle()
                # The embedding is held: the search is answered all the same, by the tools' words.
                hits = await gateway.search("convert units")
            assert hits[0].tool.name == "convert_units"
            assert gateway.ranked_by_words
            assert await anyio.to_thread.run_sync(embedder.waiting.wait, WAIT)  # the catalog's texts, held
            answer = await search_tools(gateway, SearchToolsArgs.model_validate({"query": "send an e-mail"}))
            data: Any = answer.structured_content
            assert data["rankedByWords"] is True
            assert data["results"][0]["tool"] == "send_email"
            text = answer.content[0]
            assert isinstance(text, types.TextContent) and "Ranked by words alone" in text.text

            embedder.gate.set()
            with anyio.fail_after(WAIT):
                await gateway.embedded()
            assert not gateway.ranked_by_words
            assert _embedded_dimensions(gateway) == embedder.inner.dims  # the full index, embedded
            with anyio.fail_after(WAIT):
                answer = await search_tools(gateway, SearchToolsArgs.model_validate({"query": "send an e-mail"}))
            data = answer.structured_content
            assert "rankedByWords" not in data
            assert data["results"][0]["tool"] == "send_email"
        finally:
            embedder.gate.set()  # whatever failed: the worker thread is not left waiting

    # The next start finds the vectors cached: nothing to embed, the full index at once.
    again = GatedEmbedder()
    async with _gateway(again, tmp_path, background=True) as gateway:
        with anyio.fail_after(WAIT):
            await gateway.settle()
            await gateway.search("convert units")
        assert not gateway.ranked_by_words
        assert not again.waiting.is_set()


@pytest.mark.anyio
async def test_a_command_that_answers_once_waits_for_the_embeddings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "EMBED_IN_BACKGROUND_FROM", 10)
    embedder = GatedEmbedder()
    embedder.gate.set()
    async with _gateway(embedder, tmp_path, background=False) as gateway:
        with anyio.fail_after(WAIT):
            await gateway.settle()
            hits = await gateway.search("convert units")
        assert hits[0].tool.name == "convert_units"
        assert embedder.waiting.is_set()  # embedded before the answer
        assert not gateway.ranked_by_words
        assert _embedded_dimensions(gateway) == embedder.inner.dims


@pytest.mark.anyio
async def test_a_gateway_stops_without_waiting_for_its_embeddings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "EMBED_IN_BACKGROUND_FROM", 10)
    embedder = GatedEmbedder(hold=4 * WAIT)  # held past the bound below: only abandoning it ends in time
    try:
        with anyio.fail_after(WAIT):
            async with _gateway(embedder, tmp_path, background=True) as gateway:
                await gateway.settle()
                await gateway.search("convert units")
                assert await anyio.to_thread.run_sync(embedder.waiting.wait, WAIT)
                assert gateway.ranked_by_words
    finally:
        embedder.gate.set()
