"""The language model smart mode may ask: the seam, its two sources, and arguments mapped by it.

Smart mode can use an LLM to choose a tool and to map a request's words to its arguments. The model
may be any OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM, LM Studio, llama.cpp),
Anthropic's Messages API or Ollama's own chat API (smart/providers.py), the calling client's own
model through MCP sampling, or none at all (the offline methods). Whatever
the source, a failure is an `LLMUnavailable` with a `reason`, so that the caller can fall back to the
next method and say why.

The client's model is asked only when `smart.sampling` opts in. Handshake-era clients get a
`sampling/createMessage` request, 2026-07-28 clients an input-required round (serve/rounds.py); either
way it goes through the request's relay (upstream/calls.py), as an upstream's own sampling does. The
2026-07-28 protocol deprecates sampling (SEP-2577), so this path is never the only one: a client that
did not declare sampling, declines, or answers with no text is an `LLMUnavailable`, and smart mode
goes on without an LLM.

`map_with_llm` asks the model for a tool's arguments as a JSON answer constrained by the tool's input
schema, validates it, and, when it is not valid, sends it back once with the violations. A second
bad answer (or no answer) is an `LLMUnavailable`, and the caller falls back to the deterministic
extractor (extraction.py). The model may leave out what the request does not state, required
arguments too: those are reported in `missing_required`; smart mode then reads them from the words
with the extractor where it can, and never invents one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, Self, TypedDict, cast

import anyio
import mcp_types as types

from toolscout.catalog import CatalogTool
from toolscout.errors import ArgumentValidationError, LLMUnavailable
from toolscout.upstream.calls import Relay, SamplingResult

if TYPE_CHECKING:
    import httpx2


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


# Statuses worth asking again: the endpoint is busy or briefly broken, not the request wrong (529:
# Anthropic's "overloaded").
_RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})


class ChatOverHTTP:
    """An LLM asked over HTTP at temperature 0, its answer fitting a JSON schema: the retries, the
    timeouts and the failures every provider shares (`smart/providers.py` has the others).

    An async context manager owning its HTTP client. Each attempt is bounded by `timeout` seconds;
    a timeout, a refused connection or a retryable status is tried again up to `max_retries`
    times, after 0.25, 0.5, 1... s; anything else fails at once. A provider says its `_endpoint`
    under the base URL, its `_headers`, its request `_body` and how to read its answer's `_text`.
    """

    provider: ClassVar[str]
    """The provider's name, the first part of `name` (e.g. `anthropic:claude-…`)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 20.0,
        max_retries: int = 1,
        backoff: float = 0.25,
        max_tokens: int = 1024,
    ) -> None:
        self.url = self._endpoint(base_url.rstrip("/"))
        self.model = model
        self.name = f"{self.provider}:{model}"
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_tokens = max_tokens
        import httpx2  # (here, not with the module: a gateway without an LLM never loads it)

        self._client = httpx2.AsyncClient(headers=self._headers(api_key), timeout=timeout)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self._client.aclose()

    def _endpoint(self, base_url: str) -> str:
        raise NotImplementedError

    def _headers(self, api_key: str | None) -> dict[str, str]:
        raise NotImplementedError

    def _body(self, messages: Sequence[ChatMessage], json_schema: Mapping[str, Any] | None) -> dict[str, Any]:
        raise NotImplementedError

    def _text(self, response: httpx2.Response) -> str:
        raise NotImplementedError

    async def complete(self, messages: Sequence[ChatMessage], *, json_schema: Mapping[str, Any] | None = None) -> str:
        import httpx2

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

    def _payload(self, response: httpx2.Response) -> dict[str, Any]:
        """The answer's JSON object; one that is none is a failure."""
        try:
            payload = response.json()
        except ValueError as exc:
            raise self._failure(f"answered no JSON ({type(exc).__name__})", "bad_answer") from None
        if not isinstance(payload, dict):
            raise self._failure("answered JSON that is not an object", "bad_answer")
        return cast(dict[str, Any], payload)


class OpenAICompatibleLLM(ChatOverHTTP):
    """An LLM behind `POST {base_url}/chat/completions` (OpenAI, vLLM, LM Studio, llama.cpp, Ollama's `/v1`)."""

    provider = "openai-compatible"

    def _endpoint(self, base_url: str) -> str:
        return base_url + "/chat/completions"

    def _headers(self, api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def _body(self, messages: Sequence[ChatMessage], json_schema: Mapping[str, Any] | None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": list(messages), "temperature": 0}
        if json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": dict(json_schema), "strict": False},
            }
        return body

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


MAX_TOKENS = 800
"""Enough for a pick of three tools with reasons, or a tool's arguments."""
SAMPLING_TIMEOUT = 60.0
"""Seconds the client's model (and its user, who may be asked to approve) has to answer."""


class SamplingLLM:
    """An `LLMProvider` answered by the client of the request being served."""

    def __init__(self, relay: Relay, *, timeout: float = SAMPLING_TIMEOUT) -> None:
        self.relay = relay
        self.timeout = timeout
        # One client's model is not another's: caches and the rest after a timeout are per client.
        self.name = f"sampling:{id(relay.origin):x}"
        self.model: str | None = None
        """The model the client said answered, once one did."""

    async def complete(self, messages: Sequence[ChatMessage], *, json_schema: Mapping[str, Any] | None = None) -> str:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        if json_schema is not None:
            # Sampling has no structured output: the schema goes into the instructions.
            system += f"\n\nAnswer with JSON only, matching this JSON schema: {json.dumps(json_schema)}"
        params = types.CreateMessageRequestParams(
            messages=[
                types.SamplingMessage(role=m["role"], content=types.TextContent(text=m["content"]))
                for m in messages
                if m["role"] != "system"
            ],
            system_prompt=system or None,
            temperature=0.0,
            max_tokens=MAX_TOKENS,
            include_context="none",
        )
        answer: SamplingResult | None = None
        with anyio.move_on_after(self.timeout):
            answer = await self.relay.sample(params)
        if answer is None:
            raise LLMUnavailable(f"The client's model did not answer within {self.timeout:g} s.", reason="timeout")
        if isinstance(answer, types.ErrorData):
            raise LLMUnavailable(f"The client's model cannot be asked: {answer.message}", reason="refused")
        content = answer.content
        blocks = content if isinstance(content, list) else [content]
        text = "".join(block.text for block in blocks if isinstance(block, types.TextContent)).strip()
        if not text:
            raise LLMUnavailable("The client's model answered without text.", reason="bad_answer")
        self.model = answer.model or None
        return text


Validate = Callable[[dict[str, Any], dict[str, Any]], None]
"""Check arguments (second) against a schema (first); raise `ArgumentValidationError` listing every
violation. The gateway's `ArgumentValidator.validate`, bound to the tool, in the gateway."""

SYSTEM = (
    "You map a user's request to the arguments of one tool. Answer with one JSON object holding the "
    "tool's arguments, matching its input schema, and nothing else. Use only values the request "
    "states or plainly implies, converted to the type and format the schema asks for. Leave out every "
    "argument the request does not give, required ones too: never invent a value."
)


@dataclass(frozen=True)
class LLMMapping:
    """The model's arguments (valid against the schema but for missing required ones), and how they came."""

    arguments: dict[str, Any]
    missing_required: list[str]
    repaired: bool
    """Whether the first answer was invalid and the second, after the violations were shown, was used."""
    model: str


def definition_hash(tool: CatalogTool) -> str:
    """A hash of what the LLM is shown of a tool when mapping its arguments: a cache key that a
    changed definition changes."""
    shown = [tool.server, tool.name, tool.description or "", tool.input_schema]
    return hashlib.sha256(json.dumps(shown, sort_keys=True, default=str).encode()).hexdigest()


def _answer_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The input schema without `required`: the model may leave out what the request does not say."""
    return {key: value for key, value in schema.items() if key != "required"}


def _required(schema: Mapping[str, Any]) -> list[str]:
    required = schema.get("required")
    return [str(name) for name in cast(list[Any], required)] if isinstance(required, list) else []


def _prompt(tool: str, description: str, schema: Mapping[str, Any], request: str, context: str | None) -> str:
    lines = [
        f"Tool: {tool}",
        f"Description: {description or '(none)'}",
        f"Input schema: {json.dumps(schema, ensure_ascii=False)}",
        f"Request: {request}",
    ]
    if context:
        lines.append(f"Context: {context}")
    return "\n".join(lines)


def _check(text: str, schema: dict[str, Any], validate: Validate) -> tuple[dict[str, Any] | None, str]:
    """The answer's arguments if they are valid (else None), and what is wrong with them."""
    try:
        arguments = parse_json_object(text)
    except ValueError as exc:
        return None, f"it is not a JSON object ({exc})"
    try:
        validate(schema, arguments)
    except ArgumentValidationError as exc:
        return None, exc.message
    return arguments, ""


async def map_with_llm(
    llm: LLMProvider,
    request: str,
    *,
    tool: str,
    description: str,
    schema: Mapping[str, Any],
    validate: Validate,
    context: str | None = None,
) -> LLMMapping:
    """Ask `llm` for the arguments `request` gives `tool`; one repair round; `LLMUnavailable` when none are usable."""
    answer_schema = _answer_schema(schema)
    messages: list[ChatMessage] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": _prompt(tool, description, schema, request, context)},
    ]
    text = await llm.complete(messages, json_schema=answer_schema)
    arguments, problem = _check(text, answer_schema, validate)
    repaired = False
    if arguments is None:
        retry = f"That answer cannot be used: {problem} Answer again with only the corrected JSON object."
        messages.append({"role": "assistant", "content": text})
        messages.append({"role": "user", "content": retry})
        text = await llm.complete(messages, json_schema=answer_schema)
        arguments, problem = _check(text, answer_schema, validate)
        if arguments is None:
            raise LLMUnavailable(
                f"The LLM's arguments for {tool} were unusable twice: {problem}", reason="bad_answer", tool=tool
            )
        repaired = True
    missing = [name for name in _required(schema) if name not in arguments]
    return LLMMapping(arguments, missing, repaired, llm.name)
