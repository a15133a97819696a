"""Scripted answers of the model APIs a program's agent loop calls, with tool calls in them, for
`callback_site` to serve: Anthropic's Messages API (`tool_use` blocks), OpenAI's Responses API
(`function_call` and `tool_search_call` items) and Chat Completions (`tool_calls`); and `conforms`,
which checks a value against one of the official packages' TypedDicts, all of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, cast

from pydantic import TypeAdapter


def _whole(value: Any) -> Any:
    """`value` as validated, its lazily validated iterables (`Iterable[...]` fields) consumed, which
    validates their items."""
    if isinstance(value, dict):
        return {key: _whole(item) for key, item in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list | tuple | Iterator):
        return [_whole(item) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def plain(value: Any) -> dict[str, Any]:
    """A TypedDict the helpers made, read as the plain dict it is."""
    return cast(dict[str, Any], value)


def conforms(kind: Any, value: Any) -> None:
    """Assert that `value` is a valid `kind` (a TypedDict of the `anthropic` or `openai` package):
    every nested item validated, and nothing in it the type does not know (pydantic drops unknown
    keys, so the validated value would differ)."""
    adapter = TypeAdapter[Any](kind)  # kept while its lazy iterables are consumed: they refer to its definitions
    validated = _whole(adapter.validate_python(value))
    assert validated == _whole(value), (validated, value)


def anthropic_tool_use(*uses: tuple[str, str, dict[str, Any]]) -> tuple[int, bytes]:
    """A 200 Messages API answer asking for tools: `(id, name, input)` per `tool_use` block."""
    content = [{"type": "tool_use", "id": id_, "name": name, "input": input_} for id_, name, input_ in uses]
    body: dict[str, Any] = {
        "id": "msg_tools",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": "Let me look."}, *content],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    return 200, json.dumps(body).encode()


def responses_output(*items: dict[str, Any]) -> tuple[int, bytes]:
    """A 200 Responses API answer whose `output` is `items`."""
    body: dict[str, Any] = {
        "id": "resp_test",
        "object": "response",
        "created_at": 0,
        "model": "gpt-test",
        "status": "completed",
        "output": list(items),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
    }
    return 200, json.dumps(body).encode()


def function_call(call_id: str, name: str, arguments: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    """A `function_call` output item (its arguments as JSON text, as the API sends them)."""
    item = {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name}
    return (
        item
        | {"arguments": json.dumps(arguments), "status": "completed"}
        | ({"namespace": namespace} if namespace else {})
    )


def tool_search_call(call_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A client-executed `tool_search_call` output item."""
    return {
        "type": "tool_search_call",
        "id": f"ts_{call_id}",
        "call_id": call_id,
        "execution": "client",
        "arguments": arguments,
        "status": "completed",
    }


def output_text(text: str) -> dict[str, Any]:
    """An assistant `message` output item saying `text`."""
    return {
        "type": "message",
        "id": "msg_done",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def chat_tool_calls(*calls: tuple[str, str, dict[str, Any]]) -> tuple[int, bytes]:
    """A 200 chat completion asking for tools: `(id, name, arguments)` per tool call."""
    tool_calls = [
        {"id": id_, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        for id_, name, arguments in calls
    ]
    body = {
        "id": "chatcmpl-tools",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": tool_calls},
                "finish_reason": "tool_calls",
            }
        ],
    }
    return 200, json.dumps(body).encode()
