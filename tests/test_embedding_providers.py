"""Embeddings from a provider (`search.embeddings`): OpenAI's `/v1/embeddings` and Ollama's `/api/embed`,
each a real HTTP server on loopback with scripted answers.

Tool vectors are kept on disk by text, provider and model, so a restart or a changed tool embeds only
what changed, and a sync says what it did (created, updated, unchanged, failed). A provider that fails
(an HTTP error, bad JSON, vectors of the wrong length, no answer in time) leaves the tools to the
packaged static model, said once; a query it cannot embed is ranked lexically, said once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from tests.helpers.callback_site import CallbackSite, callback_site
from tests.helpers.cli_sandbox import make_sandbox
from tests.helpers.embedding_site import ScriptedEmbeddings
from tests.helpers.paths import PYTHON
from toolscout.catalog import Catalog, CatalogTool
from toolscout.config.models import EmbeddingsConfig, GatewayConfig
from toolscout.search import HybridBackend, SearchBackend, make_backend
from toolscout.search.embedding import DenseBackend, EmbeddingChanges, StaticEmbedder
from toolscout.search.remote_embedding import RemoteEmbedder

pytestmark = pytest.mark.anyio

TOOLS = {
    "weather": [("forecast", "Rain, wind and temperature for a city."), ("alerts", "Storm warnings for a region.")],
    "mail": [("send", "Send an e-mail message to a recipient."), ("inbox", "List the messages received.")],
}


def catalog_tools(
    changes: dict[str, str] | None = None, extra: Sequence[tuple[str, str, str]] = ()
) -> list[CatalogTool]:
    """The catalog's tools, descriptions changed by `changes` (`server/name` -> description), plus `extra`."""
    catalog = Catalog()
    servers: dict[str, list[tuple[str, str]]] = {server: list(tools) for server, tools in TOOLS.items()}
    for server, name, description in extra:
        servers.setdefault(server, []).append((name, description))
    for server, tools in servers.items():
        catalog.set_server_tools(
            server,
            [
                types.Tool(name=name, description=(changes or {}).get(f"{server}/{name}", text), input_schema={})
                for name, text in tools
            ],
        )
    return catalog.tools()


def provider(site: CallbackSite, kind: str = "openai", path: str = "", **extra: Any) -> EmbeddingsConfig:
    base = site.url(f"{path}/v1") if kind == "openai" else site.url(path or "")
    return EmbeddingsConfig.model_validate({"provider": kind, "baseUrl": base, "model": "embed-small", **extra})


def dense(config: EmbeddingsConfig, cache: Path) -> DenseBackend:
    backend = make_backend("dense", embeddings=config, cache_dir=cache)
    assert isinstance(backend, DenseBackend)
    return backend


async def rebuilt(backend: SearchBackend, tools: list[CatalogTool]) -> None:
    with anyio.fail_after(30):
        await anyio.to_thread.run_sync(backend.rebuild, tools)


def said(caplog: pytest.LogCaptureFixture, words: str) -> int:
    return sum(words in record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING)


@pytest.mark.parametrize("kind", ["openai", "ollama"])
async def test_tools_are_embedded_by_the_provider_with_its_key_and_ranked_by_its_vectors(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EMBED_KEY", "sk-embed")
    scripted = ScriptedEmbeddings(kind)  # type: ignore[arg-type]
    async with callback_site(scripted.answer) as site:
        backend = dense(provider(site, kind, apiKeyEnv="EMBED_KEY", batchSize=3), tmp_path)
        tools = catalog_tools()
        await rebuilt(backend, tools)
        hits = await anyio.to_thread.run_sync(lambda: backend.search("storm warnings region", limit=2))
    assert hits[0].tool.name == "alerts"
    assert backend.fallback_reason is None
    assert backend.space is backend.embedder and backend.dimensions == scripted.dims
    assert backend.take_changes() == EmbeddingChanges(created=4, unchanged=0)
    path = "/v1/embeddings" if kind == "openai" else "/api/embed"
    assert {p for p, _, _ in site.received} == {path}
    # The full text and the summary of each tool (one text when they are the same), three per request.
    assert all(len(body["input"]) <= 3 and body["model"] == "embed-small" for _, body, _ in site.received[:-1])
    assert all(headers["authorization"] == "Bearer sk-embed" for _, _, headers in site.received)
    assert backend.embedder.model_id.startswith(f"{kind}-embed-small-")


async def test_a_restart_and_a_changed_tool_embed_only_what_changed(tmp_path: Path) -> None:
    scripted = ScriptedEmbeddings(dims=32)
    async with callback_site(scripted.answer) as site:
        config = provider(site, dimensions=32)
        first = dense(config, tmp_path)
        await rebuilt(first, catalog_tools())
        assert first.take_changes() == EmbeddingChanges(created=4)
        asked = len(scripted.texts)

        restarted = dense(config, tmp_path)  # a new process: only the disk cache is known
        await rebuilt(restarted, catalog_tools())
        assert len(scripted.texts) == asked  # nothing embedded again
        assert restarted.take_changes() == EmbeddingChanges(unchanged=4)

        changed = catalog_tools({"mail/send": "Send a letter by post."}, [("mail", "archive", "Archive old mail.")])
        again = dense(config, tmp_path)
        await rebuilt(again, changed)
        assert again.take_changes() == EmbeddingChanges(created=1, updated=1, unchanged=3)
        assert set(scripted.texts[asked:]) <= {
            "mail send Send a letter by post.",
            "mail archive Archive old mail.",
        }
        assert scripted.texts[asked:]
        # Asked again with nothing new since: all unchanged.
        assert again.take_changes() == EmbeddingChanges(unchanged=5)
    # Another model's vectors are kept apart from these.
    other = EmbeddingsConfig(provider="openai", base_url=config.base_url, model="embed-large", dimensions=32)
    assert RemoteEmbedder(other).model_id != RemoteEmbedder(config).model_id


FAILURES = {
    "http 500": ((500, b'{"error": "overloaded"}'), "http"),
    "bad json": ((200, b"<html>not json"), "bad_answer"),
    "no embeddings": ((200, b'{"object": "list"}'), "bad_answer"),
}


@pytest.mark.parametrize("failure", [*FAILURES, "wrong dimensions", "timeout", "unreachable"])
async def test_a_failing_provider_leaves_the_tools_to_the_static_model_said_once(
    failure: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    scripted = ScriptedEmbeddings(dims=16)
    if failure in FAILURES:
        scripted.failure = FAILURES[failure][0]
    scripted.wrong_dims = failure == "wrong dimensions"
    async with callback_site(scripted.answer) as site:
        path = "/slow" if failure == "timeout" else ""
        config = provider(site, path=path, dimensions=16, timeout=0.5)
        if failure == "unreachable":
            config = config.model_copy(update={"base_url": "http://127.0.0.1:9/v1"})
        backend = make_backend("hybrid", embeddings=config, cache_dir=tmp_path)
        assert isinstance(backend, HybridBackend) and backend.dense is not None
        with caplog.at_level(logging.WARNING):
            await rebuilt(backend, catalog_tools())
            await rebuilt(backend, catalog_tools({"mail/send": "Send mail."}))
        dense_backend = backend.dense
        assert isinstance(dense_backend.space, StaticEmbedder)
        assert dense_backend.fallback_reason is not None
        reasons = {
            "http 500": "answered HTTP 500",
            "wrong dimensions": "answered 15-dimensional vectors where 16 were expected",
            "timeout": "did not answer within 0.5 s",
            "unreachable": "cannot be reached",
        }
        assert reasons.get(failure, "answered no embeddings") in dense_backend.fallback_reason
        assert said(caplog, "tools are embedded by the packaged model instead") == 1
        assert dense_backend.take_changes().failed == 4
        hits = await anyio.to_thread.run_sync(lambda: backend.search("send an e-mail message", limit=1))
        assert hits[0].tool.name == "send"
        # Once it answers again, the next rebuild is the provider's.
        scripted.failure, scripted.wrong_dims = None, False
        if failure not in ("timeout", "unreachable"):
            with caplog.at_level(logging.WARNING):
                await rebuilt(backend, catalog_tools())
            assert dense_backend.space is dense_backend.embedder
            assert dense_backend.fallback_reason is None
            assert said(caplog, "answers again") == 1


async def test_a_query_the_provider_cannot_embed_is_ranked_lexically_said_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    scripted = ScriptedEmbeddings()
    async with callback_site(scripted.answer) as site:
        backend = make_backend("hybrid", embeddings=provider(site), cache_dir=tmp_path)
        await rebuilt(backend, catalog_tools())
        before = scripted.requests

        def search(query: str) -> list[str]:
            return [hit.tool.name for hit in backend.search(query, limit=2)]

        assert (await anyio.to_thread.run_sync(search, "storm warnings"))[0] == "alerts"
        asked = scripted.requests - before
        assert asked >= 1
        assert (await anyio.to_thread.run_sync(search, "storm warnings"))[0] == "alerts"
        assert scripted.requests - before == asked  # the query's vector was kept
        scripted.failure = (503, b"down")
        with caplog.at_level(logging.WARNING):
            assert (await anyio.to_thread.run_sync(search, "send a message to a recipient"))[0] == "send"
            assert (await anyio.to_thread.run_sync(search, "rain temperature city"))[0] == "forecast"
        assert said(caplog, "queries are ranked lexically") == 1
        scripted.failure = None
        with caplog.at_level(logging.WARNING):
            assert (await anyio.to_thread.run_sync(search, "list received messages"))[0] == "inbox"
        assert said(caplog, "answers queries again") == 1


def test_the_embeddings_config_names_its_provider_and_defaults() -> None:
    config = GatewayConfig.model_validate(
        {"search": {"embeddings": {"provider": "openai", "model": "text-embedding-3-small", "dimensions": 256}}}
    )
    assert config.search.embeddings is not None
    assert config.search.embeddings.url() == "https://api.openai.com/v1"
    with pytest.raises(ValueError, match="provider"):
        GatewayConfig.model_validate({"search": {"embeddings": {"provider": "cohere", "model": "x"}}})
    with pytest.raises(ValueError, match="http"):
        EmbeddingsConfig.model_validate({"provider": "ollama", "model": "x", "baseUrl": "localhost:11434"})


async def test_the_sync_command_embeds_once_across_runs_and_reports_a_failing_provider(tmp_path: Path) -> None:
    sandbox = make_sandbox(tmp_path)
    scripted = ScriptedEmbeddings()
    async with callback_site(scripted.answer) as site:

        def sync(model: str, expect: int = 0) -> Any:
            config = {
                "mcpServers": {"units": {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]}},
                "catalogCache": False,
                "search": {"embeddings": {"provider": "openai", "baseUrl": site.url("/v1"), "model": model}},
            }
            path = sandbox.write("work/toolscout.json", json.dumps(config))
            return sandbox.json("embeddings", "sync", "--config", str(path), expect=expect)

        first = await anyio.to_thread.run_sync(sync, "embed-small")
        asked = len(scripted.texts)
        second = await anyio.to_thread.run_sync(sync, "embed-small")  # a new process: the vectors are on disk
        scripted.failure = (500, b'{"error": "down"}')
        failing = await anyio.to_thread.run_sync(lambda: sync("embed-other", expect=3))
    tools = first["toolsEmbedded"]
    assert tools > 1 and asked > 0
    assert (first["created"], first["updated"], first["unchanged"], first["failed"]) == (tools, 0, 0, 0)
    assert first["model"].startswith("openai-embed-small-") and first["fallback"] is None
    assert (second["created"], second["unchanged"], second["failed"]) == (0, tools, 0)
    assert len(scripted.texts) > asked  # only the failing run asked again
    assert failing["failed"] == tools and failing["model"].startswith("static-minilm-")
    assert failing["configuredModel"].startswith("openai-embed-other-")
    assert "answered HTTP 500" in failing["fallback"]
