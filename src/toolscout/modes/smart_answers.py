"""The answers of `smart_tool_discovery` in spec 004's shapes: structuredContent for programs, short text
for the model.

* ran: `discovery_reasoning`, `confidence_score`, `tool_name` (`server/tool`), `parameters`,
  `execution_result` (the upstream's own content, structuredContent and isError) and
  `parameter_extraction`; the text is one line, then the upstream's own content blocks.
* suggestions (`max_suggestions` > 1): ranked `suggestions`, each with its confidence, reasoning,
  signature and the arguments read from the request, ready for a call with `tool` and `arguments`.
* not run for its arguments: `parameter_extraction` with `extracted_parameters`,
  `validation_results`, `missing_required` and `suggestions`.
* not run for want of a good enough tool: the spec's `TOOL_NOT_FOUND` with `details`,
  `suggestions` and `fallback_options`.
* not run until confirmed (a destructive tool): `confirmation_required` with the planned call and the
  `confirmation_id` that runs it once (modes/smart_confirm.py), or `declined` by the user.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from toolscout.errors import Phrasing, ToolscoutError
from toolscout.render.signatures import call_signature
from toolscout.smart.selection import Choice

SMART_STEPS: Phrasing = {
    "find_tool": "Call smart_tool_discovery with what you want done, or with max_suggestions to see the tools.",
    "list_servers": "Call smart_tool_discovery with max_suggestions to see which servers' tools fit.",
    "tool_details": "Call smart_tool_discovery with max_suggestions for the tool's signature, then retry.",
}
"""The next steps for an agent whose one tool is smart_tool_discovery."""

TEXT_ARGUMENTS_CHARS = 300
"""The planned arguments in an answer's text are cut here (the whole is in structuredContent)."""


@dataclass
class Decision:
    """How the tools were ranked: the method that decided, and any fallback (the chosen tool's
    confidence and reasoning are its `Choice`'s)."""

    method: str
    fallbacks: list[str] = field(default_factory=list[str])
    """What could not be used, and why ("llm: timeout"): the method that decided is the next one."""


def json_text(arguments: Mapping[str, Any]) -> str:
    """Arguments as compact JSON, cut at `TEXT_ARGUMENTS_CHARS` (for the text; the whole is in structuredContent)."""
    text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= TEXT_ARGUMENTS_CHARS else text[: TEXT_ARGUMENTS_CHARS - 1] + "…"


def _head(choice: Choice, decision: Decision, include_reasoning: bool) -> dict[str, Any]:
    data: dict[str, Any] = {"method": decision.method, "confidence_score": choice.confidence}
    if include_reasoning:
        data["discovery_reasoning"] = choice.reasoning
    if decision.fallbacks:
        data["fallbacks"] = decision.fallbacks
    return data


def extraction_block(
    status: str,
    extracted: Mapping[str, Any],
    *,
    missing: Sequence[str] = (),
    violations: Sequence[Mapping[str, Any]] = (),
    hints: Sequence[str] = (),
) -> dict[str, Any]:
    """spec 004's `parameter_extraction`: each argument `valid` or `invalid - why`, what is missing."""
    results: dict[str, str] = dict.fromkeys(extracted, "valid")
    for violation in violations:
        path = str(violation.get("path", "$"))
        name = path.removeprefix("$").lstrip(".").split(".")[0].split("[")[0] or "$"
        results[name] = f"invalid - {violation.get('message', 'does not match the schema')}"
    return {
        "status": status,
        "extracted_parameters": dict(extracted),
        "validation_results": results,
        "missing_required": list(missing),
        "suggestions": list(hints),
    }


def ran(
    choice: Choice,
    decision: Decision,
    arguments: Mapping[str, Any],
    result: types.CallToolResult,
    extraction: Mapping[str, Any],
    *,
    include_reasoning: bool,
) -> types.CallToolResult:
    """The tool ran: its own result passed through, with how it was chosen."""
    data: dict[str, Any] = {
        "success": not result.is_error,
        **_head(choice, decision, include_reasoning),
        "tool_name": choice.qualified,
        "parameters": dict(arguments),
        "execution_result": {
            "content": [block.model_dump(by_alias=True, exclude_none=True) for block in result.content],
            **({"structuredContent": result.structured_content} if result.structured_content is not None else {}),
            "isError": bool(result.is_error),
        },
        "parameter_extraction": dict(extraction),
    }
    line = f"Ran {choice.qualified}({json_text(arguments)}) [{decision.method}, confidence {choice.confidence:.2f}]"
    return types.CallToolResult(
        content=[types.TextContent(text=line + (":" if result.content else ".")), *result.content],
        structured_content=data,
        is_error=result.is_error,
    )


def failed(
    choice: Choice, decision: Decision, arguments: Mapping[str, Any], error: ToolscoutError, *, include_reasoning: bool
) -> types.CallToolResult:
    """The chosen tool could not be run (its server down, the call failed): the error, with the choice."""
    data: dict[str, Any] = {
        "success": False,
        **_head(choice, decision, include_reasoning),
        "tool_name": choice.qualified,
        "parameters": dict(arguments),
        "error": error.to_dict(SMART_STEPS),
    }
    text = (
        f"Chose {choice.qualified}({json_text(arguments)}), but it failed: {error.code}: {error.explain(SMART_STEPS)}"
    )
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data, is_error=True)


def suggestions(
    choices: Sequence[Choice], extracted: Sequence[Mapping[str, Any]], decision: Decision
) -> types.CallToolResult:
    """`max_suggestions` > 1: the ranked tools, none run, each ready to be called with `tool` and `arguments`."""
    entries = [
        {
            "tool_name": choice.qualified,
            "confidence_score": round(choice.confidence, 4),
            "reasoning": choice.why or choice.reasoning,
            "signature": call_signature(choice.tool.name, choice.tool.input_schema, max_description_len=0),
            "arguments": dict(arguments),
            **({"summary": choice.tool.summary} if choice.tool.summary else {}),
        }
        for choice, arguments in zip(choices, extracted, strict=True)
    ]
    data: dict[str, Any] = {"success": True, "method": decision.method, "suggestions": entries}
    if decision.fallbacks:
        data["fallbacks"] = decision.fallbacks
    lines = [f"{len(entries)} tools, none run; call again with tool and arguments to run one:"]
    lines += [
        f"{n}. {e['tool_name']} {e['confidence_score']:.2f} {e['signature']}" for n, e in enumerate(entries, start=1)
    ]
    return types.CallToolResult(content=[types.TextContent(text="\n".join(lines))], structured_content=data)


def not_found(
    request: str,
    choices: Sequence[Choice],
    decision: Decision,
    *,
    threshold: float,
    searched: int,
    include_details: bool,
) -> types.CallToolResult:
    """spec 004's `TOOL_NOT_FOUND`: no tool reached the threshold; the closest ones as fallback options."""
    best = choices[0].confidence if choices else 0.0
    options = [
        {"tool_name": c.qualified, "confidence": round(c.confidence, 4), "reasoning": c.why or c.reasoning}
        for c in choices[:3]
    ]
    hints = [
        "Say more precisely what the tool should do, or give context.",
        "Name the tool in preferred_tools, or call again with tool and arguments.",
    ]
    if choices:
        hints.append(f"Lower confidence_threshold (now {threshold:.2f}; the best reached {best:.2f}).")
    details: dict[str, Any] = {
        "search_method": decision.method,
        "searched_tools": searched,
        "highest_confidence": round(best, 4),
        "threshold": threshold,
    }
    if decision.fallbacks:
        details["fallbacks"] = decision.fallbacks
    if include_details:
        details["scores"] = {c.qualified: c.scores for c in choices[:3]}
    error = {
        "code": "TOOL_NOT_FOUND",
        "message": "No suitable tool found for request",
        "details": details,
        "suggestions": hints,
        "fallback_options": options,
    }
    closest = ", ".join(f"{o['tool_name']} {o['confidence']:.2f}" for o in options) or "none"
    text = (
        f"TOOL_NOT_FOUND: no tool reached confidence {threshold:.2f} for {request[:80]!r} "
        f"({searched} searched). Closest: {closest}. Nothing was run. {hints[1]}"
    )
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content={"success": False, "error": error}, is_error=True
    )


def not_run_for_arguments(
    choice: Choice, decision: Decision, extraction: Mapping[str, Any], *, include_reasoning: bool
) -> types.CallToolResult:
    """The tool is chosen but its arguments are incomplete or invalid: nothing ran."""
    data: dict[str, Any] = {
        "success": False,
        **_head(choice, decision, include_reasoning),
        "tool_name": choice.qualified,
        "parameters": extraction["extracted_parameters"],
        "parameter_extraction": dict(extraction),
    }
    problems = [f"missing {', '.join(extraction['missing_required'])}"] if extraction["missing_required"] else []
    problems += [f"{k} {v}" for k, v in extraction["validation_results"].items() if v != "valid"]
    text = (
        f"Chose {choice.qualified} [{decision.method}, confidence {choice.confidence:.2f}] but did not run it: "
        f"{'; '.join(problems)}. Signature: {call_signature(choice.tool.name, choice.tool.input_schema)}. "
        f"Call again with tool={choice.qualified!r} and the complete arguments."
    )
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data, is_error=True)


def confirmation_required(
    choice: Choice,
    decision: Decision,
    arguments: Mapping[str, Any],
    *,
    declined: bool,
    confirmation_id: str | None,
    expires_in: float,
    problem: str,
    include_reasoning: bool,
) -> types.CallToolResult:
    """A destructive tool, not run: the planned call with the confirmation id that runs it once (or the
    user said no: no id). `problem`: what was wrong with the call's own confirmation ("" for none)."""
    status = "declined" if declined else "confirmation_required"
    data: dict[str, Any] = {
        "success": False,
        "status": status,
        **_head(choice, decision, include_reasoning),
        "tool_name": choice.qualified,
        "parameters": dict(arguments),
    }
    if problem:
        data["confirmation_problem"] = problem
    if declined:
        text = f"The user declined running {choice.qualified}({json_text(arguments)}): nothing was run."
    else:
        planned = {"tool": choice.qualified, "arguments": dict(arguments), "confirm": True}
        data["planned_call"] = {**planned, "confirmation_id": confirmation_id}
        data["confirmation_expires_in"] = expires_in
        why = f"Not run: {problem}. " if problem else ""
        text = (
            f"{why}{choice.qualified} can destroy data, so it was not run. Ask the user; if they want it, call again "
            f"within {expires_in:g}s with tool={choice.qualified!r}, arguments={json_text(arguments)}, confirm=true "
            f"and confirmation_id={confirmation_id!r} (good once, for exactly this call)."
        )
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data)
