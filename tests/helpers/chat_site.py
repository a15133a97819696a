"""Scripted answers of an LLM's chat API, for `callback_site` to serve: OpenAI-compatible chat
completions, Anthropic's Messages API and Ollama's `/api/chat`.

The LLM is the one outside party the tests cannot run: a real HTTP server on loopback answers in
its place, each answer written by the test (a JSON object, malformed text, a refusal, an error).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

Answer = Callable[[Any], tuple[int, bytes]]


def completion(content: str | None, *, refusal: str | None = None, finish: str = "stop") -> tuple[int, bytes]:
    """A 200 chat completion whose first choice says `content` (or refuses)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if refusal is not None:
        message["refusal"] = refusal
    body = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    return 200, json.dumps(body).encode()


def json_completion(arguments: dict[str, Any]) -> tuple[int, bytes]:
    """A completion whose text is `arguments` as JSON."""
    return completion(json.dumps(arguments))


def scripted(answers: Sequence[tuple[int, bytes]]) -> Answer:
    """Each request gets the next answer; after the last, the last again."""
    given = 0

    def answer(_body: Any) -> tuple[int, bytes]:
        nonlocal given
        given += 1
        return answers[min(given, len(answers)) - 1]

    return answer


def anthropic_message(text: str | None, *, stop_reason: str = "end_turn") -> tuple[int, bytes]:
    """A 200 answer of Anthropic's Messages API whose one text block says `text` (none: no blocks)."""
    content = [] if text is None else [{"type": "text", "text": text}]
    body = {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    return 200, json.dumps(body).encode()


def ollama_chat(text: str | None) -> tuple[int, bytes]:
    """A 200 answer of Ollama's `/api/chat` (not streamed) whose message says `text`."""
    body = {"model": "m", "message": {"role": "assistant", "content": text}, "done": True}
    return 200, json.dumps(body).encode()
