"""The catalog commands: `list`, `search`, `tools`, `inspect`, `execute` and `tokens`.

They are the commands cli/__init__.py loads without the set-up commands, registered in the order
`toolscout --help` lists them. The first four read the catalog (cli/answers.py says from where);
`execute` runs one tool, through a running `serve` of the config or a connection of its own; and
`tokens` measures what the catalog costs an agent, exposed directly and through toolscout's modes.

Each command imports cli/answers.py when it runs, not when it is registered: every command of the
command line is registered beside these, and the catalog's models would be a third of the start of
one that never reads the catalog (`config validate`, `rules status`).
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, cast

import typer
from rich.markup import escape
from rich.table import Table

from toolscout.cli.common import (
    CLI_STEPS,
    EXIT_FAILED,
    EXIT_NO_RESULTS,
    ConfigOption,
    JsonOption,
    Output,
    ToolNameArgument,
    ToolOfServerArgument,
    connected,
    exit_code_for,
    load,
    named_tool,
    run,
    stored_lists,
)
from toolscout.errors import InvalidArguments, ToolExecutionError, ToolscoutError
from toolscout.naming import tool_label
from toolscout.render.examples import tool_examples
from toolscout.render.text import counted, hint_labels

if TYPE_CHECKING:
    import mcp_types as types

    from toolscout.cli.streaming import Notices
    from toolscout.gateway.core import Gateway
    from toolscout.gateway.explain import ExplainedHit

_STATUS_MARK = {
    "connected": "[green]✓[/green]",
    "error": "[red]✗[/red]",
    "disconnected": "[red]✗[/red]",
    "needs-login": "[yellow]![/yellow]",
    "disabled": "[dim]-[/dim]",
}
_STATUS_TEXT = {"idle": "Not connected", "connecting": "Connecting", "needs-login": "Needs login"}

RefreshOption = Annotated[
    bool,
    typer.Option(
        "--refresh",
        help="Connect to the servers and list their tools now, instead of answering from the catalog "
        "stored when they were last listed (a running `toolscout serve` of this config answers live anyway).",
    ),
]

StartAllOption = Annotated[
    bool,
    typer.Option(
        "--refresh",
        help="Start every server and list its tools now, instead of using the catalog stored when they were "
        "last listed.",
    ),
]


def register(app: typer.Typer) -> None:
    app.command("list")(list_servers)
    app.command()(search)
    app.command()(tools)
    app.command()(inspect)
    app.command()(execute)
    app.command()(tokens)


def ago(timestamp: float, now: float | None = None) -> str:
    """How long ago a moment was, for people: `just now`, `12 min ago`, `3 h ago`, `2 days ago`."""
    seconds = max(0.0, (time.time() if now is None else now) - timestamp)
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 2 * 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} days ago"


def _age(iso: str) -> str:
    from datetime import datetime

    return ago(datetime.fromisoformat(iso).timestamp())


def stale_note(cached: dict[str, str]) -> str:
    """Return the note under stored answers, such as
    `[dim](units, notes: as listed 12 min ago; --refresh asks the servers)[/dim]`."""
    by_age: dict[str, list[str]] = {}
    for server, iso in cached.items():
        by_age.setdefault(_age(iso), []).append(server)
    parts = "; ".join(f"{escape(', '.join(names))}: as listed {age}" for age, names in by_age.items())
    them = "the server" if len(cached) == 1 else "the servers"
    return f"[dim]({parts}, from the stored catalog; --refresh asks {them})[/dim]"


def list_servers(
    config: ConfigOption = None,
    status: Annotated[bool, typer.Option("--status", help="Show how each server is connected, and why not.")] = False,
    show_tools: Annotated[bool, typer.Option("--tools", help="List each server's enabled tools.")] = False,
    refresh: RefreshOption = False,
    as_json: JsonOption = False,
) -> None:
    """List the configured servers with their status and tool counts (exit 3 when one is in error,
    unless the config's `cli.exitCodes` is `spec`)."""
    from toolscout.cli.answers import answers

    output = Output(as_json)
    gateway_config, source = load(config, output)

    async def body() -> None:
        try:
            async with answers(gateway_config, source and source.path, output, refresh=refresh) as found:
                rows = await found.servers()
        except ToolscoutError as exc:
            output.fail(exc)
        if as_json:
            output.data({"servers": rows})
        elif not rows:
            where = escape(str(source.path)) if source is not None else "the configuration"
            output.print(
                f"No MCP servers are configured in {where}. `toolscout init` imports the ones your MCP "
                'clients use, `toolscout config import --file FILE` those of a file; or add them under "mcpServers".'
            )
        else:
            _print_servers(output, rows, status=status, show_tools=show_tools)
        # (The spec's codes for `list` have none for a server in error: its row says so.)
        failing = ("error", "disconnected", "needs-login")
        if output.exit_codes == "toolscout" and any(row["status"] in failing for row in rows):
            raise typer.Exit(EXIT_FAILED)

    run(body)


def _print_servers(output: Output, rows: list[dict[str, Any]], *, status: bool, show_tools: bool) -> None:
    output.print(f"MCP Servers ({len(rows)} configured):")
    for row in rows:
        notes = [f"{row['enabledCount']} tools"]
        if row["toolCount"] != row["enabledCount"]:
            notes.append(f"{row['toolCount'] - row['enabledCount']} disabled")
        if row.get("hiddenCount"):
            notes.append(f"{row['hiddenCount']} hidden from listings")
        counts = f" ({', '.join(notes)})"
        output.print(f"\n{_STATUS_MARK.get(row['status'], '·')} [bold]{escape(row['name'])}[/bold]{counts}")
        if row["description"]:
            output.print(f"  {escape(row['description'])}")
        state: str = _STATUS_TEXT.get(row["status"]) or str(row["status"]).capitalize()
        if "error" in row:
            state += f" — {escape(row['error'])}"
        if "failedAt" in row:
            state += f" ({_age(row['failedAt'])}; --refresh tries again)"
        if row.get("stale"):
            listed = f"tools as listed {_age(row['cachedAt'])}"
            state += f" — {listed} (--refresh connects)" if row["status"] == "idle" else f"; {listed}"
        output.print(f"  Status: {state}")
        if status and "serverInfo" in row:
            info = row["serverInfo"]
            how = f", {escape(row['transport'])}" if "transport" in row else ""
            output.print(
                f"  Server: {escape(info.get('name', '?'))} {escape(info.get('version', ''))}, "
                f"protocol {row['protocolVersion']}{how}"
            )
        if show_tools and row["tools"]:
            output.print("  Tools: " + escape(", ".join(row["tools"])))


def search(
    query: Annotated[str, typer.Argument(help="What you want to do, in plain words.")],
    config: ConfigOption = None,
    server: Annotated[str | None, typer.Option(help="Only search this server.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=100, help="Max results.")] = 10,
    min_relevance: Annotated[
        float | None,
        typer.Option(
            "--min-relevance",
            min=0.0,
            max=1.0,
            help="Leave out results below this relevance (0-1; 0 shows every match). Default: the config's "
            "search.minRelevance.",
        ),
    ] = None,
    refresh: RefreshOption = False,
    include_disabled: Annotated[
        bool, typer.Option("--all", help="Include the tools toolRules disable (marked disabled).")
    ] = False,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="Show what each ranker added to each result: lexical (BM25), names, embeddings, the "
            "learned ranker when on, the fused score, and smart mode's scores when it is on.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Search tools across all servers (exit 2 when nothing matches)."""
    from toolscout.cli.answers import META_SEARCH_LIMIT, ViewAnswers, answers

    output = Output(as_json)
    gateway_config, source = load(config, output)

    async def body() -> None:
        parts: list[ExplainedHit] = []
        try:
            async with answers(
                gateway_config,
                source and source.path,
                output,
                [server] if server else None,
                refresh=refresh,
                retry_failed=server is not None,
                # The parts are the catalog view's own: a running serve's meta-tools do not say them.
                serve_can_answer=limit <= META_SEARCH_LIMIT and not explain,
            ) as found:
                results = await found.search(
                    query, server=server, limit=limit, min_relevance=min_relevance, include_disabled=include_disabled
                )
                if explain and isinstance(found, ViewAnswers):
                    parts = found.view.explain(
                        query,
                        server=server,
                        limit=limit,
                        min_relevance=min_relevance,
                        include_disabled=include_disabled,
                    )
                floor = gateway_config.search.min_relevance if min_relevance is None else min_relevance
                # Nothing above the floor: is there anything below it? (Say so, and how to see it.)
                weaker = (
                    []
                    if results or not floor
                    else await found.search(
                        query, server=server, limit=1, min_relevance=0.0, include_disabled=include_disabled
                    )
                )
        except ToolscoutError as exc:
            output.fail(exc)
        if parts:
            by_tool = {(p.server, p.tool): p for p in parts}
            for row in results:
                found_parts = by_tool.get((row["server"], row["tool"]))
                if found_parts is not None:
                    row["contributions"] = found_parts.contributions
                    row["smart"] = found_parts.smart
        # As search_tools says it: the closest tools are shown, but none is a good match.
        weak = gateway_config.search.nothing_fits(r["relevance"] for r in results)
        if as_json:
            output.data({"query": query, "results": results} | ({"nothingFits": True} if weak else {}))
        elif results and parts:
            output.print(f'Search results for "{escape(query)}" ({len(results)} found), each ranker\'s part:')
            for table in explain_tables(parts):
                output.out.print(table)
        elif results:
            output.print(f'Search results for "{escape(query)}" ({len(results)} found):')
            for rank, r in enumerate(results, 1):
                disabled = " [red](disabled)[/red]" if r.get("enabled") is False else ""
                output.print(
                    f"\n{rank}. [bold]{escape(tool_label(r['server'], r['tool']))}[/bold] ({r['relevance']:.0%} match)"
                    + disabled
                )
                output.print(f"   {escape(r['summary'])}")
                if r["tags"]:
                    output.print(f"   Tags: {escape(', '.join(r['tags']))}")
            cached = {r["server"]: r["cachedAt"] for r in results if "cachedAt" in r}
            if cached:
                output.print("\n" + stale_note(cached))
            if weak:
                output.print("\nNothing fits well: the task may need a tool no server offers, or other words.")
        else:
            closest = escape(tool_label(weaker[0]["server"], weaker[0]["tool"])) if weaker else ""
            below = (
                f" at relevance {floor:g} or more; the closest is {closest} ({weaker[0]['relevance']:.1%} match), "
                "and --min-relevance 0 lists the weaker ones"
                if weaker
                else ""
            )
            output.note(f'No tools found for "{escape(query)}"{below}. Try other words, or `toolscout tools SERVER`.')
        if not results:
            raise typer.Exit(EXIT_NO_RESULTS)

    run(body)


def explain_tables(hits: list[ExplainedHit]) -> list[Table]:
    """The explained hits as tables: a column per ranker that took part; then, with smart mode on,
    a column per selection method (two tables, so that each fits a terminal's 80 columns)."""
    from toolscout.gateway.explain import RANKERS

    rankers = [name for name in RANKERS if any(name in h.contributions for h in hits)]
    methods = ("rule_based", "semantic_based", "llm", "combined")
    smart = [name for name in methods if any(name in (h.smart or {}) for h in hits)]
    tables: list[Table] = []
    for title, columns in (("", ["relevance", *rankers]), ("smart mode", smart)):
        if not columns:
            continue
        table = Table(title=title or None, title_justify="left", box=None, pad_edge=False, header_style="bold")
        table.add_column("#", justify="right")
        table.add_column("tool", overflow="fold")  # the numbers keep their width; a long name folds
        for name in columns:
            table.add_column(name, justify="right", no_wrap=True, min_width=len(name))
        for rank, hit in enumerate(hits, 1):
            found = (hit.smart or {}) if title else {"relevance": hit.relevance, **hit.contributions}
            cells = (_cell(found.get(name)) for name in columns)
            table.add_row(str(rank), escape(tool_label(hit.server, hit.tool)), *cells)
        tables.append(table)
    return tables


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def tools(
    server: Annotated[str, typer.Argument(help="Server name.")],
    config: ConfigOption = None,
    show_all: Annotated[bool, typer.Option("--all", help="Include tools disabled by toolRules.")] = False,
    show_tags: Annotated[bool, typer.Option("--tags", help="Show tags.")] = False,
    refresh: RefreshOption = False,
    as_json: JsonOption = False,
) -> None:
    """List one server's tools (exit 2 when the server does not exist)."""
    from toolscout.cli.answers import answers

    output = Output(as_json)
    gateway_config, source = load(config, output)

    async def body() -> None:
        try:
            async with answers(
                gateway_config, source and source.path, output, [server], refresh=refresh, retry_failed=True
            ) as found:
                listed = await found.tools(server)
        except ToolscoutError as exc:
            output.fail(exc)
        entries: list[dict[str, Any]] = listed["tools"]
        enabled = sum(1 for t in entries if t["enabled"])
        shown = [t for t in entries if show_all or t["enabled"]]
        if as_json:
            output.data({**listed, "tools": shown})
            return
        output.print(f"Tools from {escape(server)} ({enabled} enabled, {len(entries) - enabled} disabled):")
        for t in shown:
            mark = "[green]✓[/green]" if t["enabled"] else "[red]✗[/red]"
            output.print(f"\n{mark} [bold]{escape(t['name'])}[/bold]" + ("" if t["enabled"] else " (disabled)"))
            if t["summary"]:
                output.print(f"  {escape(t['summary'])}")
            if show_tags and t["tags"]:
                output.print(f"  Tags: {escape(', '.join(t['tags']))}")
        if listed.get("hiddenCount"):
            output.print(f"\n{counted(listed['hiddenCount'], 'more tool')} hidden from listings: found by search only.")
        if "cachedAt" in listed:
            output.print("\n" + stale_note({server: listed["cachedAt"]}))

    run(body)


def inspect(
    server_tool: ToolNameArgument,
    tool: ToolOfServerArgument = None,
    config: ConfigOption = None,
    examples: Annotated[bool, typer.Option("--examples", help="Show example arguments.")] = False,
    refresh: RefreshOption = False,
    as_json: JsonOption = False,
) -> None:
    """Show a tool's description, parameters and hints (exit 2 when the server or tool does not exist)."""
    from toolscout.cli.answers import answers

    output = Output(as_json)
    gateway_config, source = load(config, output)
    try:
        server, tool = named_tool(server_tool, tool, gateway_config)
    except ToolscoutError as exc:
        output.fail(exc)

    async def body() -> None:
        try:
            async with answers(
                gateway_config, source and source.path, output, [server], refresh=refresh, retry_failed=True
            ) as found:
                data = await found.details(server, tool)
        except ToolscoutError as exc:
            output.fail(exc)
        schema: dict[str, Any] = data["inputSchema"]
        data.pop("examples", None)  # (a running serve's get_tool_details has them: shown when asked)
        if examples:
            data["examples"] = tool_examples(schema)
        if as_json:
            output.data(data)
            return
        state = "" if data["enabled"] else " [red](disabled by toolRules)[/red]"
        output.print(f"Tool: [bold]{escape(tool_label(server, tool))}[/bold]{state}")
        if data.get("title"):
            output.print(f"Title: {escape(data['title'])}")
        output.print("\nDescription:")
        for line in (data["description"] or "(none)").strip().splitlines():
            output.print(f"  {escape(line)}")
        output.print("\nParameters:" if data["parameters"] else "\nParameters: none")
        for p in data["parameters"]:
            need = "required" if p["required"] else "optional"
            default = f", default {json.dumps(p['default'])}" if "default" in p else ""
            output.print(f"  [bold]{escape(p['name'])}[/bold] ({escape(p['type'])}, {need}{default})")
            if p.get("description"):
                output.print(f"    {escape(p['description'])}")
        labels = hint_labels(cast(dict[str, Any], data.get("annotations") or {}))
        if labels:
            output.print(f"\nHints: {', '.join(labels)}")
        if "outputSchema" in data:
            output.print("\nReturns structured content (see --json for the output schema).")
        if data["tags"]:
            output.print(f"\nTags: {escape(', '.join(data['tags']))}")
        if examples:
            output.print("\nExamples:")
            for example in data["examples"]:
                arguments = json.dumps(example["arguments"], ensure_ascii=False)
                output.print(f"  {escape(example['description'])}:")
                output.print(f"    toolscout execute {escape(tool_label(server, tool))} --args '{escape(arguments)}'")
        if "cachedAt" in data:
            output.print("\n" + stale_note({server: data["cachedAt"]}))

    run(body)


def read_args(raw: str | None, option: str = "--args") -> dict[str, Any]:
    """The JSON object of an arguments option: given inline, `@file.json`, or `-` for stdin (None: `{}`)."""
    if raw is None:
        return {}
    source = option
    if raw == "-":
        text, source = sys.stdin.read(), "stdin"
    elif raw.startswith("@"):
        path = Path(raw[1:]).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidArguments(f"Cannot read arguments from {path}: {exc}.") from None
        source = str(path)
    else:
        text = raw
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidArguments(
            f"Arguments from {source} are not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})."
        ) from None
    if not isinstance(value, dict):
        raise InvalidArguments(f"Arguments from {source} must be a JSON object, got {type(value).__name__}.")
    return cast(dict[str, Any], value)


def _save(data: str, mime: str, what: str) -> str:
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f"[{what} {mime}: not valid base64]"
    suffix = mimetypes.guess_extension(mime) or ".bin"
    with tempfile.NamedTemporaryFile(prefix="toolscout-", suffix=suffix, delete=False) as handle:
        handle.write(raw)
    return f"[{what} {mime}, {len(raw)} bytes, saved to {handle.name}]"


def render_result(output: Output, result: types.CallToolResult) -> None:
    """A tool's result for people: its text, its images and blobs saved to files, its structured content as JSON."""
    import mcp_types as types

    structured = result.structured_content
    texts = [b.text for b in result.content if isinstance(b, types.TextContent)]
    # Servers often repeat structured content as JSON text; show it once.
    duplicate = structured is not None and len(texts) == 1 and _json_equal(texts[0], structured)
    for block in result.content:
        if isinstance(block, types.TextContent):
            if not duplicate:
                output.print(escape(block.text))
        elif isinstance(block, types.ImageContent | types.AudioContent):
            output.print(escape(_save(block.data, block.mime_type, block.type)))
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, types.TextResourceContents):
                output.print(f"[resource {escape(str(resource.uri))}]\n{escape(resource.text)}")
            else:
                output.print(escape(_save(resource.blob, resource.mime_type or "application/octet-stream", "resource")))
        else:
            output.print(f"[link {escape(block.name)}: {escape(str(block.uri))}]")
    if structured is not None:
        output.out.print_json(json.dumps(structured, ensure_ascii=False))


def _json_equal(text: str, value: Any) -> bool:
    try:
        return json.loads(text) == value
    except ValueError:
        return False


def execute(
    server_tool: ToolNameArgument,
    tool: ToolOfServerArgument = None,
    args: Annotated[
        str | None, typer.Option("--args", help="Arguments as JSON, @file.json, or - to read them from stdin.")
    ] = None,
    config: ConfigOption = None,
    stream: Annotated[
        bool,
        typer.Option(
            "--stream",
            help="Print the tool's progress and log notifications as they come, before its result (with --json: "
            "one JSON object a line on stderr).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Run a tool (exit 3 when it fails, 4 when toolRules disable it, 2 when it does not exist)."""
    from toolscout.cli.answers import serve_answers
    from toolscout.cli.streaming import Notices

    output = Output(as_json)
    gateway_config, source = load(config, output)
    try:
        server, tool = named_tool(server_tool, tool, gateway_config)
    except ToolscoutError as exc:
        output.fail(exc)
    label = tool_label(server, tool)
    notices = Notices(output, label) if stream else None

    async def body() -> None:
        if not as_json:
            output.print(f"Executing: {escape(label)}\n")
        try:
            arguments = read_args(args)
            async with serve_answers(gateway_config, source and source.path, output, notices=notices) as serve:
                if serve is not None:  # a running serve of this config: its connection to the server
                    result = await serve.execute(server, tool, arguments, notices=notices)
                else:  # this one server, connected now (none other)
                    async with connected(gateway_config, output, only=[server], live=True) as gateway:
                        result = await _run_here(gateway, server, tool, arguments, notices)
        except ToolscoutError as exc:
            _fail(output, exc, server, tool)
        dumped = result.model_dump(by_alias=True, exclude_none=True, mode="json")
        error = ToolExecutionError(_error_text(result), server=server, tool=tool) if result.is_error else None
        if as_json and gateway_config.execute_result == "envelope":
            # The shape `execute_tool` answers in that mode, the discovery service design's: `result`
            # is the tool's value (its structured content, else its text decoded), not the MCP result.
            from toolscout.modes.discovery import enveloped

            output.data(enveloped(result, server=server, tool=tool).structured_content)
        elif as_json:
            payload: dict[str, Any] = {"success": error is None, "result": dumped}
            if error is not None:
                payload["error"] = error.to_dict()
            output.data(payload)
        elif error is not None:
            if notices is not None and notices.count:
                output.print()
            output.print(error_block(error, server, tool))
            if _more_than_text(result):
                output.print("\nResult:")
                render_result(output, result)
        else:
            if notices is not None and notices.count:
                output.print()
            output.print("[green]✓ Success[/green]\n")
            output.print("Result:")
            render_result(output, result)
        if error is not None:
            raise typer.Exit(EXIT_FAILED)

    run(body)


async def _run_here(
    gateway: Gateway, server: str, tool: str, arguments: dict[str, Any], notices: Notices | None
) -> types.CallToolResult:
    """Run the tool through the command's own gateway, its notifications to `notices` (if any)."""
    if notices is None:
        return await gateway.execute(server, tool, arguments)
    from toolscout.cli.streaming import StreamingRelay
    from toolscout.upstream.calls import relaying

    with relaying(StreamingRelay(notices)):
        return await gateway.execute(server, tool, arguments)


def error_block(error: ToolscoutError, server: str, tool: str) -> str:
    """Return a failed execution as people read it: `✗ Error`, then its `Code:`, `Message:`, `Server:` and `Tool:`."""
    lines = [
        "[red]✗ Error[/red]",
        "",
        f"Code: {error.code}",
        f"Message: {escape(error.explain(CLI_STEPS))}",
        f"Server: {escape(str(error.details.get('server', server)))}",
        f"Tool: {escape(str(error.details.get('tool', tool)))}",
    ]
    return "\n".join(lines)


def _fail(output: Output, error: ToolscoutError, server: str, tool: str) -> NoReturn:
    """End `execute` with an error of the gateway's (the tool did not run, or its server failed)."""
    if output.json_mode:
        output.fail(error)
    output.err.print(error_block(error, server, tool))
    raise typer.Exit(exit_code_for(error, output.exit_codes, executing=True))


def _more_than_text(result: types.CallToolResult) -> bool:
    import mcp_types as types

    return result.structured_content is not None or any(not isinstance(b, types.TextContent) for b in result.content)


def _error_text(result: types.CallToolResult) -> str:
    import mcp_types as types

    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent)) or "the tool reported an error"


def tokens(
    config: ConfigOption = None,
    demo: Annotated[bool, typer.Option(help="Measure the bundled demo servers instead of a config file.")] = False,
    refresh: StartAllOption = False,
    as_json: JsonOption = False,
) -> None:
    """What the catalog costs an agent exposed directly, and toolscout's `tools/list` in every mode.

    A server whose tools are stored (from an earlier command or serve) is measured from the stored
    catalog without being started; `--refresh` starts every server and measures what it lists now.
    """
    from toolscout.modes.base import SurfaceOptions
    from toolscout.modes.costs import COUNTED_ERA, NewClient, mode_tokens, server_costs
    from toolscout.modes.discovery import META_TOOLS, DiscoverySurface
    from toolscout.render.text import ENCODING, tool_tokens

    output = Output(as_json)
    gateway_config, _ = load(config, output, demo=demo)

    async def body() -> None:
        async with connected(gateway_config, output, from_stored=not refresh, searched=False) as gateway:
            per_server = [cost.to_dict() for cost in server_costs(gateway)]
            stored = stored_lists(gateway)
            for row in per_server:
                if row["server"] in stored:
                    row["cachedAt"] = stored[row["server"]]
            measured = await mode_tokens(gateway, options=SurfaceOptions.from_config(gateway_config))
            modes = [cost.to_dict() for cost in measured]
            # As a client receives them: execute_tool's annotations depend on the tools it reaches.
            meta = tool_tokens(await DiscoverySurface(gateway).tools(NewClient()))
        total = sum(row["tokens"] for row in per_server)
        summary: dict[str, Any] = {
            "encoding": ENCODING,
            "protocolVersion": COUNTED_ERA,
            "servers": per_server,
            "direct": {"tools": sum(row["tools"] for row in per_server), "tokens": total},
            "toolscout": {"tools": len(META_TOOLS), "tokens": meta},
            "saved": round(1 - meta / total, 4) if total else 0.0,
            "modes": modes,
        }
        if as_json:
            output.data(summary)
            return
        table = Table(
            title=f"Tokens an agent carries in every request ({ENCODING}, protocol {COUNTED_ERA})",
            title_justify="left",
        )
        table.add_column("exposed directly")
        table.add_column("status")
        table.add_column("tools", justify="right")
        table.add_column("tokens", justify="right")
        for row in per_server:
            table.add_row(escape(row["server"]), row["status"], str(row["tools"]), str(row["tokens"]))
        table.add_row("[bold]all servers[/bold]", "", str(summary["direct"]["tools"]), f"[bold]{total}[/bold]")
        table.add_row("[bold]toolscout meta-tools[/bold]", "", str(len(META_TOOLS)), f"[bold]{meta}[/bold]")
        output.out.print(table)
        by_mode = Table(
            title=f"toolscout's tools/list in each mode, as a {COUNTED_ERA} client receives it", title_justify="left"
        )
        by_mode.add_column("mode")
        by_mode.add_column("tools", justify="right")
        by_mode.add_column("tokens", justify="right")
        by_mode.add_column("of direct", justify="right")
        for row in modes:
            share = f"{row['tokens'] / total:.0%}" if total else "—"
            mode = row["mode"] + (" (configured)" if row["mode"] == gateway_config.mode else "")
            by_mode.add_row(mode, str(row["tools"]), str(row["tokens"]), share)
        output.out.print(by_mode)
        if total:
            output.print(f"In discovery mode toolscout saves {summary['saved']:.0%} of the tool definition tokens.")
        if stored:
            output.print(stale_note(stored))

    run(body)
