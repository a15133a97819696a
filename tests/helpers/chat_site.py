"""Scripted answers of an OpenAI-compatible chat-completions endpoint, for `callback_site` to serve.

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
