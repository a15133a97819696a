"""A scripted model for `smart` mode's tests, answering as an LLM would: it reads the selection prompt to
find the number of the tool it picks (so the tests do not depend on the search's ranking), and gives
scripted argument answers to the mapping prompts, in order.

The same model answers over HTTP (`chat`, `anthropic` and `ollama`, `Answer`s for `callback_site`: a
real OpenAI-compatible, Anthropic Messages or Ollama chat endpoint on loopback) and through MCP sampling
(`sample`, an SDK `sampling_callback`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import mcp_types as types

from tests.helpers.chat_site import anthropic_message, completion, ollama_chat
from toolscout.smart.selection import SELECT_SYSTEM

_CANDIDATE = re.compile(r"^(\d+)\. ([^\s(/]+/[^\s(]+)\(", re.MULTILINE)


def candidates(prompt: str) -> dict[str, int]:
    """The candidates a selection prompt lists: `server/tool` -> its number."""
    return {name: int(number) for number, name in _CANDIDATE.findall(prompt)}


def messages_of(body: Any) -> list[dict[str, Any]]:
    """The chat messages of a chat-completions request body."""
    assert isinstance(body, dict)
    messages = cast(dict[str, Any], body)["messages"]
    assert isinstance(messages, list)
    return cast(list[dict[str, Any]], messages)


def is_selection(body: Any) -> bool:
    """Whether a chat-completions request asks for a tool choice (else it asks for arguments)."""
    return messages_of(body)[0] == {"role": "system", "content": SELECT_SYSTEM}


@dataclass
class ScriptedModel:
    """Picks `pick` (`server/tool`; None: says no candidate fits) with `confidence`, then answers each
    argument-mapping request with the next of `mappings` (a JSON object, or raw text), the last repeated."""

    pick: str | None
    confidence: float = 0.9
    mappings: Sequence[dict[str, Any] | str] = ()
    reason: str = "does what is asked"
    model: str = "client-model"
    prompts: list[str] = field(default_factory=list[str])
    """The last user message of every request, in order."""
    selections: int = 0
    mapped: int = 0
    sampled: list[types.CreateMessageRequestParams] = field(default_factory=list[types.CreateMessageRequestParams])

    def answer(self, system: str, prompt: str) -> str:
        """The model's text for a chat whose system prompt is `system` and last user message `prompt`."""
        self.prompts.append(prompt)
        if system.startswith(SELECT_SYSTEM):
            self.selections += 1
            if self.pick is None:
                return json.dumps({"choices": []})
            number = candidates(prompt).get(self.pick)
            assert number is not None, f"{self.pick} is not among the candidates:\n{prompt}"
            choice = {"tool": number, "confidence": self.confidence, "reason": self.reason}
            return json.dumps({"choices": [choice]})
        self.mapped += 1
        assert self.mappings, f"no mapping scripted for:\n{prompt}"
        mapping = self.mappings[min(self.mapped, len(self.mappings)) - 1]
        return mapping if isinstance(mapping, str) else json.dumps(mapping)

    def chat(self, body: Any) -> tuple[int, bytes]:
        """An `Answer` for `callback_site`: the chat completion of a chat-completions request."""
        messages = messages_of(body)
        return completion(self.answer(str(messages[0]["content"]), str(messages[-1]["content"])))

    def anthropic(self, body: Any) -> tuple[int, bytes]:
        """An `Answer` for `callback_site` as Anthropic's Messages API: the system prompt is a field of its own."""
        messages = messages_of(body)
        return anthropic_message(self.answer(str(body["system"]), str(messages[-1]["content"])))

    def ollama(self, body: Any) -> tuple[int, bytes]:
        """An `Answer` for `callback_site` as Ollama's `/api/chat`."""
        messages = messages_of(body)
        return ollama_chat(self.answer(str(messages[0]["content"]), str(messages[-1]["content"])))

    async def sample(self, context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        """A `sampling_callback`: the client's model answers the gateway's question."""
        self.sampled.append(params)
        last = params.messages[-1].content
        assert isinstance(last, types.TextContent)
        text = self.answer(params.system_prompt or "", last.text)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text=text), model=self.model)
