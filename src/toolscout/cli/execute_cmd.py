"""`toolscout execute`: run one tool, through a running `serve` of the config or a connection of its own."""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.markup import escape

from toolscout.cli.answers import serve_answers
from toolscout.cli.common import EXIT_FAILED, ConfigOption, JsonOption, Output, connected, load, run
from toolscout.errors import InvalidArguments, ToolExecutionError, ToolscoutError

if TYPE_CHECKING:
    import mcp_types as types


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
    server: Annotated[str, typer.Argument(help="Server name.")],
    tool: Annotated[str, typer.Argument(help="Tool name.")],
    args: Annotated[
        str | None, typer.Option("--args", help="Arguments as JSON, @file.json, or - to read them from stdin.")
    ] = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run a tool (exit 3 when it fails, 4 when toolRules disable it, 2 when it does not exist)."""
    output = Output(as_json)
    gateway_config, source = load(config, output)

    async def body() -> None:
        try:
            arguments = read_args(args)
            async with serve_answers(gateway_config, source and source.path, output) as serve:
                if serve is not None:  # a running serve of this config: its connection to the server
                    result = await serve.execute(server, tool, arguments)
                else:  # this one server, connected now (none other)
                    async with connected(gateway_config, output, only=[server], live=True) as gateway:
                        result = await gateway.execute(server, tool, arguments)
        except ToolscoutError as exc:
            output.fail(exc)
        dumped = result.model_dump(by_alias=True, exclude_none=True, mode="json")
        if as_json:
            payload: dict[str, Any] = {"success": not result.is_error, "result": dumped}
            if result.is_error:
                payload["error"] = ToolExecutionError(_error_text(result), server=server, tool=tool).to_dict()
            output.data(payload)
        else:
            output.print(f"Executing: {escape(server)}:{escape(tool)}\n")
            output.print("[red]✗ Error[/red]\n" if result.is_error else "[green]✓ Success[/green]\n")
            output.print("Result:")
            render_result(output, result)
        if result.is_error:
            raise typer.Exit(EXIT_FAILED)

    run(body)


def _error_text(result: types.CallToolResult) -> str:
    import mcp_types as types

    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent)) or "the tool reported an error"
