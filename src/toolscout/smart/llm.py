"""The language model `smart` mode may ask: a seam, and its OpenAI-compatible implementation.

spec 004 needs an LLM for selection and parameter mapping; issue 23 lets it come from any
OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM, LM Studio, llama.cpp), from the
calling client through MCP sampling, or from nowhere (the offline methods). Whatever the source, a
failure is an `LLMUnavailable` with a `reason`, so that the caller can fall back to the next method
and say why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, Protocol, Self, TypedDict, cast

import anyio
import httpx2

from toolscout.errors import LLMUnavailable


class ChatMessage(TypedDict):
    """One message of a chat, as the chat-completions API takes it."""

    role: Literal["system", "user", "assistant"]
    content: str


class LLMProvider(Protocol):
    """Something that answers a chat with text: JSON matching `json_schema` when one is given."""

    name: str
    """Which LLM answered, for the answer's `discovery_reasoning` ("openai-compatible:llama3")."""

    async def complete(self, messages: Sequence[ChatMessage], *, json_schema: Mapping[str, Any] | None = None) -> str:
        """The model's answer; raises `LLMUnavailable` when there is none to use."""
        ...


# Statuses worth asking again: the endpoint is busy or briefly broken, not the request wrong.
_RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


class OpenAICompatibleLLM:
    """`POST {base_url}/chat/completions`, temperature 0, the answer constrained to a JSON schema.

    An async context manager owning its HTTP client. Each attempt is bounded by `timeout` seconds;
    a timeout, a refused connection or a retryable status is tried again up to `max_retries`
    times, after 0.25, 0.5, 1... s; anything else fails at once.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 20.0,
        max_retries: int = 1,
        backoff: float = 0.25,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.name = f"openai-compatible:{model}"
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx2.AsyncClient(headers=headers, timeout=timeout)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self._client.aclose()

    def _body(self, messages: Sequence[ChatMessage], json_schema: Mapping[str, Any] | None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": list(messages), "temperature": 0}
        if json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": dict(json_schema), "strict": False},
            }
        return body

    async def complete(self, messages: Sequence[ChatMessage], *, json_schema: Mapping[str, Any] | None = None) -> str:
        body = self._body(messages, json_schema)
        last: LLMUnavailable | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                await anyio.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                with anyio.fail_after(self.timeout):
                    response = await self._client.post(self.url, json=body)
            except (TimeoutError, httpx2.TimeoutException):
                last = self._failure(f"no answer within {self.timeout:g} s", "timeout")
                continue
            except httpx2.TransportError as exc:
                last = self._failure(f"cannot be reached ({type(exc).__name__})", "unreachable")
                continue
            if response.status_code in _RETRY_STATUSES:
                last = self._failure(f"answered HTTP {response.status_code}", "http", status=response.status_code)
                continue
            if response.status_code >= 400:
                raise self._failure(
                    f"answered HTTP {response.status_code}: {response.text[:200]}", "http", status=response.status_code
                )
            return self._text(response)
        assert last is not None  # the loop runs at least once and only `continue`s after setting it
        raise last

    def _failure(self, what: str, reason: str, **details: Any) -> LLMUnavailable:
        return LLMUnavailable(f"The LLM at {self.url} {what}.", reason=reason, model=self.model, **details)

    def _text(self, response: httpx2.Response) -> str:
        """The first choice's text; a refusal, a filtered or an empty answer is a failure."""
        try:
            payload = response.json()
            message = cast(dict[str, Any], payload["choices"][0]["message"])
            finish = payload["choices"][0].get("finish_reason")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise self._failure(f"answered no chat completion ({type(exc).__name__})", "bad_answer") from None
        refusal = message.get("refusal")
        if refusal or finish == "content_filter":
            raise self._failure(f"refused: {str(refusal or finish)[:200]}", "refused")
        content = message.get("content")
        if not isinstance(content, str) or not content.strip():
            raise self._failure("answered with no text", "bad_answer")
        return content


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object of a model's answer, allowing a ```json fence around it; ValueError otherwise."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    value = json.loads(stripped)
    if not isinstance(value, dict):
        raise ValueError(f"a JSON {type(value).__name__}, not an object")
    return cast(dict[str, Any], value)
