"""One upstream server: its connection, its state, and calls to its tools.

Each upstream runs as one task that owns its own exit stack: connecting,
listing tools, staying open, and tearing down all happen there, so one broken
server can fail or be dropped without touching the others.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, cast

import anyio
import anyio.abc
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolscout import __version__
from toolscout.catalog import Catalog
from toolscout.config.models import DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, AnyServerConfig
from toolscout.errors import CallTimeout, ServerUnavailable, UpstreamError
from toolscout.upstream.transport import UpstreamTransport, transport_for

logger = logging.getLogger(__name__)

MAX_TOOL_PAGES = 100
CLIENT_INFO = types.Implementation(name="toolscout", version=__version__)


class Status(StrEnum):
    CONNECTING = "connecting"
    CONNECTED = "connected"
    ERROR = "error"
    DISABLED = "disabled"


@dataclass(frozen=True)
class UpstreamSpec:
    """Everything needed to run one upstream: its name, how to reach it, and its limits."""

    name: str
    transport: UpstreamTransport
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    description: str | None = None
    disabled: bool = False
    protocol: str = "auto"
    static_tools: tuple[types.Tool, ...] = ()
    """Declared in the config: listed until the server's own list replaces them."""

    @classmethod
    def from_config(cls, name: str, config: AnyServerConfig) -> UpstreamSpec:
        return cls(
            name=name,
            transport=transport_for(name, config),
            call_timeout=config.timeout,
            connect_timeout=config.connect_timeout,
            description=config.description,
            disabled=config.disabled,
            protocol=config.protocol,
            static_tools=tuple(
                types.Tool(name=t.name, title=t.title, description=t.description, input_schema=t.input_schema)
                for t in config.tools
            ),
        )


@dataclass(frozen=True)
class ServerIdentity:
    """What the upstream said about itself when connecting."""

    name: str | None
    version: str | None
    title: str | None
    description: str | None
    instructions: str | None
    protocol_version: str


def describe_exception(exc: BaseException) -> str:
    """A one-line reason for a failure, from the innermost meaningful exception."""
    while isinstance(exc, BaseExceptionGroup):
        members: tuple[BaseException, ...] = cast(BaseExceptionGroup[BaseException], exc).exceptions
        cancelled = anyio.get_cancelled_exc_class()
        exc = next((e for e in members if not isinstance(e, cancelled)), members[0])
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc} (is it installed and on PATH?)"
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename or exc}"
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"HTTP {exc.response.status_code} from {exc.request.url}"
    if isinstance(exc, httpx2.ConnectError):
        return f"cannot connect: {exc}"
    if isinstance(exc, httpx2.TransportError):
        return f"HTTP transport error: {exc or type(exc).__name__}"
    if isinstance(exc, MCPError):
        return f"{exc.error.message} (MCP error {exc.error.code})"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Upstream:
    """A live (or failed, or disabled) upstream server."""

    def __init__(self, spec: UpstreamSpec, catalog: Catalog) -> None:
        self.spec = spec
        self.name = spec.name
        self._catalog = catalog
        self.status = Status.DISABLED if spec.disabled else Status.CONNECTING
        self.error: str | None = None
        self.identity: ServerIdentity | None = None
        self._client: Client | None = None
        self._settled = anyio.Event()
        self._changed = anyio.Event()
        self._wake = anyio.Event()
        self._lost = False
        self._refresh_requested = False
        self._scope: anyio.CancelScope | None = None
        self._stopping = False
        if spec.disabled:
            self._settled.set()
        else:
            self._list_declared_tools()

    @property
    def description(self) -> str:
        if self.spec.description:
            return self.spec.description
        identity = self.identity
        if identity is not None:
            return identity.description or identity.title or ""
        return ""

    async def run(self) -> None:
        """Connect, list tools, and stay connected until stopped or the connection is lost."""
        if self.spec.disabled or self._stopping:  # stopped before its task got to run
            return
        scope = anyio.CancelScope(deadline=anyio.current_time() + self.spec.connect_timeout)
        self._scope = scope
        failure: str | None = None
        try:
            with scope:
                async with AsyncExitStack() as stack:
                    client = Client(
                        self.spec.transport.target(self._on_closed),
                        mode=self.spec.protocol,
                        client_info=CLIENT_INFO,
                        message_handler=self._on_message,
                        cache=None,
                    )
                    await stack.enter_async_context(client)
                    async with anyio.create_task_group() as tg:
                        if self._announces_tool_changes(client):
                            # Subscribe before listing, so no change can fall between the two.
                            await tg.start(self._listen_for_tool_changes, client)
                        tools = await self._list_tools(client)
                        # Connected: from here on only stop() or a lost connection ends this.
                        scope.deadline = math.inf
                        self._connected(client, tools)
                        await self._serve(client)
                        tg.cancel_scope.cancel()
                    failure = "connection closed by the server"
        except Exception as exc:
            failure = describe_exception(exc)
        finally:
            self._client = None
            self._list_declared_tools()
        if self._stopping:
            return
        if scope.cancel_called and self.status is Status.CONNECTING:
            failure = f"did not finish connecting within {self.spec.connect_timeout:g}s"
        self._fail(failure or "stopped unexpectedly")

    def _list_declared_tools(self) -> None:
        if self.spec.static_tools:
            self._catalog.set_server_tools(self.name, self.spec.static_tools)
        else:
            self._catalog.drop_server(self.name)

    def stop(self) -> None:
        """End the connection; the run task tears everything down."""
        self._stopping = True
        if self._scope is not None:
            self._scope.cancel()

    async def wait_settled(self) -> None:
        """Wait until the server is connected, has failed, or is disabled (bound it with a cancel scope)."""
        await self._settled.wait()

    async def wait_changed(self) -> None:
        """Wait for the next change of status (connected, failed) or of the tool list."""
        await self._changed.wait()

    def _notify_changed(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Forward one call on the kept session; cancelled upstream after the server's timeout."""
        client = self._client
        if client is None:
            raise ServerUnavailable(
                f"Server {self.name!r} is {self.status.value}" + (f": {self.error}" if self.error else "."),
                server=self.name,
                tool=tool,
                status=self.status.value,
            )
        timeout = self.spec.call_timeout
        with anyio.move_on_after(timeout):
            try:
                return await client.call_tool(tool, arguments)
            except MCPError as exc:
                raise UpstreamError(
                    f"{self.name}.{tool} failed: {exc.error.message} (MCP error {exc.error.code})",
                    server=self.name,
                    tool=tool,
                    upstreamCode=exc.error.code,
                ) from None
            except Exception as exc:
                raise UpstreamError(
                    f"{self.name}.{tool} failed: {describe_exception(exc)}", server=self.name, tool=tool
                ) from None
        raise CallTimeout(
            f"{self.name}.{tool} did not answer within {timeout:g}s; the call was cancelled upstream. "
            f"Raise `timeout` for {self.name!r} in the config if the tool is expected to be slow.",
            server=self.name,
            tool=tool,
            timeoutSeconds=timeout,
        )

    async def _list_tools(self, client: Client) -> list[types.Tool]:
        capabilities = client.server_capabilities
        if capabilities.tools is None:
            return []
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        else:
            logger.warning("%s: stopped listing tools after %d pages", self.name, MAX_TOOL_PAGES)
        return tools

    def _connected(self, client: Client, tools: Sequence[types.Tool]) -> None:
        info = client.server_info
        self.identity = ServerIdentity(
            name=info.name if info else None,
            version=(info.version or None) if info else None,
            title=info.title if info else None,
            description=info.description if info else None,
            instructions=client.instructions,
            protocol_version=client.protocol_version,
        )
        self._client = client
        self._catalog.set_server_tools(self.name, tools)
        self.status = Status.CONNECTED
        self.error = None
        self._settled.set()
        self._notify_changed()
        logger.info(
            "%s: connected (%s, protocol %s), %d tools",
            self.name,
            self.spec.transport.label,
            client.protocol_version,
            len(tools),
        )

    async def _serve(self, client: Client) -> None:
        while not self._lost:
            await self._wake.wait()
            self._wake = anyio.Event()
            if self._refresh_requested and not self._lost:
                self._refresh_requested = False
                self._catalog.set_server_tools(self.name, await self._list_tools(client))
                self._notify_changed()
                logger.info("%s: tool list changed, now %d tools", self.name, self._catalog.counts(self.name)[0])

    @staticmethod
    def _announces_tool_changes(client: Client) -> bool:
        # Handshake-era servers push notifications/tools/list_changed on their own (see _on_message);
        # on 2026-07-28 they arrive only on a subscriptions/listen stream we open.
        tools = client.server_capabilities.tools
        return client.protocol_version in MODERN_PROTOCOL_VERSIONS and tools is not None and bool(tools.list_changed)

    async def _listen_for_tool_changes(
        self, client: Client, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        started = False
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                task_status.started()
                started = True
                async for _ in subscription:
                    self._request_refresh()
        except Exception as exc:
            # Without the stream the catalog can go stale, but the server itself still works.
            logger.warning("%s: stopped listening for tool changes: %s", self.name, describe_exception(exc))
        if not started:
            task_status.started()

    def _request_refresh(self) -> None:
        self._refresh_requested = True
        self._wake.set()

    def _fail(self, reason: str) -> None:
        detail = self.spec.transport.diagnostics()
        self.error = f"{reason}; last output: {detail}" if detail else reason
        self.status = Status.ERROR
        self._settled.set()
        self._notify_changed()
        logger.warning("%s: %s (%s)", self.name, self.error, self.spec.transport.label)

    def _on_closed(self) -> None:
        self._lost = True
        self._wake.set()

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._request_refresh()
        elif isinstance(message, Exception):
            logger.debug("%s: transport reported %r", self.name, message)
