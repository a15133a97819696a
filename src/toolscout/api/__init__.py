"""toolscout in process: a gateway a program opens, searches and calls, for its own agent loop.

    async with toolscout.open_gateway("toolscout.yaml") as scout:
        hits = await scout.search("create a note", limit=5)          # [Hit(server, tool, name, relevance, ...)]
        tool = await scout.tool_details("notes", "create_note")      # ToolDetails: the whole definition
        result = await scout.execute("notes", "create_note", {"title": "x", "body": "y"})  # mcp_types.CallToolResult
        servers = scout.servers()                                    # [ServerInfo(name, description, status, ...)]

`scout.py` holds the API (`open_gateway`, `Scout`, what it answers). The helpers that turn its answers
into what a model API takes, and a model's tool call back into a call, are in modules of their own
that import their provider's package only there: `toolscout.api.anthropic` (the Messages API: tool
definitions with `defer_loading`, `tool_reference` blocks for a custom tool search, `tool_result`
blocks; the `anthropic` extra) and `toolscout.api.openai` (the Responses API: function tools grouped
into namespaces per server, `tool_search` and its output, `function_call_output` items; Chat
Completions' tools and tool messages; the `openai` extra). docs/PYTHON_API.md shows a loop for each.

Every failure is a `toolscout.errors.ToolscoutError` with a stable `code`: `ConfigurationError` when
the configuration cannot be read, `ServerNotFound`/`ToolNotFound` (with the closest names),
`ToolDisabled`, `ArgumentValidationError`, `InvalidArguments` (an argument of a wrong type too),
`ServerUnavailable`, `CallTimeout`, `GatewayNotOpen` (a `Scout` used outside its `async with` block),
and the others of `toolscout.errors`. `error.explain(API_STEPS)` words one for a model.
"""

from toolscout.api.scout import (
    API_STEPS,
    ConfigLike,
    Hit,
    Scout,
    ServerInfo,
    ToolDetails,
    load_gateway_config,
    open_gateway,
)

__all__ = [
    "API_STEPS",
    "ConfigLike",
    "Hit",
    "Scout",
    "ServerInfo",
    "ToolDetails",
    "load_gateway_config",
    "open_gateway",
]
