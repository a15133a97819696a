"""`toolscout smart REQUEST...`: smart mode at the terminal, and `toolscout smart forget`.

The request runs the path of the `smart_tool_discovery` tool (modes/smart.py's
`SmartDiscovery`) over a gateway of the configured servers, and the answer (spec 004's shapes,
modes/smart.py) is shown for people (cli/smart_view.py) or, with `--json`, printed as the
tool's structuredContent.

`forget` is not a Typer subcommand: a group whose callback takes the request's words could not tell
them from a subcommand's name. The command takes the words; the one word `forget`, alone, is the
order to clear what was learnt (a request of one word names no task), and anything longer is a
request, so `toolscout smart forget the draft` asks for a tool as any other request does.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from toolscout.cli.common import ConfigOption, JsonOption, Output, connected, load, run
from toolscout.config.models import SelectionMode
from toolscout.errors import InvalidArguments, ToolscoutError

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
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Do something in plain words: choose the tool, read its arguments from the words, run it.

    Shows the tool chosen and why (method, confidence, reasoning), the arguments and where they came
    from, then the tool's result. With --json: the answer of the smart_tool_discovery tool
    (its structuredContent). Without an `llm:` in the config, it works offline.

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

    async def body() -> types.CallToolResult:
        from toolscout.modes.smart import SmartDiscovery, llm_source, memory_path
        from toolscout.smart.memory import SmartMemory

        memory = SmartMemory(memory_path(gateway_config) if smart_config.enable_learning else None)
        try:
            async with connected(gateway_config, output) as gateway:
                discovery = SmartDiscovery(
                    gateway, smart_config, llm=llm_source(gateway_config.llm, smart_config), memory=memory
                )
                # The user at this terminal typed --confirm with --tool: their own answer, as through elicitation.
                return await discovery.run(args, user_confirmed=confirm)
        except ToolscoutError as exc:
            output.fail(exc)

    result = cast("types.CallToolResult", run(body))
    from toolscout.cli.smart_view import Rerun, exit_code, show

    data = cast(dict[str, Any], result.structured_content or {})
    if as_json:
        output.data(data)
    else:
        show(output, args, result, Rerun(args.request, config=source.path if source else None, demo=demo))
    code = exit_code(data)
    if code:
        raise typer.Exit(code)


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

    from toolscout.cli.execute_cmd import read_args
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
    """`toolscout smart forget`: clear what smart mode learnt, and say how much that was."""
    from rich.markup import escape

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
