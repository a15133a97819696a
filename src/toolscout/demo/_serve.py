"""Command-line plumbing shared by the demo servers: pick a transport and run."""

from __future__ import annotations

import argparse
import copy
import inspect
import re
from collections.abc import Callable
from typing import Any, Literal, TypeVar, cast

from mcp.server import MCPServer

_F = TypeVar("_F", bound=Callable[..., Any])

Transport = Literal["stdio", "http", "sse"]

HTTP_PATH = "/mcp"
SSE_PATH = "/sse"


def tool_doc(fn: _F) -> _F:
    """Make ``fn``'s docstring read cleanly as a tool description: dedented, and each paragraph on
    one line (list items keep their own lines).

    The SDK publishes ``fn.__doc__`` verbatim: before Python 3.13 that keeps the source
    indentation of every line after the first, and always the line breaks the source was
    wrapped at, which a client then shows in the middle of sentences. Apply it below ``@mcp.tool()``.
    """
    if fn.__doc__:
        fn.__doc__ = unwrap(inspect.cleandoc(fn.__doc__))
    return fn


_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s")


def unwrap(text: str) -> str:
    """`text` with the line breaks inside each paragraph undone; blank lines and list items stay."""
    paragraphs: list[str] = []
    for block in re.split(r"\n\s*\n", text.strip()):
        lines: list[str] = []
        for line in block.splitlines():
            if lines and not _LIST_ITEM.match(line):
                lines[-1] = f"{lines[-1]} {line.strip()}"
            else:
                lines.append(line.rstrip())
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def parse_args(
    argv: list[str] | None = None,
    *,
    description: str | None = None,
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
) -> argparse.Namespace:
    """Parse the transport options every demo server takes, plus any the server adds.

    ``add_arguments`` receives the parser before parsing, so a server's own options
    (``--store``, ``--root``) appear in ``--help`` and are validated like the rest.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--transport",
        choices=["stdio", "http", "sse"],
        default="stdio",
        help=f"stdio (default), streamable HTTP at {HTTP_PATH}, or the legacy SSE transport at {SSE_PATH}",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind for http/sse (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind for http/sse (default: 8000)")
    if add_arguments is not None:
        add_arguments(parser)
    return parser.parse_args(argv)


def serve(mcp: MCPServer[Any], argv: list[str] | None = None, *, args: argparse.Namespace | None = None) -> None:
    """Run ``mcp`` on the transport chosen on the command line; returns when the server stops.

    Pass ``args`` when the server already parsed its own options with `parse_args`
    (it needed them to build ``mcp``); otherwise ``argv`` (default ``sys.argv``) is parsed here.
    """
    if args is None:
        args = parse_args(argv, description=mcp.instructions)
    transport = cast(Transport, args.transport)
    host = cast(str, args.host)
    port = cast(int, args.port)
    if transport == "stdio":
        mcp.run()
        return
    # Imported here so stdio servers, which the gateway spawns often, start without loading uvicorn.
    import uvicorn
    from uvicorn.config import LOGGING_CONFIG

    # mcp.run("streamable-http" | "sse") would do, but it keeps uvicorn's default logging, which
    # prints one access line per request to stdout; serving the app ourselves sends it to stderr.
    app = (
        mcp.streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
        if transport == "http"
        else mcp.sse_app(sse_path=SSE_PATH, host=host)
    )
    log_config = copy.deepcopy(LOGGING_CONFIG)
    log_config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    uvicorn.run(app, host=host, port=port, log_config=log_config, log_level=mcp.settings.log_level.lower())
