"""An upstream that offers what the MCP conformance suite's server scenarios ask for, over streamable HTTP.

python -m tests.servers.conformance --port 0    # prints uvicorn's "running on" line with the port

Written from the scenario descriptions of `@modelcontextprotocol/conformance` (`conformance list
--server`, each scenario's "Server Implementation Requirements"): its tools (`test_simple_text`,
`test_tool_with_progress`, `test_sampling`, ...), resources (`test://static-text`, the template
`test://template/{id}/data`, subscriptions), prompts and completions. tests/test_conformance.py runs
the suite against it directly and through the gateway, and compares.
"""

from __future__ import annotations

import argparse
import json
import re
import warnings
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

Ctx = ServerRequestContext[Any]

# A 1x1 PNG and a tiny WAV header: the scenarios check types and MIME types, not pixels or sound.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA="
JSON_SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"
TEMPLATE = re.compile(r"^test://template/([^/]+)/data$")
NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}


def _tool(name: str, description: str, schema: dict[str, Any] | None = None) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema=schema or NO_ARGUMENTS)


def _string_arguments(*names: str) -> dict[str, Any]:
    return {"type": "object", "properties": {n: {"type": "string"} for n in names}, "required": list(names)}


TOOLS = [
    _tool("test_simple_text", "Returns a simple text."),
    _tool("test_image_content", "Returns an image."),
    _tool("test_audio_content", "Returns audio."),
    _tool("test_embedded_resource", "Returns an embedded resource."),
    _tool("test_multiple_content_types", "Returns text, an image and a resource."),
    _tool("test_tool_with_logging", "Sends three log messages while it runs."),
    _tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100."),
    _tool("test_error_handling", "Always fails with an error result."),
    _tool("test_sampling", "Asks the client's model.", _string_arguments("prompt")),
    _tool("test_elicitation", "Asks the user.", _string_arguments("message")),
    _tool("test_elicitation_sep1034_defaults", "Asks the user, with defaults for every primitive type."),
    _tool("test_elicitation_sep1330_enums", "Asks the user, with every kind of enum."),
    _tool(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        {
            "$schema": JSON_SCHEMA_2020_12,
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        },
    ),
]

RESOURCES = [
    types.Resource(uri="test://static-text", name="static-text", description="A static text.", mime_type="text/plain"),
    types.Resource(
        uri="test://static-binary", name="static-binary", description="A static image.", mime_type="image/png"
    ),
    types.Resource(
        uri="test://watched-resource", name="watched", description="A resource to subscribe to.", mime_type="text/plain"
    ),
]

PROMPTS = [
    types.Prompt(name="test_simple_prompt", description="A prompt without arguments."),
    types.Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with two arguments.",
        arguments=[
            types.PromptArgument(name="arg1", description="First test argument", required=True),
            types.PromptArgument(name="arg2", description="Second test argument", required=True),
        ],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt embedding a resource.",
        arguments=[types.PromptArgument(name="resourceUri", description="The resource to embed", required=True)],
    ),
    types.Prompt(name="test_prompt_with_image", description="A prompt with an image."),
]

SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
    },
}

SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=is_error)


async def _elicit(ctx: Ctx, message: str, schema: dict[str, Any]) -> types.ElicitResult:
    return await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)


async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    name = params.name
    if name == "test_simple_text":
        return _text("This is a simple text response for testing.")
    if name == "test_image_content":
        return types.CallToolResult(content=[types.ImageContent(data=PNG, mime_type="image/png")])
    if name == "test_audio_content":
        return types.CallToolResult(content=[types.AudioContent(data=WAV, mime_type="audio/wav")])
    if name == "test_embedded_resource":
        resource = types.TextResourceContents(
            uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
        )
        return types.CallToolResult(content=[types.EmbeddedResource(resource=resource)])
    if name == "test_multiple_content_types":
        resource = types.TextResourceContents(
            uri="test://mixed-content-resource", mime_type="application/json", text='{"test":"data","value":123}'
        )
        return types.CallToolResult(
            content=[
                types.TextContent(text="Multiple content types test:"),
                types.ImageContent(data=PNG, mime_type="image/png"),
                types.EmbeddedResource(resource=resource),
            ]
        )
    if name == "test_tool_with_logging":
        for message in ("Tool execution started", "Tool processing data", "Tool execution completed"):
            await ctx.session.send_log_message("info", message, "conformance", ctx.request_id)  # pyright: ignore[reportDeprecated]
        return _text("Tool with logging executed successfully")
    if name == "test_tool_with_progress":
        for done in (0, 50, 100):
            await ctx.session.report_progress(done, 100)
        return _text("Tool with progress executed successfully")
    if name == "test_error_handling":
        return _text("This tool intentionally returns an error for testing", is_error=True)
    if name == "test_sampling":
        message = types.SamplingMessage(role="user", content=types.TextContent(text=str(args.get("prompt", ""))))
        reply = await ctx.session.create_message([message], max_tokens=100, related_request_id=ctx.request_id)  # pyright: ignore[reportDeprecated]
        content = reply.content
        said = content.text if isinstance(content, types.TextContent) else str(content)
        return _text(f"LLM response: {said}")
    if name == "test_elicitation":
        schema = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }
        answer = await _elicit(ctx, str(args.get("message", "")), schema)
        return _text(f"User response: action={answer.action}, content={json.dumps(answer.content)}")
    if name in ("test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums"):
        schema = SEP1034_SCHEMA if name.endswith("defaults") else SEP1330_SCHEMA
        answer = await _elicit(ctx, "Please review the form.", schema)
        return _text(f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}")
    if name == "json_schema_2020_12_tool":
        return _text(f"Received {json.dumps(args, sort_keys=True)}")
    raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")


async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=RESOURCES)


async def list_templates(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(
        uri_template="test://template/{id}/data",
        name="template",
        description="Data for an id.",
        mime_type="application/json",
    )
    return types.ListResourceTemplatesResult(resource_templates=[template])


async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    contents: types.TextResourceContents | types.BlobResourceContents
    if uri == "test://static-text":
        contents = types.TextResourceContents(
            uri=uri, mime_type="text/plain", text="This is the content of the static text resource."
        )
    elif uri == "test://static-binary":
        contents = types.BlobResourceContents(uri=uri, mime_type="image/png", blob=PNG)
    elif uri == "test://watched-resource":
        contents = types.TextResourceContents(uri=uri, mime_type="text/plain", text="Watched resource content.")
    elif match := TEMPLATE.match(uri):
        data = {"id": match.group(1), "templateTest": True, "data": f"Data for ID: {match.group(1)}"}
        contents = types.TextResourceContents(uri=uri, mime_type="application/json", text=json.dumps(data))
    else:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Resource {uri} not found")
    return types.ReadResourceResult(contents=[contents])


async def subscribe(ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


async def unsubscribe(ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


async def list_prompts(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=PROMPTS)


async def get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    args = params.arguments or {}
    if params.name == "test_simple_prompt":
        messages = [
            types.PromptMessage(role="user", content=types.TextContent(text="This is a simple prompt for testing."))
        ]
    elif params.name == "test_prompt_with_arguments":
        text = f"Prompt with arguments: arg1='{args.get('arg1', '')}', arg2='{args.get('arg2', '')}'"
        messages = [types.PromptMessage(role="user", content=types.TextContent(text=text))]
    elif params.name == "test_prompt_with_embedded_resource":
        resource = types.TextResourceContents(
            uri=args.get("resourceUri", "test://example-resource"),
            mime_type="text/plain",
            text="Embedded resource content for testing.",
        )
        messages = [
            types.PromptMessage(role="user", content=types.EmbeddedResource(resource=resource)),
            types.PromptMessage(
                role="user", content=types.TextContent(text="Please process the embedded resource above.")
            ),
        ]
    elif params.name == "test_prompt_with_image":
        messages = [
            types.PromptMessage(role="user", content=types.ImageContent(data=PNG, mime_type="image/png")),
            types.PromptMessage(role="user", content=types.TextContent(text="Please analyze the image above.")),
        ]
    else:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Prompt {params.name} not found")
    return types.GetPromptResult(messages=messages)


async def complete(ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
    prefix = params.argument.value
    values = [v for v in ("paris", "park", "party") if v.startswith(prefix)]
    return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))


async def set_level(ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


def build_server() -> Server[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)  # logging is what some scenarios are about
        return Server(  # pyright: ignore[reportDeprecated]
            "conformance-upstream",
            version="1.0.0",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=read_resource,
            on_subscribe_resource=subscribe,
            on_unsubscribe_resource=unsubscribe,
            on_list_prompts=list_prompts,
            on_get_prompt=get_prompt,
            on_completion=complete,
            on_set_logging_level=set_level,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    import uvicorn

    app = build_server().streamable_http_app(streamable_http_path="/mcp", host=args.host)
    uvicorn.run(app, host=args.host, port=args.port, log_level="info", access_log=False)


if __name__ == "__main__":
    main()
