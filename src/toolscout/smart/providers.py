"""The LLM providers smart mode can be configured with, asked through their own APIs, and which one does what.

`llm.provider` says whose API is asked: `openai` (any OpenAI-compatible chat completions,
smart/llm.py), `anthropic` (the Messages API: `POST {baseUrl}/v1/messages` with the `x-api-key` and
`anthropic-version` headers; the key from `ANTHROPIC_API_KEY` unless `apiKeyEnv` names another) or
`ollama` (Ollama's own `POST {baseUrl}/api/chat`, its `format` holding the answer's JSON schema;
`OLLAMA_BASE_URL` is the default base URL). Every provider shares the retries, timeouts and failures
of `ChatOverHTTP`: whatever goes wrong is an `LLMUnavailable` with a reason, and smart mode falls back.

`llm.selection` and `llm.mapping` may name another LLM for choosing the tool or for mapping the
request to its arguments; `open_llm` then gives an `LLMRoles`, which answers as the selection LLM
and hands its `mapping` one to the argument mapping.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, cast

from toolscout.config.models import LLMConfig
from toolscout.smart.llm import ChatMessage, ChatOverHTTP, LLMProvider, OpenAICompatibleLLM

if TYPE_CHECKING:
    import httpx2

ANTHROPIC_VERSION = "2023-06-01"
"""The Messages API version asked for (its stable one)."""


def _schema_instructions(json_schema: Mapping[str, Any] | None) -> str:
    return (
        ""
        if json_schema is None
        else f"\n\nAnswer with JSON only, matching this JSON schema: {json.dumps(json_schema)}"
    )


class AnthropicLLM(ChatOverHTTP):
    """Claude through Anthropic's Messages API; the JSON schema goes into the system prompt."""

    provider = "anthropic"

    def _endpoint(self, base_url: str) -> str:
        return base_url + ("/messages" if base_url.endswith("/v1") else "/v1/messages")

    def _headers(self, api_key: str | None) -> dict[str, str]:
        return {"anthropic-version": ANTHROPIC_VERSION, **({"x-api-key": api_key} if api_key else {})}

    def _body(self, messages: Sequence[ChatMessage], json_schema: Mapping[str, Any] | None) -> dict[str, Any]:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system") + _schema_instructions(
            json_schema
        )
        return {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": 0,
            "system": system,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "system"],
        }

    def _text(self, response: httpx2.Response) -> str:
        """The answer's text blocks, joined; a refusal or an answer without text is a failure."""
        payload = self._payload(response)
        content = payload.get("content")
        if not isinstance(content, list):
            raise self._failure("answered no message (no content list)", "bad_answer")
        if payload.get("stop_reason") == "refusal":
            raise self._failure("refused", "refused")
        blocks = [cast(dict[str, Any], b) for b in cast(list[Any], content) if isinstance(b, dict)]
        text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
        if not text.strip():
            raise self._failure("answered with no text", "bad_answer")
        return text


class OllamaLLM(ChatOverHTTP):
    """A model served by Ollama, through its own chat API (its structured outputs take the JSON schema)."""

    provider = "ollama"

    def _endpoint(self, base_url: str) -> str:
        return base_url + "/api/chat"

    def _headers(self, api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def _body(self, messages: Sequence[ChatMessage], json_schema: Mapping[str, Any] | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "stream": False,
            "options": {"temperature": 0, "num_predict": self.max_tokens},
        }
        if json_schema is not None:
            body["format"] = dict(json_schema)
        return body

    def _text(self, response: httpx2.Response) -> str:
        payload = self._payload(response)
        if "error" in payload:
            raise self._failure(f"answered an error: {str(payload['error'])[:200]}", "http")
        message = payload.get("message")
        content = cast(dict[str, Any], message).get("content") if isinstance(message, dict) else None
        if not isinstance(content, str) or not content.strip():
            raise self._failure("answered with no text", "bad_answer")
        return content


def provider(config: LLMConfig) -> ChatOverHTTP:
    """The LLM `config` describes (an async context manager owning its HTTP client)."""
    kind = {"openai": OpenAICompatibleLLM, "anthropic": AnthropicLLM, "ollama": OllamaLLM}[config.provider]
    return kind(
        config.url(),
        config.model,
        api_key=config.api_key(),
        timeout=config.timeout,
        max_retries=config.max_retries,
        max_tokens=config.max_tokens,
    )


class LLMRoles:
    """Two LLMs for smart mode's two questions: answers as the `selection` one, `mapping` maps arguments."""

    def __init__(self, selection: LLMProvider, mapping: LLMProvider) -> None:
        self.selection = selection
        self.mapping = mapping
        self.name = selection.name

    async def complete(self, messages: Sequence[ChatMessage], *, json_schema: Mapping[str, Any] | None = None) -> str:
        return await self.selection.complete(messages, json_schema=json_schema)


def mapping_llm(llm: LLMProvider) -> LLMProvider:
    """The LLM that maps arguments: `llm`'s mapping one when it has its own."""
    return llm.mapping if isinstance(llm, LLMRoles) else llm


@asynccontextmanager
async def open_llm(config: LLMConfig) -> AsyncGenerator[LLMProvider]:
    """The LLM (or two, as `LLMRoles`) `config` names, their HTTP clients open for the block."""
    async with AsyncExitStack() as stack:
        selection = await stack.enter_async_context(provider(config.for_selection()))
        if config.for_mapping() == config.for_selection():
            yield selection
            return
        mapping = await stack.enter_async_context(provider(config.for_mapping()))
        yield LLMRoles(selection, mapping)
