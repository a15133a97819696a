"""`Library`: an in-process upstream with resources, resource templates and prompts (tools that add one
and announce it), in both protocol eras."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
)
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tests.servers.kitchen import TINY_PNG

PAGE = 2
"""A Library lists its resources two at a time: the gateway must follow every page."""

URIS = [
    "note://1",
    "https://example.com/a?b=1&c=%20x#frag",
    "file:///tmp/my notes.txt",
    "bin://logo.png",
    "secret://key",
]
TEMPLATES = ["note://{id}", "https://example.com/search{?q,lang}", "secret://{name}"]


class Library:
    """An upstream with resources (URIs of every shape, listed in pages), templates and prompts, and
    tools that add a resource or a prompt and announce it, in the era of the request."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.reads: list[str] = []
        self.hold_lists: anyio.Event | None = None
        self.subscribed: set[str] = set()
        self.subscriptions_changed = anyio.Event()
        self.sessions: set[Any] = set()
        """Handshake-era sessions (they listed tools), to send `notifications/resources/updated` on."""
        """What the gateway subscribed to with resources/subscribe (handshake era)."""
        """While set to an unset event, resources/list waits for it (a slow server)."""
        self.resources = [
            types.Resource(
                name="first-note",
                uri=URIS[0],
                title="First note",
                description=f"The first note of {name}",
                mime_type="text/plain",
                size=5,
                annotations=types.Annotations(audience=["user"], priority=0.5),
                _meta={"example.com/owner": name},
            ),
            types.Resource(name="query", uri=URIS[1], mime_type="text/html"),
            types.Resource(name="spaced", uri=URIS[2]),
            types.Resource(name="logo", uri=URIS[3], mime_type="image/png"),
            types.Resource(name="secret", uri=URIS[4]),
        ]
        self.templates = [
            types.ResourceTemplate(
                name="note", uri_template=TEMPLATES[0], title="A note by id", mime_type="text/plain"
            ),
            types.ResourceTemplate(name="search", uri_template=TEMPLATES[1], description="Search the library"),
            types.ResourceTemplate(name="secret-template", uri_template=TEMPLATES[2]),
        ]
        self.prompts = [
            types.Prompt(
                name="greet",
                title="Greeting",
                description="Greets someone and shows them the first note.",
                arguments=[types.PromptArgument(name="who", description="Whom to greet", required=True)],
                _meta={"example.com/owner": name},
            ),
            types.Prompt(name="secret plan", description="Not for everyone."),
            types.Prompt(name="fail", description="Always fails."),
        ]
        self._bus = InMemorySubscriptionBus()
        self.server: Server[Any] = Server(
            name,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self._bus),
            on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe,
            on_completion=self._complete,
        )

    async def _subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        self.subscribed.add(params.uri)
        self._subscriptions_changed()
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self.subscribed.discard(params.uri)
        self._subscriptions_changed()
        return types.EmptyResult()

    def _subscriptions_changed(self) -> None:
        self.subscriptions_changed.set()
        self.subscriptions_changed = anyio.Event()

    async def wait_subscribed(self, uris: set[str]) -> None:
        """Until what the gateway is subscribed to (handshake era) is `uris`."""
        with anyio.fail_after(10):
            while self.subscribed != uris:
                await self.subscriptions_changed.wait()

    async def _complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        ref = params.ref
        what = ref.name if isinstance(ref, types.PromptReference) else ref.uri
        context = params.context.arguments if params.context is not None else None
        values = [f"{self.name}:{what}:{params.argument.name}={params.argument.value}", f"context={context}"]
        return types.CompleteResult(completion=types.Completion(values=values, total=2, has_more=False))

    async def touch(self, uri: str) -> None:
        """Say that resource `uri` changed, in both eras: to handshake-era sessions that subscribed, and
        to 2026-07-28 listen streams."""
        await self._bus.publish(ResourceUpdated(uri=uri))
        if uri in self.subscribed:
            for session in list(self.sessions):
                await session.send_resource_updated(uri)

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        if self.hold_lists is not None:
            await self.hold_lists.wait()
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + PAGE
        more = str(end) if end < len(self.resources) else None
        return types.ListResourcesResult(resources=self.resources[start:end], next_cursor=more)

    async def _list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=self.templates)

    async def _read(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = params.uri
        self.reads.append(uri)
        if uri == "note://missing":
            raise MCPError(code=types.INVALID_PARAMS, message="no note called missing", data={"uri": uri})
        if uri == "bin://logo.png":
            return types.ReadResourceResult(
                contents=[types.BlobResourceContents(uri=uri, blob=TINY_PNG, mime_type="image/png")]
            )
        contents: list[types.TextResourceContents | types.BlobResourceContents] = [
            types.TextResourceContents(uri=uri, text=f"{self.name} {uri}", mime_type="text/plain")
        ]
        if uri == "note://1":
            contents.append(types.TextResourceContents(uri="note://1/attachment", text="attached"))
        return types.ReadResourceResult(contents=contents, _meta={"example.com/read-by": self.name})

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=self.prompts)

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name == "fail":
            raise MCPError(code=types.INTERNAL_ERROR, message="the prompt is broken")
        who = (params.arguments or {}).get("who", "nobody")
        return types.GetPromptResult(
            description=f"{params.name} from {self.name}",
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(text=f"Hello {who} from {self.name}")),
                types.PromptMessage(
                    role="user",
                    content=types.EmbeddedResource(
                        resource=types.TextResourceContents(uri="note://1", text=f"{self.name} note://1")
                    ),
                ),
                types.PromptMessage(
                    role="assistant",
                    content=types.ResourceLink(name="first-note", uri="note://1", mime_type="text/plain"),
                ),
            ],
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self.sessions.add(ctx.session)
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        return types.ListToolsResult(
            tools=[
                types.Tool(name="add_note", description="Adds a note resource.", input_schema=schema),
                types.Tool(name="add_prompt", description="Adds a prompt.", input_schema=schema),
            ]
        )

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name = str((params.arguments or {})["name"])
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        if params.name == "add_note":
            self.resources.append(types.Resource(name=name, uri=f"note://{name}"))
            if modern:
                await self._bus.publish(ResourcesListChanged())
            else:
                await ctx.session.send_resource_list_changed()
        else:
            self.prompts.append(types.Prompt(name=name))
            if modern:
                await self._bus.publish(PromptsListChanged())
            else:
                await ctx.session.send_prompt_list_changed()
        return types.CallToolResult(content=[types.TextContent(text="added")])
