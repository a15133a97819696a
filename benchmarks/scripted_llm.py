"""A scripted LLM for the public request set: a real HTTP server on loopback speaking the OpenAI
chat-completions API, whose answers are derived from each request's expected tool and arguments.

One server answers three models, told apart by the path of their base URL:

* `/right/v1`: picks the expected tool when it is among the candidates (confidence 0.9), else says
  no candidate fits; maps the expected arguments (for a request missing a value, those it gives).
* `/wrong/v1`: confidently (0.95) picks the best-listed candidate that is not an expected tool, also
  for a request that no tool should run; maps the expected arguments the wrong tool's schema has.
* `/decline/v1`: says no candidate fits and maps no arguments.

The request is read from the prompt itself (its `Request:` line), so the gateway's own prompts are
what the model answers, with no side channel.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from toolscout.serve.http import bind
from toolscout.smart.selection import SELECT_SYSTEM

MODELS = ("right", "wrong", "decline")
_CANDIDATE = re.compile(r"^(\d+)\. ([^\s(/]+/[^\s(]+)\(", re.MULTILINE)
_REQUEST = re.compile(r"^Request: (.*)$", re.MULTILINE)
_TOOL = re.compile(r"^Tool: (.*)$", re.MULTILINE)
_SCHEMA = re.compile(r"^Input schema: (.*)$", re.MULTILINE)


@dataclass(frozen=True)
class Expected:
    """What the scripted model knows of one request: the tools that do it (`server/tool`, the first
    the main one) with the arguments each takes; empty when no tool should run."""

    tools: tuple[str, ...]
    arguments: Mapping[str, Mapping[str, Any]]


@dataclass
class ScriptedLLM:
    """The running server: its base URL per model, and how many chats each model answered."""

    base: str
    expected: Mapping[str, Expected]
    answered: dict[str, int] = field(default_factory=dict[str, int])

    def url(self, model: str) -> str:
        return f"{self.base}/{model}/v1"

    def answer(self, model: str, messages: list[dict[str, Any]]) -> str:
        """The model's text for a chat (the gateway's selection or argument-mapping prompt)."""
        self.answered[model] = self.answered.get(model, 0) + 1
        first_user = str(messages[1]["content"]) if len(messages) > 1 else ""
        found = _REQUEST.search(first_user)
        expected = self.expected.get(found.group(1) if found else "", Expected((), {}))
        if messages[0].get("content") == SELECT_SYSTEM:
            return json.dumps({"choices": self._choices(model, expected, first_user)})
        return json.dumps(self._arguments(model, expected, first_user))

    @staticmethod
    def _choices(model: str, expected: Expected, prompt: str) -> list[dict[str, Any]]:
        numbers = {name: int(number) for number, name in _CANDIDATE.findall(prompt)}
        if model == "right":
            listed = [numbers[t] for t in expected.tools if t in numbers]
            return [{"tool": listed[0], "confidence": 0.9, "reason": "does what is asked"}] if listed else []
        if model == "wrong":
            others = sorted(n for name, n in numbers.items() if name not in expected.tools)
            return [{"tool": others[0], "confidence": 0.95, "reason": "surely this one"}] if others else []
        return []

    @staticmethod
    def _arguments(model: str, expected: Expected, prompt: str) -> dict[str, Any]:
        tool = _TOOL.search(prompt)
        schema_line = _SCHEMA.search(prompt)
        name = tool.group(1).strip() if tool else ""
        schema = cast(dict[str, Any], json.loads(schema_line.group(1))) if schema_line else {}
        properties = cast(dict[str, Any], schema.get("properties") or {})
        if model == "decline":
            return {}
        same = [q for q in expected.tools if q.split("/", 1)[1] == name]
        if model == "right":
            # The tool's name alone is in the prompt: the files and filesystem servers share some, told
            # apart here by the arguments the schema has.
            for qualified in same:
                arguments = dict(expected.arguments[qualified])
                if set(arguments) <= set(properties):
                    return arguments
            return {}
        main: Mapping[str, Any] = expected.arguments[expected.tools[0]] if expected.tools else {}
        return {key: value for key, value in main.items() if key in properties}


@asynccontextmanager
async def scripted_llm(expected: Mapping[str, Expected]) -> AsyncGenerator[ScriptedLLM]:
    """Serve the scripted models on a free loopback port for the block."""
    sock = bind("127.0.0.1", 0)
    site = ScriptedLLM(f"http://127.0.0.1:{sock.getsockname()[1]}", expected)

    async def completions(request: Request) -> Response:
        model = request.path_params["model"]
        if model not in MODELS:
            return JSONResponse({"error": {"message": f"no model {model!r}"}}, status_code=404)
        body = cast(dict[str, Any], json.loads(await request.body()))
        content = site.answer(model, cast(list[dict[str, Any]], body["messages"]))
        message = {"role": "assistant", "content": content}
        return JSONResponse(
            {
                "id": "chatcmpl-scripted",
                "object": "chat.completion",
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }
        )

    app = Starlette(routes=[Route("/{model}/v1/chat/completions", completions, methods=["POST"])])
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))

    async def serve() -> None:
        await web.serve(sockets=[sock])

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            try:
                yield site
            finally:
                web.should_exit = True
    finally:
        sock.close()
