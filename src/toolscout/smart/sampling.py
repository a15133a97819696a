"""The calling client's own model as smart mode's LLM, through MCP sampling (opt-in: `smart.sampling`).

Handshake-era clients get a `sampling/createMessage` request; 2026-07-28 clients an input-required
round (serve/rounds.py): either way through the request's relay (`upstream/relay.py`), as an
upstream's own sampling goes. The 2026-07-28 protocol deprecates sampling (SEP-2577), so this path
is opt-in and never the only one: a client that did not declare sampling, declines, or answers with
no text is an `LLMUnavailable`, and smart mode goes on without an LLM.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import mcp_types as types

from toolscout.errors import LLMUnavailable
from toolscout.smart.llm import ChatMessage
from toolscout.upstream.relay import Relay, SamplingResult

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
