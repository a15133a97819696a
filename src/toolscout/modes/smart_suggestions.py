"""What smart mode offers when it runs nothing: ranked suggestions (`max_suggestions` > 1), and the
fallbacks of a `TOOL_NOT_FOUND` answer (the closest tools, then the best of the request's category).

`suggestions` answers `{"success": true, "result": {"suggestions": [...]}}`, each tool with its
confidence, reasoning, signature and the arguments read from the request (by the LLM when one maps
them), ready for a call with `tool` and `arguments`. `not_found` answers `TOOL_NOT_FOUND` with
`details`, `suggestions` (what to try) and `fallback_options`; `category_fallback` finds the tools
of the category the request's words point at (smart/categories.py) for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

import mcp_types as types

from toolscout.catalog import CatalogTool
from toolscout.config.models import SmartFallbackConfig
from toolscout.render.signatures import call_signature
from toolscout.smart.categories import Ranked, best_of_category, request_category

if TYPE_CHECKING:
    from toolscout.smart.selection import Choice


class Decision(Protocol):
    """How the tools were ranked (smart mode's `Decision`): the method that decided, and the fallbacks."""

    method: str
    fallbacks: list[str]


TEXT_ARGUMENTS_CHARS = 300
"""The planned arguments in an answer's text are cut here (the whole is in structuredContent)."""


def json_text(arguments: Mapping[str, Any]) -> str:
    """Arguments as compact JSON, cut at `TEXT_ARGUMENTS_CHARS` (for the text; the whole is in structuredContent)."""
    text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= TEXT_ARGUMENTS_CHARS else text[: TEXT_ARGUMENTS_CHARS - 1] + "…"


CONFIRM_ARGUMENTS_CHARS = 4000
"""The most characters of arguments a confirmation shows: all of them, or the user is not asked at all (a
question the user cannot read whole is no confirmation)."""


def confirmation_question(
    qualified: str, arguments: Mapping[str, Any], schema: Mapping[str, Any] | None = None
) -> str | None:
    """What the user is asked before `qualified` runs: every argument, in the order of `schema`'s
    `properties` and then the rest, as JSON (so no value can pass for another line); None when that
    is over `CONFIRM_ARGUMENTS_CHARS`."""
    properties = (schema or {}).get("properties")
    order = list(cast(Mapping[str, Any], properties)) if isinstance(properties, Mapping) else []
    ordered = {key: arguments[key] for key in order if key in arguments}
    ordered.update({key: value for key, value in arguments.items() if key not in ordered})
    text = json.dumps(ordered, ensure_ascii=False, indent=2, default=str)
    if len(text) > CONFIRM_ARGUMENTS_CHARS:
        return None
    return f"Run {qualified}? It may destroy data. Its arguments, all of them:\n{text}"


def suggestions(
    choices: Sequence[Choice],
    mapped: Sequence[tuple[Mapping[str, Any], str, Sequence[str]]],
    decision: Decision,
    *,
    include_reasoning: bool = True,
) -> types.CallToolResult:
    """Return the ranked tools (`max_suggestions` > 1) as `result.suggestions`, none run, each with the
    arguments read from the request (`mapped`: arguments, who read them, what is missing), ready to call
    with `tool` and `arguments`."""
    entries: list[dict[str, Any]] = []
    for choice, (arguments, source, missing) in zip(choices, mapped, strict=True):
        entry: dict[str, Any] = {"tool_name": choice.qualified, "confidence_score": round(choice.confidence, 4)}
        if include_reasoning:
            entry["reasoning"] = choice.why or choice.reasoning
        entry["signature"] = call_signature(choice.tool.name, choice.tool.input_schema, max_description_len=0)
        entry["arguments"] = dict(arguments)
        entry["arguments_source"] = source
        if missing:
            entry["missing_required"] = list(missing)
        if choice.tool.summary:
            entry["summary"] = choice.tool.summary
        entries.append(entry)
    # `suggestions` at the top level too: the same list where answers before `result` had it.
    data: dict[str, Any] = {
        "success": True,
        "method": decision.method,
        "result": {"suggestions": entries},
        "suggestions": entries,
    }
    if decision.fallbacks:
        data["fallbacks"] = decision.fallbacks
    lines = [f"{len(entries)} tools, none run; call again with tool and arguments to run one:"]
    lines += [
        f"{n}. {e['tool_name']} {e['confidence_score']:.2f} {e['signature']} arguments={json_text(e['arguments'])}"
        for n, e in enumerate(entries, start=1)
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
    fallback: SmartFallbackConfig | None = None,
    category: Mapping[str, Any] | None = None,
) -> types.CallToolResult:
    """Return `TOOL_NOT_FOUND`: no tool reached the threshold, so the closest ones come as fallback options
    (`fallback.keyword`), then the best of the category the request's words point at (`category`)."""
    fallback = fallback or SmartFallbackConfig()
    best = choices[0].confidence if choices else 0.0
    keyword: Sequence[Choice] = choices[: fallback.max_suggestions] if fallback.enabled and fallback.keyword else ()
    options: list[dict[str, Any]] = [
        {
            "tool_name": c.qualified,
            "confidence": round(c.confidence, 4),
            "reasoning": c.why or c.reasoning,
            "source": "keyword",
        }
        for c in keyword
    ]
    if category is not None:
        listed = {o["tool_name"] for o in options}
        tools = cast(list[dict[str, Any]], category["tools"])
        options += [{**t, "source": "category"} for t in tools if t["tool_name"] not in listed]
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
    closest = ", ".join(f"{o['tool_name']} {o['confidence']:.2f}" for o in options if o["source"] == "keyword")
    kind = ""
    if category is not None:
        error["category_fallback"] = dict(category)
        names = ", ".join(str(t["tool_name"]) for t in cast(list[dict[str, Any]], category["tools"]))
        kind = f" Best {category['category']} tools: {names}."
    text = (
        f"TOOL_NOT_FOUND: no tool reached confidence {threshold:.2f} for {request[:80]!r} "
        f"({searched} searched). Closest: {closest or 'none'}.{kind} Nothing was run. {hints[1]}"
    )
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content={"success": False, "error": error}, is_error=True
    )


def category_fallback(
    request: str, choices: Sequence[Choice], catalog: Sequence[CatalogTool], fallback: SmartFallbackConfig
) -> dict[str, Any] | None:
    """The best tools (of `catalog`, the ranked `choices` first) of the category the request's words
    point at, as `TOOL_NOT_FOUND`'s `category_fallback` (None: turned off, no category, or none of it)."""
    if not (fallback.enabled and fallback.category):
        return None
    category = request_category(request)
    if category is None:
        return None
    ranked = [Ranked(c.tool, c.confidence, c.why or c.reasoning) for c in choices]
    best = best_of_category(category, ranked, catalog, limit=fallback.max_suggestions)
    if not best:
        return None
    return {
        "category": category.name,
        "matched_words": list(category.words),
        "tools": [
            {
                "tool_name": f"{r.tool.server}/{r.tool.name}",
                "confidence": round(r.confidence, 4),
                "reasoning": r.reasoning,
            }
            for r in best
        ],
    }
