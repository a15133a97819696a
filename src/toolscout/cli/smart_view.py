"""`toolscout smart`'s answers for people, and the exit code each one ends with.

The answer is `smart_tool_discovery`'s structuredContent (spec 004's shapes, modes/smart.py):
the tool ran; it was chosen but could not run (`error`); suggestions; `TOOL_NOT_FOUND`; chosen but not
run for its arguments; or not run until confirmed. What was chosen and why goes to stdout, why
nothing ran to stderr (as `search` says there that it found nothing), with the command to run next.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rich.markup import escape

from toolscout.cli.common import (
    CLI_STEPS,
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_NOT_FOUND,
    EXIT_OK,
    Output,
    exit_code_for,
)
from toolscout.cli.execute_cmd import render_result
from toolscout.errors import error_from_dict

if TYPE_CHECKING:
    import mcp_types as types

    from toolscout.modes.smart import SmartArgs

SOURCES = {
    "rules": "read from the request by the extractor",
    "llm": "mapped from the request by the LLM",
    "given": "given with --arguments",
}
"""Where the arguments came from (`parameter_extraction.source`), in words."""


@dataclass(frozen=True)
class Rerun:
    """How to say `toolscout smart` again for one tool: the request and the options that found the config."""

    request: str
    config: Path | None = None
    demo: bool = False

    def command(self, tool: str, arguments: Mapping[str, Any], *, confirm: bool = False) -> str:
        words = ["toolscout", "smart", self.request, "--tool", tool]
        words += ["--arguments", json.dumps(arguments, ensure_ascii=False, separators=(", ", ": "))]
        if confirm:
            words.append("--confirm")
        if self.config is not None:
            words += ["--config", str(self.config)]
        if self.demo:
            words.append("--demo")
        return shlex.join(words)


def _kind(data: Mapping[str, Any]) -> str:
    """Which answer `data` is: ran, failed, suggestions, not_found, arguments or confirmation."""
    if "suggestions" in data and "tool_name" not in data:
        return "suggestions"
    if "execution_result" in data:
        return "ran"
    if data.get("status") in ("confirmation_required", "declined"):
        return "confirmation"
    if "error" in data:
        return "failed" if "tool_name" in data else "not_found"
    return "arguments"


def exit_code(data: Mapping[str, Any]) -> int:
    """0 ran and succeeded (or ranked suggestions); 3 the tool failed (4 disabled, as `exit_code_for`
    says for an error the gateway reported); 2 no tool good enough; 1 not run for its arguments or
    for want of --confirm."""
    kind = _kind(data)
    if kind == "ran":
        return EXIT_FAILED if cast(dict[str, Any], data["execution_result"]).get("isError") else EXIT_OK
    if kind == "failed":
        return exit_code_for(error_from_dict(cast(dict[str, Any], data["error"])))
    if kind == "not_found":
        return EXIT_NOT_FOUND
    if kind in ("arguments", "confirmation"):
        return EXIT_INVALID
    return EXIT_OK


def show(output: Output, args: SmartArgs, result: types.CallToolResult, rerun: Rerun) -> None:
    """The answer `result` to `args`, for people."""
    data = cast(dict[str, Any], result.structured_content or {})
    kind = _kind(data)
    if kind == "not_found":
        _not_found(output, args.request, cast(dict[str, Any], data["error"]))
    elif kind == "suggestions":
        _suggestions(output, args.request, data, rerun)
    else:
        _choice(output, data)
        if kind == "ran":
            _ran(output, data, result)
        elif kind == "failed":
            _failed(output, data)
        elif kind == "confirmation":
            _confirmation(output, data, rerun)
        else:
            _arguments(output, data, rerun)


def _choice(output: Output, data: Mapping[str, Any]) -> None:
    """`Chose server/tool (hybrid, confidence 0.83)`, the reasoning, any fallback, the arguments."""
    confidence = float(data.get("confidence_score", 0.0))
    output.print(
        f"Chose [bold]{escape(str(data['tool_name']))}[/bold] ({escape(str(data.get('method', '?')))}, "
        f"confidence {confidence:.2f})"
    )
    if data.get("discovery_reasoning"):
        output.print(f"Reasoning: {escape(str(data['discovery_reasoning']))}")
    for fallback in cast(list[str], data.get("fallbacks", [])):
        output.print(f"[yellow]Fallback:[/yellow] {escape(fallback)}")
    extraction = cast(dict[str, Any], data.get("parameter_extraction") or {})
    # (Only an answer for a tool that ran says where its arguments came from; one named with --tool had them given.)
    source = SOURCES.get(str(extraction.get("source", "given" if data.get("method") == "explicit" else "")))
    _parameters(output, cast(dict[str, Any], data.get("parameters") or {}), source)


def _parameters(output: Output, parameters: Mapping[str, Any], source: str | None, indent: str = "") -> None:
    where = f" ({source})" if source else ""
    if not parameters:
        output.print(f"{indent}Arguments{where}: none")
        return
    output.print(f"{indent}Arguments{where}:")
    for name, value in parameters.items():
        output.print(f"{indent}  {escape(name)}: {escape(json.dumps(value, ensure_ascii=False))}")


def _ran(output: Output, data: Mapping[str, Any], result: types.CallToolResult) -> None:
    import mcp_types as types

    execution = cast(dict[str, Any], data["execution_result"])
    failed = bool(execution.get("isError"))
    output.print()
    output.print("[red]✗ Error[/red]\n" if failed else "[green]✓ Success[/green]\n")
    output.print("Result:")
    # The answer's content is its one-line summary, then the tool's own content blocks.
    own = types.CallToolResult(
        content=list(result.content[1:]),
        structured_content=cast(dict[str, Any] | None, execution.get("structuredContent")),
        is_error=failed,
    )
    render_result(output, own)


def _failed(output: Output, data: Mapping[str, Any]) -> None:
    from toolscout.modes.smart import SMART_STEPS

    error = error_from_dict(cast(dict[str, Any], data["error"]))
    # Its message ends with the next step in the words of an agent whose tool is smart_tool_discovery:
    # the terminal gets it in its own (`explain(CLI_STEPS)`).
    step = SMART_STEPS.get(error.next_step) if error.next_step is not None else None
    if step and error.message.endswith(f" {step}"):
        error.message = error.message.removesuffix(f" {step}")
    output.note(f"[red]✗[/red] {escape(error.explain(CLI_STEPS))}")


def _not_found(output: Output, request: str, error: Mapping[str, Any]) -> None:
    details = cast(dict[str, Any], error.get("details") or {})
    output.note(
        f"[red]✗[/red] No tool reached confidence {float(details.get('threshold', 0.0)):.2f} for "
        f"{escape(json.dumps(request, ensure_ascii=False))} (TOOL_NOT_FOUND; {details.get('searched_tools', '?')} "
        f"tools searched, {escape(str(details.get('search_method', '?')))}, the best reached "
        f"{float(details.get('highest_confidence', 0.0)):.2f}). Nothing was run."
    )
    for fallback in cast(list[str], details.get("fallbacks", [])):
        output.note(f"[yellow]Fallback:[/yellow] {escape(fallback)}")
    options = cast(list[dict[str, Any]], error.get("fallback_options") or [])
    if options:
        output.note("Closest:")
        for n, option in enumerate(options, start=1):
            output.note(
                f"  {n}. {escape(str(option['tool_name']))}  {float(option['confidence']):.2f}  "
                f"[dim]{escape(str(option.get('reasoning', '')))}[/dim]"
            )
    hints = [
        "Say more precisely what the tool should do, or add --context.",
        "Favour a tool with --prefer server/tool, or run one with --tool server/tool --arguments JSON.",
    ]
    if options:
        hints.append("Lower the bar with --threshold.")
    for hint in hints:
        output.note(f"  - {hint}")


def _suggestions(output: Output, request: str, data: Mapping[str, Any], rerun: Rerun) -> None:
    entries = cast(list[dict[str, Any]], data["suggestions"])
    output.print(
        f"{len(entries)} tools for {escape(json.dumps(request, ensure_ascii=False))} "
        f"({escape(str(data.get('method', '?')))}), none run:"
    )
    for fallback in cast(list[str], data.get("fallbacks", [])):
        output.print(f"[yellow]Fallback:[/yellow] {escape(fallback)}")
    for n, entry in enumerate(entries, start=1):
        output.print(
            f"\n{n}. [bold]{escape(str(entry['tool_name']))}[/bold]  {float(entry['confidence_score']):.2f}  "
            f"{escape(str(entry['signature']))}"
        )
        if entry.get("summary"):
            output.print(f"   {escape(str(entry['summary']))}")
        output.print(f"   Reasoning: {escape(str(entry.get('reasoning', '')))}")
        arguments = cast(dict[str, Any], entry.get("arguments") or {})
        _parameters(output, arguments, SOURCES["rules"], indent="   ")
        output.print(f"   Run it: {escape(rerun.command(str(entry['tool_name']), arguments))}")


def _arguments(output: Output, data: Mapping[str, Any], rerun: Rerun) -> None:
    extraction = cast(dict[str, Any], data.get("parameter_extraction") or {})
    missing = cast(Sequence[str], extraction.get("missing_required") or [])
    results = cast(dict[str, str], extraction.get("validation_results") or {})
    problems = [f"missing {', '.join(missing)}"] if missing else []
    problems += [f"{name} {verdict}" for name, verdict in results.items() if verdict != "valid"]
    output.note(f"[red]✗[/red] Not run: {escape('; '.join(problems) or 'the arguments are incomplete')}.")
    for hint in cast(list[str], extraction.get("suggestions") or []):
        output.note(f"  - {escape(hint)}")
    tool = str(data["tool_name"])
    arguments = cast(dict[str, Any], extraction.get("extracted_parameters") or {})
    planned = {**arguments, **dict.fromkeys(missing, "…")}
    output.note(f"  Give the complete arguments: {escape(rerun.command(tool, planned))}")


def _confirmation(output: Output, data: Mapping[str, Any], rerun: Rerun) -> None:
    tool = str(data["tool_name"])
    if data.get("status") == "declined":
        output.note(f"[red]✗[/red] Running {escape(tool)} was declined: nothing was run.")
        return
    planned = cast(dict[str, Any], data.get("planned_call") or {})
    arguments = cast(dict[str, Any], planned.get("arguments") or data.get("parameters") or {})
    output.note(f"[yellow]![/yellow] {escape(tool)} can destroy data, so it was not run from plain words.")
    output.note(f"  To run it: {escape(rerun.command(tool, arguments, confirm=True))}")
