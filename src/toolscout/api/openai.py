"""A `Scout`'s tools for OpenAI's Responses API (and Chat Completions), typed by the `openai` package
(the `openai` extra).

Each helper is named for what it returns:

- `namespace_tool_params(scout, server=None, defer_loading=True)` → `list[NamespaceToolParam]`: one
  namespace per server (or `server`'s alone), carrying the server's description, its tools as
  functions under their own names; with `defer_loading` the model sees only the namespaces until its
  `tool_search` loads their functions.
- `function_tool_params(scout, server=None, defer_loading=False)` → `list[FunctionToolParam]`: every
  enabled tool as a top-level function under its native name (`server__tool`).
- `tool_search_tool_param(execution="server")` → `ToolSearchToolParam`: the `tool_search` tool;
  `execution="client"` makes it one this program answers (with a description and `{query, limit?}`).
- `await tool_search_output(scout, call)` → `ResponseToolSearchOutputItemParamParam`: the answer to a
  client-executed `tool_search_call`: the hits' functions, in their servers' namespaces.
- `await function_call_output(scout, call)` → `FunctionCallOutput`: maps a `function_call` item
  (`namespace` + `name`, or a native name) back to `(server, tool)`, runs it through `Scout.execute`
  and answers with its text (and images); a refused call says why in the output.
- `await outputs(scout, output)` → `list[ResponseInputItemParam]`: the answer to every
  `function_call` and client `tool_search_call` of a response's `output`, in order.
- `chat_tool_params(scout, server=None)` → `list[ChatCompletionFunctionToolParam]` and
  `await chat_tool_message(scout, tool_call)` → `ChatCompletionToolMessageParam`: the same for Chat
  Completions (no namespaces, no tool search there).
- `await tool_named(scout, name, namespace=None)` → `(server, tool)`.

Calls and items are the response's models (`ResponseFunctionToolCall`, `ResponseToolSearchCall`,
`ChatCompletionMessageToolCallUnion`) or their dicts. Strict mode is off for every function: MCP
input schemas are not written for it. docs/PYTHON_API.md has a loop.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, cast

try:
    from openai.types.chat import (
        ChatCompletionFunctionToolParam,
        ChatCompletionMessageToolCallUnion,
        ChatCompletionToolMessageParam,
    )
    from openai.types.responses import (
        FunctionToolParam,
        NamespaceToolParam,
        ResponseFunctionToolCall,
        ResponseInputItemParam,
        ResponseToolSearchCall,
        ResponseToolSearchOutputItemParamParam,
        ToolSearchOutputNamespaceToolParam,
        ToolSearchToolParam,
    )
    from openai.types.responses.response_function_call_output_item_list_param import (
        ResponseFunctionCallOutputItemParam,
    )
    from openai.types.responses.response_input_item_param import FunctionCallOutput
except ImportError as exc:  # pragma: no cover - the test environment has the extra
    raise ImportError(
        "toolscout.api.openai needs the openai package: install toolscout's `openai` extra "
        "(pip install 'toolscout[openai]')."
    ) from exc

from toolscout.api.results import (
    SEARCH_DESCRIPTION,
    SEARCH_PARAMETERS,
    ImagePart,
    arguments_of,
    blocks_of,
    error_text,
    result_parts,
    searched,
    sent_field,
)
from toolscout.api.scout import Scout, ToolDetails
from toolscout.errors import GatewayNotOpen, InvalidArguments, ToolNotFound, ToolscoutError
from toolscout.naming import native_names

__all__ = [
    "IMAGE_TYPES",
    "Namespaces",
    "chat_tool_message",
    "chat_tool_params",
    "function_call_output",
    "function_tool_params",
    "namespace_tool_params",
    "outputs",
    "tool_named",
    "tool_search_output",
    "tool_search_tool_param",
]

logger = logging.getLogger(__name__)

IMAGE_TYPES: frozenset[str] = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""The image types a function's output may carry; others are described in words."""

FunctionCall = ResponseFunctionToolCall | Mapping[str, Any]
ToolSearchCall = ResponseToolSearchCall | Mapping[str, Any]
ChatToolCall = ChatCompletionMessageToolCallUnion | Mapping[str, Any]


class Namespaces:
    """Each tool's namespace and function name: its server's name and its own, made valid for the API
    (`^[a-zA-Z0-9_-]{1,64}$`) and unique as native names are (naming.py), and the way back."""

    def __init__(self, tools: Iterable[ToolDetails]) -> None:
        pairs = [(t.server, t.tool) for t in tools]
        servers = sorted({server for server, _ in pairs})
        # A server's own name as the preferred name of a pair that stands for it: cleaned, hashed on a clash.
        spaces = native_names([(s, "") for s in servers], preferred={(s, ""): s for s in servers})
        self.namespace = {server: spaces[(server, "")] for server in servers}
        self._functions: dict[tuple[str, str], str] = {}
        for server in servers:
            own = [pair for pair in pairs if pair[0] == server]
            self._functions |= native_names(own, bare=True)
        self._routes = {(self.namespace[s], name): (s, t) for (s, t), name in self._functions.items()}

    def function(self, server: str, tool: str) -> str:
        """The tool's function name within its namespace."""
        return self._functions[(server, tool)]

    def route(self, namespace: str, name: str) -> tuple[str, str] | None:
        """The `(server, tool)` a namespace's function stands for, if any."""
        return self._routes.get((namespace, name))


def _function(details: ToolDetails, name: str, defer_loading: bool) -> FunctionToolParam:
    function: FunctionToolParam = {
        "type": "function",
        "name": name,
        "parameters": details.input_schema,
        "strict": False,
    }
    if details.description:
        function["description"] = details.description
    if defer_loading:
        function["defer_loading"] = True
    return function


async def function_tool_params(
    scout: Scout, *, server: str | None = None, defer_loading: bool = False
) -> list[FunctionToolParam]:
    """Every enabled tool (of `server`, or of all) as a top-level function under its native name."""
    tools = await scout.tools(server, include_hidden=defer_loading)
    return [_function(details, details.name, defer_loading) for details in tools]


def _namespaces(
    scout: Scout, tools: Sequence[ToolDetails], names: Namespaces, *, defer_loading: bool
) -> list[NamespaceToolParam]:
    """`tools` grouped into their servers' namespaces, each with its server's description."""
    described = {info.name: info.description for info in scout.servers()}
    grouped: dict[str, list[ToolDetails]] = {}
    for details in tools:
        grouped.setdefault(details.server, []).append(details)
    return [
        {
            "type": "namespace",
            "name": names.namespace[server],
            # The API requires a description: a server that has none is described by its name.
            "description": described.get(server) or f"The tools of the {server} server.",
            "tools": [
                cast(Any, _function(details, names.function(server, details.tool), defer_loading))
                for details in members
            ],
        }
        for server, members in grouped.items()
    ]


async def namespace_tool_params(
    scout: Scout, *, server: str | None = None, defer_loading: bool = True
) -> list[NamespaceToolParam]:
    """One namespace per server with tools (or `server`'s alone): the server's description, its tools
    as functions (deferred, also those `toolRules` hide from listings: a search may load them)."""
    if server is not None:
        await scout.tools(server)  # SERVER_NOT_FOUND with the closest names
    every = await scout.tools(include_hidden=True)  # named among all, so that a name never depends on the listing
    shown = [t for t in every if (defer_loading or not t.hidden) and server in (None, t.server)]
    return _namespaces(scout, shown, Namespaces(every), defer_loading=defer_loading)


def tool_search_tool_param(
    execution: Literal["server", "client"] = "server", *, description: str = SEARCH_DESCRIPTION
) -> ToolSearchToolParam:
    """The `tool_search` tool: OpenAI's own search over the deferred functions (`server`), or one this
    program answers with `tool_search_output` (`client`)."""
    if execution == "server":
        return {"type": "tool_search"}
    return {"type": "tool_search", "execution": "client", "description": description, "parameters": SEARCH_PARAMETERS}


def _get(item: object, key: str) -> Any:
    if isinstance(item, Mapping):
        return cast(Mapping[str, Any], item).get(key)
    return getattr(item, key, None)


async def tool_search_output(scout: Scout, call: ToolSearchCall) -> ResponseToolSearchOutputItemParamParam:
    """The answer to a client-executed `tool_search_call`: the hits' functions in their servers'
    namespaces, one namespace per server in the order of its best hit (the ranking kept within it).

    The item has no field for an error. A search asked wrongly (arguments that are not a JSON object
    with a `query` string, a `limit` out of range) is answered with no tools and `status: "incomplete"`,
    where one that found nothing is `completed` with no tools; its error is logged as a warning, which
    is the most the type allows to tell them apart.
    """
    status: Literal["completed", "incomplete"] = "completed"
    try:
        hits = await searched(scout, _get(call, "arguments"))
    except InvalidArguments as error:  # (the model's mistake; any other error is the program's, and raised)
        logger.warning("answered a client tool_search_call asked wrongly with no tools: %s", error_text(error))
        hits, status = [], "incomplete"
    every = await scout.tools(include_hidden=True)
    by_pair = {(details.server, details.tool): details for details in every}
    found = [by_pair[(hit.server, hit.tool)] for hit in hits if (hit.server, hit.tool) in by_pair]
    loaded = _namespaces(scout, found, Namespaces(every), defer_loading=False)
    output: ResponseToolSearchOutputItemParamParam = {
        "type": "tool_search_output",
        "execution": "client",
        "status": status,
        "tools": cast(list[ToolSearchOutputNamespaceToolParam], loaded),
    }
    call_id = _get(call, "call_id")
    if isinstance(call_id, str):
        output["call_id"] = call_id
    return output


async def tool_named(scout: Scout, name: str, namespace: str | None = None) -> tuple[str, str]:
    """The `(server, tool)` a function call names: a namespace's function, or a native name."""
    if namespace is None:
        return await scout.tool_named(name)
    route = Namespaces(await scout.tools(include_hidden=True)).route(namespace, name)
    if route is None:
        raise ToolNotFound(f"No tool is named {name!r} in the namespace {namespace!r}.", next_step="find_tool")
    return route


def _output(parts: Sequence[str | ImagePart]) -> str | list[ResponseFunctionCallOutputItemParam]:
    if all(isinstance(part, str) for part in parts):
        return "\n".join(cast(Sequence[str], parts))
    items: list[ResponseFunctionCallOutputItemParam] = []
    for part in parts:
        if isinstance(part, ImagePart):
            items.append({"type": "input_image", "image_url": f"data:{part.mime_type};base64,{part.data}"})
        else:
            items.append({"type": "input_text", "text": part})
    return items


async def _run(scout: Scout, name: str, namespace: str | None, arguments: object) -> str | list[Any]:
    try:
        server, tool = await tool_named(scout, name, namespace)
        result = await scout.execute(server, tool, arguments_of(arguments))
    except GatewayNotOpen:
        raise  # the program's mistake, not the model's: never an answer to it
    except ToolscoutError as error:
        return error_text(error)
    output = _output(result_parts(result, image_types=IMAGE_TYPES))
    if result.is_error and isinstance(output, str):
        return f"The tool reported an error: {output}"
    return output


async def function_call_output(scout: Scout, call: FunctionCall) -> FunctionCallOutput:
    """Run the tool a `function_call` item names with its arguments: its `function_call_output` item.

    An unknown function or bad arguments are answered in the output; an item without the `call_id` or
    `name` the API always sends raises `InvalidArguments` (nothing is run)."""
    call_id = sent_field(call, "call_id", "function_call item")
    name = sent_field(call, "name", "function_call item")
    output = await _run(scout, name, _get(call, "namespace"), _get(call, "arguments"))
    return {"type": "function_call_output", "call_id": call_id, "output": output}


async def outputs(scout: Scout, output: Iterable[object]) -> list[ResponseInputItemParam]:
    """The answer to every `function_call` and client `tool_search_call` item of a response's `output`,
    in order (other items are passed over): the input items that follow them."""
    answers: list[ResponseInputItemParam] = []
    for item in blocks_of(output, "output", "a response's output (`response.output`)"):
        kind = _get(item, "type")
        if kind == "function_call":
            answers.append(await function_call_output(scout, cast(FunctionCall, item)))
        elif kind == "tool_search_call" and _get(item, "execution") == "client":
            answers.append(await tool_search_output(scout, cast(ToolSearchCall, item)))
    return answers


async def chat_tool_params(scout: Scout, *, server: str | None = None) -> list[ChatCompletionFunctionToolParam]:
    """Every enabled tool (of `server`, or of all) as a Chat Completions function under its native name."""
    tools: list[ChatCompletionFunctionToolParam] = []
    for details in await scout.tools(server):
        function: ChatCompletionFunctionToolParam = {
            "type": "function",
            "function": {"name": details.name, "parameters": details.input_schema},
        }
        if details.description:
            function["function"]["description"] = details.description
        tools.append(function)
    return tools


async def chat_tool_message(scout: Scout, tool_call: ChatToolCall) -> ChatCompletionToolMessageParam:
    """Run the tool a Chat Completions tool call names: the `tool` message answering it (text only; a
    call of a custom tool, which no gateway tool is, is answered with `TOOL_NOT_FOUND`). A tool call
    without the `id`, or the `function` (or `custom`) and its `name`, the API always sends raises
    `InvalidArguments` (nothing is run)."""
    tool_call_id = sent_field(tool_call, "id", "tool call")
    function, custom = _get(tool_call, "function"), _get(tool_call, "custom")
    if function is None and custom is None:
        raise InvalidArguments(
            "The tool call has neither `function` nor `custom`: pass the tool call on as the model API sent it."
        )
    if function is None:
        name = sent_field(custom, "name", "tool call's custom")
        output: str | list[Any] = error_text(ToolNotFound(f"No function is named {name!r}.", next_step="find_tool"))
    else:
        name = sent_field(function, "name", "tool call's function")
        output = await _run(scout, name, None, _get(function, "arguments"))
    if not isinstance(output, str):
        output = "\n".join(item["text"] if item["type"] == "input_text" else "[image, not shown]" for item in output)
    return {"role": "tool", "tool_call_id": tool_call_id, "content": output}
