"""Arguments from plain words with an LLM: a JSON answer constrained by the tool's schema, checked, repaired once.

spec 004's "Parameter Mapping" asks the model; issue 23 adds that its answer is validated against
the tool's input schema and, when it is not valid, sent back once with the violations. A second
bad answer (or no answer) is an `LLMUnavailable`: the caller falls back to the deterministic
extractor (`extraction.py`). The model may leave out what the request does not state, required
arguments too: those are reported in `missing_required`, never filled in by the gateway.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from toolscout.errors import ArgumentValidationError, LLMUnavailable
from toolscout.smart.llm import ChatMessage, LLMProvider, parse_json_object

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
