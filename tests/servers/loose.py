"""A stdio upstream whose own lookups are forgiving, as real servers' often are.

python tests/servers/loose.py --log FILE

A tool, resource or prompt is found by its exact name first, then by a loosened form of it
(`orig(name) or orig(name.lower())`, and more: Unicode NFKC, case folding, zero-width characters
and surrounding spaces dropped, a `server__` prefix dropped). So `DELETE_EVERYTHING`,
`ｄelete_everything` or `victim__delete_everything` all run `delete_everything` here: the gateway
must never forward such a name, or a rule that disabled the tool is bypassed. Every request that
names something is appended to FILE as one JSON line (`{"method", "name"}`) before it is looked
up, so a test sees every name this server was ever asked for.
"""

from __future__ import annotations

import argparse
import json
import os
import unicodedata
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server

_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}
TOOLS = [
    types.Tool(
        name="delete_everything", description="Deletes every item. Disabled by the tests' rules.", input_schema=_OBJECT
    ),
    types.Tool(name="list_items", description="Lists the items.", input_schema=_OBJECT),
]
RESOURCES = [
    types.Resource(uri="loose://secret", name="secret", description="Disabled by the tests' rules."),
    types.Resource(uri="loose://public", name="public"),
]
TEMPLATES = [types.ResourceTemplate(uri_template="loose://items/{id}", name="item")]
PROMPTS = [
    types.Prompt(name="wipe", description="Disabled by the tests' rules."),
    types.Prompt(name="greet"),
]
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))


def loosen(name: str) -> str:
    """The forms this server accepts for `name`, reduced to one."""
    name = unicodedata.normalize("NFKC", name).translate(_ZERO_WIDTH).strip()
    name = name.rpartition("__")[2]
    return name.casefold().replace("ı", "i")  # the dotless i folds to itself; servers that "help" map it too


def find(name: str, known: list[str]) -> str | None:
    """`orig(name) or orig(loosen(name))`."""
    if name in known:
        return name
    return next((k for k in known if loosen(k) == loosen(name)), None)


def build_server(log: Path) -> Server[Any]:
    def asked(method: str, name: str) -> None:
        # One write per line on an O_APPEND file: whole lines, whatever else writes.
        line = json.dumps({"method": method, "name": name}) + "\n"
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        asked("tools/call", params.name)
        tool = find(params.name, [t.name for t in TOOLS])
        if tool is None:
            return types.CallToolResult(content=[types.TextContent(text=f"no tool {params.name}")], is_error=True)
        return types.CallToolResult(content=[types.TextContent(text=f"ran {tool}")])

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=RESOURCES)

    async def list_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=TEMPLATES)

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        asked("resources/read", params.uri)
        uri = find(params.uri, [r.uri for r in RESOURCES]) or params.uri
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=f"read {uri}")])

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=PROMPTS)

    async def get_prompt(ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams) -> types.GetPromptResult:
        asked("prompts/get", params.name)
        prompt = find(params.name, [p.name for p in PROMPTS]) or params.name
        text = types.TextContent(text=f"prompt {prompt}")
        return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=text)])

    async def complete(ctx: ServerRequestContext[Any], params: types.CompleteRequestParams) -> types.CompleteResult:
        ref = params.ref
        asked("completion/complete", ref.name if isinstance(ref, types.PromptReference) else ref.uri)
        return types.CompleteResult(completion=types.Completion(values=["x"]))

    return Server(
        "loose",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete,
    )


async def serve(log: Path) -> None:
    server = build_server(log)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--log", type=Path, required=True, help="append every name asked for to FILE")
    anyio.run(serve, parser.parse_args().log)


if __name__ == "__main__":
    main()
