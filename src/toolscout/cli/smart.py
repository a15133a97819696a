"""`toolscout smart REQUEST...`: smart mode at the terminal, its answers for people, and `toolscout smart forget`.

The request runs the path of the `smart_tool_discovery` tool (modes/smart.py's
`SmartDiscovery`) over a gateway of the configured servers. Its answer is the tool's
structuredContent (modes/smart.py): the tool ran; it was chosen but could not run
(`error`); suggestions; `TOOL_NOT_FOUND`; chosen but not run for its arguments; or not run until
confirmed. With `--json` it is printed as it is. For people, what was chosen and why goes to
stdout, why nothing ran to stderr (as `search` says there that it found nothing), with the command
to run next; each answer ends with its own exit code.

`forget` is not a Typer subcommand: a group whose callback takes the request's words could not tell
them from a subcommand's name. The command takes the words; the one word `forget`, alone, is the
order to clear what was learnt (a request of one word names no task), and anything longer is a
request, so `toolscout smart forget the draft` asks for a tool as any other request does.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.markup import escape

from toolscout.cli.catalog import StartAllOption, read_args, render_result, stale_note
from toolscout.cli.common import (
    CLI_STEPS,
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_NOT_FOUND,
    EXIT_OK,
    ConfigOption,
    JsonOption,
    Output,
    connected,
    exit_code_for,
    load,
    run,
    stored_lists,
)
from toolscout.config.models import SelectionMode
from toolscout.errors import InvalidArguments, ToolscoutError, error_from_dict

if TYPE_CHECKING:
    import mcp_types as types

    from toolscout.config import GatewayConfig
    from toolscout.modes.smart import SmartArgs


FORGET = "forget"
"""The request that is the order to forget (see the module's doc)."""


def register(app: typer.Typer) -> None:
    app.command()(smart)


def smart(
    request: Annotated[
        list[str],
        typer.Argument(
            metavar="REQUEST...",
            help="What to do, in plain words (several words are joined with spaces; quoting is optional). "
            "The one word `forget` alone clears what smart mode learnt.",
            show_default=False,
        ),
    ],
    context: Annotated[str | None, typer.Option("--context", help="Details that help choose and fill in.")] = None,
    prefer: Annotated[
        list[str] | None,
        typer.Option("--prefer", metavar="TOOL", help="Favour this tool (server/tool); repeat for more."),
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            min=0.0,
            max=1.0,
            help="Run nothing below this confidence (default: smart.confidenceThreshold).",
        ),
    ] = None,
    suggestions: Annotated[
        int, typer.Option("--suggestions", min=1, max=10, help="Above 1: rank this many tools and run none.")
    ] = 1,
    tool: Annotated[
        str | None,
        typer.Option("--tool", metavar="SERVER/TOOL", help="Run this tool: no choosing, no reading of the words."),
    ] = None,
    arguments: Annotated[
        str | None,
        typer.Option("--arguments", help="With --tool: its arguments as JSON, @file.json, or - for stdin."),
    ] = None,
    confirm: Annotated[
        bool, typer.Option("--confirm", help="With --tool: run it even though it may destroy data (destructiveHint).")
    ] = False,
    mode: Annotated[
        SelectionMode | None,
        typer.Option("--mode", help="How to choose the tool (default: smart.toolSelectionMode)."),
    ] = None,
    demo: Annotated[bool, typer.Option("--demo", help="Use the bundled demo servers, not a config file.")] = False,
    refresh: StartAllOption = False,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Do something in plain words: choose the tool, read its arguments from the words, run it.

    Shows the tool chosen and why (method, confidence, reasoning), the arguments and where they came
    from, then the tool's result. With --json: the answer of the smart_tool_discovery tool
    (its structuredContent). Without an `llm:` in the config, it works offline.

    Tools are chosen from the catalog stored when the servers were last listed, as `search` does,
    and only the server of the tool that runs is started (--refresh starts every server and lists
    its tools now). With --tool, only that tool's server is started.

    Exit codes: 0 the tool ran and succeeded (or --suggestions ranked tools); 3 the tool failed or
    its server is unavailable, 4 toolRules disable it; 2 no tool was good enough (TOOL_NOT_FOUND),
    or the server or tool --tool names does not exist; 1 nothing ran for want of arguments
    (missing or invalid) or of --confirm (a destructive tool), or a mistake on the command line.

    `toolscout smart forget`: the one word `forget` alone is not a request but clears what smart
    mode learnt (smart.enableLearning) and says how many requests were forgotten (it takes only
    --config, --demo and --json). A longer request, `toolscout smart forget the draft note`, is
    a request like any other.
    """
    output = Output(as_json)
    if request == [FORGET]:
        given = {
            "--context": context is not None,
            "--prefer": bool(prefer),
            "--threshold": threshold is not None,
            "--suggestions": suggestions != 1,
            "--tool": tool is not None,
            "--arguments": arguments is not None,
            "--confirm": confirm,
            "--mode": mode is not None,
        }
        extra = [name for name, used in given.items() if used]
        if extra:
            output.fail(
                InvalidArguments(
                    f"`toolscout smart forget` clears what smart mode learnt and takes only --config, --demo and "
                    f"--json, not {', '.join(extra)}."
                )
            )
        gateway_config, _ = load(config, output, demo=demo)
        forget(gateway_config, output)
        return
    args = _smart_args(output, " ".join(request), context, prefer, threshold, suggestions, tool, arguments, confirm)
    gateway_config, source = load(config, output, demo=demo)
    smart_config = gateway_config.smart
    if mode is not None:
        smart_config = smart_config.model_copy(update={"tool_selection_mode": mode})

    stored: dict[str, str] = {}
    """The servers whose stored lists the choice was made from (not connected by this command), and when
    those lists were taken."""

    async def body() -> types.CallToolResult:
        from toolscout.modes.smart import SmartDiscovery, llm_source, memory_path
        from toolscout.smart.memory import SmartMemory

        memory = SmartMemory(memory_path(gateway_config) if smart_config.enable_learning else None)
        try:
            only = _tool_server(tool, gateway_config.mcp_servers)
            async with connected(gateway_config, output, only=only, from_stored=not refresh) as gateway:
                discovery = SmartDiscovery(
                    gateway, smart_config, llm=llm_source(gateway_config.llm, smart_config), memory=memory
                )
                # The user at this terminal typed --confirm with --tool: their own answer, as through elicitation.
                answer = await discovery.run(args, user_confirmed=confirm)
                stored.update(stored_lists(gateway))
                return answer
        except ToolscoutError as exc:
            output.fail(exc)

    result = cast("types.CallToolResult", run(body))
    data = cast(dict[str, Any], result.structured_content or {})
    if as_json:
        output.data(data)
    else:
        show(output, args, result, Rerun(args.request, config=source.path if source else None, demo=demo))
        if stored and _kind(data) == "suggestions":
            # What was ranked is what the servers listed when last asked: say so, and how to ask again.
            output.print(stale_note(stored))
        elif stored and _kind(data) == "not_found":
            output.note(stale_note(stored))  # beside the answer, on stderr
    code = exit_code(data)
    if code:
        raise typer.Exit(code)


def _tool_server(tool: str | None, servers: Collection[str]) -> list[str] | None:
    """The configured server `--tool` names (as server/tool or server__tool, as smart mode reads it),
    the only one the command needs; None when there is no --tool or its server is not one of them
    (smart mode then says what is wrong with the name)."""
    for separator in ("/", "__"):
        server, found, name = (tool or "").partition(separator)
        if found and server and name and server in servers:
            return [server]
    return None


def _smart_args(
    output: Output,
    request: str,
    context: str | None,
    prefer: list[str] | None,
    threshold: float | None,
    suggestions: int,
    tool: str | None,
    arguments: str | None,
    confirm: bool,
) -> SmartArgs:
    """The tool's arguments from the command line's, or exit 1 saying what is wrong."""
    from pydantic import ValidationError

    from toolscout.modes.smart import SmartArgs

    try:
        if tool is None and (arguments is not None or confirm):
            which = "--arguments" if arguments is not None else "--confirm"
            raise InvalidArguments(f"{which} goes with --tool (the tool to run, as server/tool).")
        if tool is not None and suggestions > 1:
            raise InvalidArguments("--suggestions ranks tools to choose from; with --tool there is nothing to choose.")
        given = read_args(arguments, "--arguments") if arguments is not None else None
        return SmartArgs.model_validate(
            {
                "request": request,
                "context": context,
                "preferred_tools": prefer or None,
                "confidence_threshold": threshold,
                "max_suggestions": suggestions,
                "tool": tool,
                "arguments": given,
                "confirm": confirm,
            }
        )
    except ToolscoutError as exc:
        output.fail(exc)
    except ValidationError as exc:
        names = {"request": "REQUEST", "context": "--context"}
        problems = [f"{names.get(str(e['loc'][0]), e['loc'][0]) if e['loc'] else ''}: {e['msg']}" for e in exc.errors()]
        output.fail(InvalidArguments(f"Invalid smart request: {'; '.join(problems)}."))


def forget(config: GatewayConfig, output: Output) -> None:
    """Clear what smart mode learnt (`toolscout smart forget`), and say how much that was."""
    from toolscout.modes.smart import memory_path
    from toolscout.smart.memory import SmartMemory

    path: Path = memory_path(config)
    try:
        count = SmartMemory(path).forget()
    except OSError as exc:
        output.fail(ToolscoutError(f"Cannot remove {path}: {exc.strerror or exc}."))
    if output.json_mode:
        output.data({"success": True, "forgotten": count, "path": str(path)})
    else:
        noun = "request" if count == 1 else "requests"
        output.print(f"Forgot {count} learnt {noun} ({escape(str(path))}).")


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
    """Show the choice, `Chose server/tool (hybrid, confidence 0.83)`, the reasoning, any fallback, the arguments."""
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
