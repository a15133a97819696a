"""The gateway's MCP server: the tools of the configured mode (`toolscout.modes`), and every
upstream's resources and prompts (`toolscout.resources`, the same in every mode), as one low-level SDK
server whose handlers are the methods of `GatewayServer`; the edge where toolscout's errors become MCP
errors and `isError` results. What its `tools/list` costs an agent in tokens is modes/costs.py's.

List-change notices are notifications.py's; serving the server on stdio or HTTP is http.py's.
Building a server has no effect on the gateway: what it follows there (resource updates, evicted HTTP
clients, catalog changes) it follows while it serves, from its lifespan, and lets go of when serving
ends.

This module is the only place a `ToolscoutError` becomes an MCP error or an `isError` result:

* A tool call (`tools/call`) that fails becomes an `isError` result with
  `structuredContent: {"success": false, "error": {...}}`, its next steps worded for the tools the
  agent has (`call_result`). An upstream's own protocol error on one of its own tools (passthrough,
  a loaded tool) is passed on as the same MCP error (`passed_on`); a name the client's tool list
  does not have is the protocol's unknown tool, -32602 (`unknown_tool_error`).
* Any other request (resources, prompts, completions, subscriptions) that fails becomes an MCP
  error with the error as `data` (`mcp_errors`); an upstream's own error keeps its code.
* A bug of ours becomes a clear failure for the client and a traceback for the log, never a
  session taken down.
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server import NotificationOptions, Server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolscout import __version__
from toolscout.catalog import ListName
from toolscout.config.models import ModeName
from toolscout.config.scopes import UNSCOPED, scoped
from toolscout.errors import (
    AGENT_STEPS,
    AmbiguousName,
    InvalidArguments,
    Phrasing,
    PromptDisabled,
    PromptNotFound,
    ResourceDisabled,
    ResourceNotFound,
    ServerNotFound,
    ToolNotFound,
    ToolscoutError,
    UpstreamRefused,
)
from toolscout.gateway.core import Gateway
from toolscout.modes.base import Surface, SurfaceOptions, make_surface
from toolscout.modes.client import digest_off_loop
from toolscout.naming import call_target
from toolscout.registry.base import SharedClientState, SharedConfirmations
from toolscout.render.text import error_text
from toolscout.resources.core import complete
from toolscout.serve.auth import principal_of
from toolscout.serve.notifications import UNSUBSCRIBE_WAIT, ResourceSubscriptions, watching_changes
from toolscout.serve.rounds import Rounds
from toolscout.serve.sessions import ClientSessions, ClientState, ConnectionScope, Context, SharedLoads
from toolscout.serve.telemetry import PassedOn, observed
from toolscout.smart.confirmation import Confirmations
from toolscout.suggestions import unknown_tool
from toolscout.upstream.calls import relaying

logger = logging.getLogger(__name__)

R = TypeVar("R")
P = TypeVar("P")
ItemT = TypeVar("ItemT", types.Resource, types.ResourceTemplate, types.Prompt)


def under_scope(handler: Callable[[Context, P], Awaitable[R]]) -> Callable[[Context, P], Awaitable[R]]:
    """Return `handler` run under the scope of the principal its request is from (`UNSCOPED` on stdio, in
    process, and for a principal that sees everything: then at no cost at all)."""

    async def run(ctx: Context, params: P) -> R:
        scope = principal_of(ctx.request).scope
        if scope is UNSCOPED:
            return await handler(ctx, params)
        with scoped(scope):
            return await handler(ctx, params)

    return run


class GatewayServer(Server[ConnectionScope]):
    """The SDK's low-level server exposing a gateway through one surface, with the capabilities
    toolscout really has.

    `tools.listChanged` only when the surface's list can change; `resources.listChanged` and
    `prompts.listChanged` always (upstreams come, go and change them); `resources.subscribe`
    always (passed on to the upstream that owns the resource; one that cannot says so). The SDK
    derives capabilities here both for the handshake (from `create_initialization_options`, which
    streamable HTTP calls with no arguments) and for `server/discover` at 2026-07-28, where it
    would otherwise set every flag from serving `subscriptions/listen`.
    """

    def __init__(
        self,
        gateway: Gateway,
        mode: ModeName = "discovery",
        options: SurfaceOptions | None = None,
        *,
        sessions: ClientSessions | None = None,
        shared: SharedClientState | None = None,
        replica: str | None = None,
    ) -> None:
        self.gateway = gateway
        options = options or SurfaceOptions()
        if options.confirmations is None and isinstance(shared, SharedConfirmations):
            # Replicas sharing the registry sign smart mode's confirmation ids with one key, and spend
            # them in one place: an id one proposed is honoured by another, once.
            ledger = Confirmations(shared, ttl=options.smart.confirmation_ttl)
            options = dataclasses.replace(options, confirmations=ledger)
        self.surface: Surface = make_surface(mode, gateway, options)
        self.clients = sessions or ClientSessions()
        # Dynamic mode's loaded tools, through the registry when replicas share one (`SharedLoads`, sessions.py).
        self.loads = SharedLoads(shared) if shared is not None and mode == "dynamic" else None
        self.subscriptions = ResourceSubscriptions(gateway.mirror, self.clients)
        self.rounds = Rounds(gateway, replica=replica)
        # The five meta-tools (smart mode's one tool) never change; the others follow the catalog or the client
        # (`run_code`'s annotations follow the tools it can reach).
        self.tools_changed = mode not in ("discovery", "smart") or (mode == "discovery" and options.code_tool)
        self._serving = 0
        """Lifespans entered and not yet left: one per connection on stdio and in process, one on HTTP."""
        self._stop_following: list[Callable[[], None]] = []

        def served(method: str, handler: Callable[[Context, P], Awaitable[R]]) -> Callable[[Context, P], Awaitable[R]]:
            return observed(method, under_scope(handler), gateway.metrics)

        with warnings.catch_warnings():
            # Logging is deprecated at 2026-07-28, but handshake-era clients still set their level,
            # and a server that sends them upstream logs must declare the capability.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            super().__init__(  # pyright: ignore[reportDeprecated]
                "toolscout",
                version=__version__,
                title="toolscout MCP gateway",
                instructions=self.surface.instructions,
                lifespan=lambda _: self.serving(),
                # Every request is served under its principal's scope (config/scopes.py), and timed
                # into the gateway's metrics (serve/telemetry.py).
                on_list_tools=served("tools/list", self.on_list_tools),
                on_call_tool=served("tools/call", self.on_call_tool),
                on_set_logging_level=served("logging/setLevel", self.on_set_logging_level),
                on_list_resources=served("resources/list", self.on_list_resources),
                on_list_resource_templates=served("resources/templates/list", self.on_list_resource_templates),
                on_read_resource=served("resources/read", self.on_read_resource),
                on_list_prompts=served("prompts/list", self.on_list_prompts),
                on_get_prompt=served("prompts/get", self.on_get_prompt),
                on_subscribe_resource=served("resources/subscribe", self.on_subscribe_resource),
                on_unsubscribe_resource=served("resources/unsubscribe", self.on_unsubscribe_resource),
                on_completion=served("completion/complete", self.on_completion),
                # Always: resource and prompt lists change in every mode (tools too, except in discovery).
                on_subscriptions_listen=served("subscriptions/listen", self.subscriptions.listen),
            )

    def get_capabilities(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        *,
        protocol_version: str | None = None,
    ) -> types.ServerCapabilities:
        capabilities = super().get_capabilities(
            notification_options, experimental_capabilities, extensions, protocol_version=protocol_version
        )
        update: dict[str, Any] = {}
        if capabilities.tools is not None:
            update["tools"] = types.ToolsCapability(list_changed=self.tools_changed)
        if capabilities.resources is not None:
            update["resources"] = types.ResourcesCapability(subscribe=True, list_changed=True)
        if capabilities.prompts is not None:
            update["prompts"] = types.PromptsCapability(list_changed=True)
        return capabilities.model_copy(update=update)

    # Serving

    @asynccontextmanager
    async def serving(self) -> AsyncGenerator[ConnectionScope]:
        """One connection's lifespan (stdio, in process), or all of HTTP's: its client's state, the
        gateway's updates and evictions followed, and its clients told of list changes meanwhile."""
        scope = ConnectionScope()
        if self._serving == 0:  # followed once however many connections are served at once
            self._stop_following = [
                self.gateway.mirror.follow_updates(self.subscriptions.updated),
                self.clients.follow_evictions(self.subscriptions.drop_soon),
            ]
        self._serving += 1
        try:
            async with watching_changes(
                self.gateway, self.surface, self.clients, scope, tools_change=self.tools_changed
            ):
                yield scope
        finally:
            self._serving -= 1
            # Subscriptions of clients that are gone: this connection's, or every HTTP client's
            # once the last lifespan ends (on HTTP, serving is over).
            gone = [scope.client] if self._serving else [scope.client, *self.clients.http_states()]
            with anyio.move_on_after(UNSUBSCRIBE_WAIT, shield=True):
                for state in gone:
                    await self.subscriptions.drop(state)
            if self._serving == 0:
                for stop in self._stop_following:
                    stop()

    async def _relayed(
        self,
        ctx: Context,
        state: ClientState,
        params: types.InputResponseRequestParams,
        work: Callable[[], Awaitable[R]],
    ) -> R | types.InputRequiredResult:
        """Run `work()` with the way back to this request's client (upstream/calls.py): in rounds at
        2026-07-28 (rounds.py)."""
        relay = self.clients.relay(ctx, state)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return await self.rounds.run(state, relay, ctx.session.client_capabilities, params, work)
        with relaying(relay):
            return await work()

    # Tools: the surface's

    async def on_list_tools(self, ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        """Answer `tools/list` with the surface's tools for this client."""
        state = self.clients.state(ctx)
        if self.loads is not None:
            await self.loads.pull(ctx, state)
        tools = await self.surface.tools(state)
        if self.tools_changed:  # the digest is only ever compared when the list can change
            state.fetched("tools", await digest_off_loop(tools))
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(
        self, ctx: Context, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Answer `tools/call` by running it on the surface; a failure is an `isError` result (`call_result`)."""
        arguments = params.arguments or {}
        context = call_target(arguments)
        client = self.clients.state(ctx)
        before = await self.loads.pull(ctx, client) if self.loads is not None else ()
        try:
            outcome = await call_result(
                lambda: self._relayed(ctx, client, params, lambda: self.surface.call(client, params.name, arguments)),
                tool=params.name,
                native=self.surface.native(params.name),
                next_steps=self.surface.next_steps,
                context=context,
            )
        finally:
            if self.loads is not None:
                await self.loads.push(ctx, client, before)
            await self.clients.announce(ctx, client)
        if outcome is None:
            unknown = unknown_tool(params.name, [t.name for t in await self.surface.tools(client)])
            if self.surface.native(params.name):  # meant for an upstream: audited as refused
                with relaying(self.clients.relay(ctx, client)):
                    await self.gateway.record_refused({"tool": params.name, "arguments": arguments}, unknown)
            raise unknown_tool_error(unknown)
        return outcome

    # Resources and prompts: every upstream's, whatever the mode

    async def _listed(
        self,
        ctx: Context,
        params: types.PaginatedRequestParams | None,
        name: ListName,
        method: str,
        fetch: Callable[[], Awaitable[list[ItemT]]],
    ) -> list[ItemT]:
        """One of the mirror's lists, in one page, remembered as what this client was shown."""
        refuse_cursor(params)
        with mcp_errors(method):
            items = await fetch()
        self.clients.state(ctx).fetched(name, await digest_off_loop(items))
        return items

    async def on_list_resources(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        """Answer `resources/list` with every upstream's resources, under gateway URIs."""
        resources = await self._listed(ctx, params, "resources", "resources/list", self.gateway.mirror.resources)
        return types.ListResourcesResult(resources=resources)

    async def on_list_resource_templates(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        """Answer `resources/templates/list` with every upstream's templates."""
        templates = await self._listed(
            ctx, params, "resource_templates", "resources/templates/list", self.gateway.mirror.resource_templates
        )
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def on_read_resource(
        self, ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        """Answer `resources/read` from the upstream that owns the URI."""
        with mcp_errors("resources/read"):
            return await self._relayed(
                ctx, self.clients.state(ctx), params, lambda: self.gateway.mirror.read(params.uri)
            )

    async def on_list_prompts(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        """Answer `prompts/list` with every upstream's prompts, named `server__prompt`."""
        prompts = await self._listed(ctx, params, "prompts", "prompts/list", self.gateway.mirror.prompts)
        return types.ListPromptsResult(prompts=prompts)

    async def on_get_prompt(
        self, ctx: Context, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        """Answer `prompts/get` from the upstream that has the prompt."""
        with mcp_errors("prompts/get"):
            return await self._relayed(
                ctx,
                self.clients.state(ctx),
                params,
                lambda: self.gateway.mirror.get_prompt(params.name, params.arguments),
            )

    async def on_subscribe_resource(self, ctx: Context, params: types.SubscribeRequestParams) -> types.EmptyResult:
        """Answer `resources/subscribe` (handshake era) by passing it on to the upstream that owns the resource."""
        with mcp_errors("resources/subscribe"):
            await self.subscriptions.subscribe(self.clients.state(ctx), params.uri)
        return types.EmptyResult()

    async def on_unsubscribe_resource(self, ctx: Context, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        """Answer `resources/unsubscribe` (handshake era)."""
        with mcp_errors("resources/unsubscribe"):
            await self.subscriptions.unsubscribe(self.clients.state(ctx), params.uri)
        return types.EmptyResult()

    async def on_completion(self, ctx: Context, params: types.CompleteRequestParams) -> types.CompleteResult:
        """Answer `completion/complete` by asking the upstream that has the prompt or template."""
        with mcp_errors("completion/complete"), relaying(self.clients.relay(ctx, self.clients.state(ctx))):
            return await complete(self.gateway.mirror, params)

    async def on_set_logging_level(self, ctx: Context, params: types.SetLevelRequestParams) -> types.EmptyResult:
        """Answer `logging/setLevel` (handshake era): set the least severe upstream log passed on to this client."""
        self.clients.state(ctx).log_level = params.level
        return types.EmptyResult()


def build_server(
    gateway: Gateway,
    mode: ModeName = "discovery",
    options: SurfaceOptions | None = None,
    *,
    sessions: ClientSessions | None = None,
    shared: SharedClientState | None = None,
    replica: str | None = None,
) -> GatewayServer:
    """The MCP server exposing `gateway` through the surface of `mode`, and every upstream's
    resources and prompts whatever the mode (nothing happens until it serves)."""
    return GatewayServer(gateway, mode, options, sessions=sessions, shared=shared, replica=replica)


# Errors at the edge


def error_result(error: ToolscoutError, next_steps: Phrasing = AGENT_STEPS, /, **context: str) -> types.CallToolResult:
    """A failed meta-tool call as the agent sees it (`next_steps` in terms of the tools it has)."""
    payload = {**{k: v for k, v in context.items() if k not in error.details}, **error.to_dict(next_steps)}
    return types.CallToolResult(
        content=[types.TextContent(text=error_text(payload))],
        structured_content={"success": False, "error": payload},
        is_error=True,
    )


_INVALID_PARAMS_ERRORS = (
    AmbiguousName,
    ServerNotFound,
    ResourceNotFound,
    ResourceDisabled,
    PromptNotFound,
    PromptDisabled,
    InvalidArguments,
)
"""What the spec answers with -32602 (an unknown resource or prompt); other failures are -32603."""


def mcp_error(error: ToolscoutError) -> MCPError:
    """A failed resources/prompts request as the client sees it: an upstream's own error keeps its code."""
    upstream = error.details.get("upstreamCode")
    if isinstance(upstream, int):
        code = upstream
    else:
        code = types.INVALID_PARAMS if isinstance(error, _INVALID_PARAMS_ERRORS) else types.INTERNAL_ERROR
    return MCPError(code=code, message=error.explain(), data=error.to_dict())


def passed_on(error: UpstreamRefused) -> MCPError:
    """An upstream's own protocol error on one of its tools, as that upstream sent it (code, message, data)."""
    code = error.details.get("upstreamCode")
    return PassedOn(
        code=code if isinstance(code, int) else types.INTERNAL_ERROR,
        message=error.upstream_message,
        data=error.details.get("upstreamData"),
    )


def unknown_tool_error(error: ToolNotFound) -> MCPError:
    """A `tools/call` name the client's tool list does not have: the protocol's unknown tool (-32602)."""
    return MCPError(code=types.INVALID_PARAMS, message=error.message)


def internal_failure(what: str, exc: Exception) -> str:
    """A bug of ours while serving `what`: logged with its traceback, and said to the client in one line."""
    logger.exception("%s failed unexpectedly", what)
    return f"Internal error in {what}: {type(exc).__name__}: {exc}"


@contextmanager
def mcp_errors(method: str) -> Generator[None]:
    """Turn what goes wrong while serving `method` into an MCP error with a clear message."""
    try:
        yield
    except ToolscoutError as exc:
        raise mcp_error(exc) from None
    except MCPError:
        raise
    except Exception as exc:  # a bug of ours: a clear failure for the client, the traceback for the log
        raise MCPError(code=types.INTERNAL_ERROR, message=internal_failure(method, exc)) from None


def refuse_cursor(params: types.PaginatedRequestParams | None) -> None:
    """Refuse a list request's cursor: toolscout answers every list in one page, so none is ever valid."""
    if params is not None and params.cursor is not None:
        raise MCPError(code=types.INVALID_PARAMS, message="Unknown cursor: toolscout answers every list in one page.")


async def call_result(
    call: Callable[[], Awaitable[R]],
    *,
    tool: str,
    native: bool,
    next_steps: Phrasing,
    context: Mapping[str, str],
) -> R | types.CallToolResult:
    """What `call()` (one `tools/call` of `tool`) returns, or its failure as the agent sees it.

    `native`: the name is an upstream's own tool (passthrough, a loaded tool), whose upstream's
    protocol error is passed on as it was. `context` (the server and tool the agent named) goes
    into the error where the error itself does not say.
    """
    try:
        return await call()
    except UpstreamRefused as exc:
        if native:
            raise passed_on(exc) from None
        return error_result(exc, next_steps, **context)
    except ToolscoutError as exc:
        return error_result(exc, next_steps, **context)
    except MCPError:  # a protocol error of the request itself (rounds.py)
        raise
    except Exception as exc:
        # A bug of ours must not take the session down; the agent gets a clear failure instead.
        return error_result(ToolscoutError(internal_failure(tool, exc)), next_steps, **context)
