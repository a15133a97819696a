"""How the gateway reaches one upstream server: the `UpstreamTransport` seam, a server run in-process,
a remote server over streamable HTTP or SSE, and a tool registered as a callback URL.

Each `UpstreamTransport` hands `mcp.Client` a fresh target per connection attempt: a stdio child
(stdio_child.py), streamable HTTP or SSE (`RemoteUpstream`), a low-level server run in-process
(`InProcessUpstream`), or the one-tool server of a callback tool (`CallbackToolUpstream`).
Stream-based targets are wrapped (`watched`) so the connection notices when the peer goes away (a
child that exits, a dropped HTTP stream) instead of finding out at the next call.

HTTP and SSE upstreams, and the callback tools' POSTs, share one SSL context, built once in a worker
thread when the first of them connects, instead of one per client: each costs CPU time on the event
loop and memory.

A callback tool is a tool registered at run time with a callback URL (what the registration API
calls register-component), served as a real MCP server of one tool, in-process: listing it answers its
registered definition, and calling it POSTs the arguments as a JSON object to the URL, whose answer
must be an MCP tool result (`{"content": [...], "structuredContent"?, "isError"?}`). Being an MCP
server like any other, the tool goes through the gateway's one path: the catalog and search index,
scopes, argument validation against its input schema (before anything is POSTed), output caps and
the audit log. Whatever goes wrong at the callback (refused, unreachable, too slow, a non-2xx
status, an answer that is not a tool result) comes back as an `isError` result saying so.
"""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.to_thread
import mcp_types as types
from pydantic import ValidationError

from toolscout.config.models import HttpServerConfig, SseServerConfig
from toolscout.masking import mask_text
from toolscout.streams import ReceiveIteration
from toolscout.upstream.oauth import sends_own_authorization

if TYPE_CHECKING:
    # The SDK and httpx2 are imported where a connection or a callback is made (connection.py says why).
    import httpx2
    from mcp.client import Transport
    from mcp.server import MCPServer, Server
    from mcp.server.context import ServerRequestContext
    from mcp.shared.message import SessionMessage

    from toolscout.errors import SignInRequired
    from toolscout.upstream._sdk import HttpClientFactory, SessionReadStream, SessionStreams
    from toolscout.upstream.oauth import ScopeChallenge, SignInFile

    UpstreamTarget = Transport | Server[Any] | MCPServer
    """What `mcp.Client` connects to: a stream transport, or a server (low-level or `MCPServer`) run in-process."""


class UpstreamTransport(Protocol):
    """How to reach one upstream server."""

    @property
    def label(self) -> str:
        """A short description for logs and error messages, e.g. `stdio: mcp-server-time`, secrets masked."""
        ...

    def target(self, on_closed: Callable[[], None]) -> UpstreamTarget:
        """A fresh, not yet entered target; `on_closed` runs when its peer goes away."""
        ...

    def diagnostics(self) -> str | None:
        """What the upstream said last that may explain a failure (its stderr tail), if anything."""
        ...


class _WatchedReadStream(ReceiveIteration):
    """Delegates to a read stream and reports its end of stream once."""

    def __init__(self, inner: SessionReadStream[SessionMessage | Exception], on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:  # the dispatcher reads the sender's context from here when present
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


@contextlib.asynccontextmanager
async def watched(transport: Transport, on_closed: Callable[[], None]) -> AsyncGenerator[SessionStreams]:
    """`transport`'s streams, its read stream reporting its end to `on_closed` (the peer went away)."""
    async with transport as (read_stream, write_stream):
        yield _WatchedReadStream(read_stream, on_closed), write_stream


class InProcessUpstream:
    """An SDK server (low-level `Server` or `MCPServer`) run inside the gateway's process (tests, embedding)."""

    def __init__(self, server: Server[Any] | MCPServer) -> None:
        self._server = server

    @property
    def label(self) -> str:
        return f"in-process: {self._server.name}"

    def diagnostics(self) -> str | None:
        return None

    def target(self, on_closed: Callable[[], None]) -> UpstreamTarget:
        return self._server


_ssl_context: ssl.SSLContext | None = None
_ssl_lock = threading.Lock()


def _build_ssl_context() -> ssl.SSLContext:
    global _ssl_context
    import httpx2

    with _ssl_lock:
        if _ssl_context is None:
            _ssl_context = httpx2.create_ssl_context()
        return _ssl_context


async def shared_ssl_context() -> ssl.SSLContext:
    """The SSL context of every HTTP and SSE upstream, built once, in a worker thread, on first use.

    It is what httpx2 builds for each client by default (`verify=True`: `SSL_CERT_FILE` or
    `SSL_CERT_DIR` when set, the system's CA store otherwise; certificates and host names
    verified), so verification is as before. `http://` URLs get it too: the SDK follows a
    redirect to `https://` on the same host.
    """
    if _ssl_context is not None:
        return _ssl_context
    return await anyio.to_thread.run_sync(_build_ssl_context, abandon_on_cancel=True)


def _client_factory(verify: ssl.SSLContext) -> HttpClientFactory:
    """The SDK's `create_mcp_http_client` (its timeouts, no redirects), with `verify` as its SSL context."""
    import httpx2

    from toolscout.upstream._sdk import SDK_HTTP_TIMEOUT, SDK_SSE_READ_TIMEOUT

    def create(
        headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
    ) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout or httpx2.Timeout(SDK_HTTP_TIMEOUT, read=SDK_SSE_READ_TIMEOUT),
            auth=auth,
            verify=verify,
        )

    return create


class RemoteUpstream:
    """A server reached over the network: streamable HTTP, or the legacy HTTP+SSE transport.

    Every connection carries the server's OAuth sign-in (oauth.py): the kept access token, refreshed
    as needed, and `SignInRequired` when the server asks for a sign-in that is missing or ended.
    """

    def __init__(
        self, config: HttpServerConfig | SseServerConfig, name: str | None = None, *, auth: httpx2.Auth | None = None
    ) -> None:
        self._sse = isinstance(config, SseServerConfig)
        self._given_auth = auth
        """The auth every connection uses instead of the kept sign-in's (`toolscout auth login`'s own)."""
        self._url = config.url
        self._headers = dict(config.headers) or None
        self._name = name
        self._oauth = config.oauth
        self._static_authorization = sends_own_authorization(config.headers)
        self.sign_in_required: SignInRequired | None = None
        """Why the current connection's server asked for a sign-in that is missing or ended, if it did."""
        self.scope_challenges: dict[str, ScopeChallenge] = {}
        """The last 403 `insufficient_scope` to each request (by `request_name`), until its failure is reported."""

    def sign_in_file(self) -> SignInFile | None:
        """Where this server's sign-in is kept (None: a server without a name, made outside a config)."""
        from toolscout.upstream.oauth import SignInFile

        return SignInFile.of(self._name, self._url) if self._name is not None else None

    async def wait_for_sign_in(self) -> None:
        """Return once the server's sign-in is written anew (`toolscout auth login`, in any process)."""
        file = self.sign_in_file()
        if file is None:
            await anyio.sleep_forever()
            return
        before = file.stamp()
        while True:
            await anyio.sleep(SIGN_IN_POLL)
            if file.stamp() != before:
                return

    @property
    def label(self) -> str:
        return f"{'sse' if self._sse else 'http'}: {mask_text(self._url)}"

    def diagnostics(self) -> str | None:
        return None

    def target(self, on_closed: Callable[[], None]) -> UpstreamTarget:
        self.sign_in_required = None
        return watched(self._open(), on_closed)

    @contextlib.asynccontextmanager
    async def _open(self) -> AsyncGenerator[SessionStreams]:
        from mcp.client.sse import sse_client
        from mcp.client.streamable_http import streamable_http_client

        factory = _client_factory(await shared_ssl_context())
        auth = self._auth()
        if self._sse:
            async with sse_client(self._url, headers=self._headers, auth=auth, httpx_client_factory=factory) as streams:
                yield streams
            return
        async with (
            factory(headers=self._headers, auth=auth) as http,
            # No cap on one SSE event: a tool's result is one event, and the SDK's 1 MiB default
            # would turn any larger result into a lost connection. Output caps apply downstream.
            streamable_http_client(self._url, http_client=http, max_sse_event_size=None) as streams,
        ):
            yield streams

    def _auth(self) -> httpx2.Auth | None:
        if self._given_auth is not None or self._name is None:
            return self._given_auth
        from toolscout.upstream.oauth_client import upstream_oauth

        return upstream_oauth(
            self._name,
            self._url,
            self._oauth,
            static_authorization=self._static_authorization,
            on_required=self._required,
            on_step_up=self._stepping_up,
        )

    def _required(self, error: SignInRequired) -> None:
        self.sign_in_required = error

    def _stepping_up(self, challenge: ScopeChallenge) -> None:
        if challenge.request is not None:
            self.scope_challenges[challenge.request] = challenge


SIGN_IN_POLL = 1.0
"""Seconds between two looks at a server's sign-in file while it needs login (a `stat`, nothing more)."""
MAX_ANSWER_BYTES = 16 * 1024 * 1024
"""The largest callback answer read; a larger one is an error result (output caps apply downstream)."""
_PARSED_ON_LOOP_BYTES = 64 * 1024
"""A callback answer larger than this is parsed in a worker thread, so that other clients are answered meanwhile."""
_QUOTED_BODY_CHARS = 300
"""How much of a failed callback's body an error result quotes."""


def _failed(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def _quote(body: bytes) -> str:
    text = body[:_QUOTED_BODY_CHARS].decode("utf-8", errors="replace").strip()
    return mask_text(text) + ("…" if len(body) > _QUOTED_BODY_CHARS else "")


def tool_result(status: int, body: bytes) -> types.CallToolResult:
    """What a callback's answer (`status`, `body`) means as a tool result."""
    if not 200 <= status < 300:
        said = f": {_quote(body)}" if body.strip() else ""
        return _failed(f"The tool's callback answered HTTP {status}{said}")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        problem = "is not JSON"
    else:
        try:
            return types.CallToolResult.model_validate(data)
        except ValidationError as exc:
            problem = f"is not an MCP tool result ({exc.error_count()} problem(s), first: {exc.errors()[0]['msg']})"
    return _failed(
        f'The tool\'s callback answered with a body that {problem}; it must answer {{"content": [...]}} '
        f"(optionally structuredContent and isError). It said: {_quote(body)}"
    )


async def post_arguments(url: str, arguments: Mapping[str, Any], *, within: float, tool: str) -> types.CallToolResult:
    """POST `arguments` to the callback `url` and turn its answer into a tool result (never raises
    for anything the callback does)."""
    import httpx2

    shown = mask_text(url)
    try:
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(within), verify=await shared_ssl_context()) as http,
            http.stream(
                "POST",
                url,
                json=dict(arguments),
                headers={"accept": "application/json", "x-toolscout-tool": tool},
            ) as response,
        ):
            too_large = _failed(
                f"The tool's callback at {shown} answered more than {MAX_ANSWER_BYTES} bytes, the most a "
                "callback may answer; it must answer a smaller tool result."
            )
            declared = response.headers.get("content-length", "")
            if declared.strip().isdigit() and int(declared) > MAX_ANSWER_BYTES:
                return too_large  # refused before a byte of it is read
            # Read into one growing buffer (never `bytes +=`, which copies it all for every chunk),
            # and no further than the cap, whatever the header said.
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_ANSWER_BYTES:
                    return too_large
        if len(body) > _PARSED_ON_LOOP_BYTES:  # parsing and validating a large answer: off the event loop
            return await anyio.to_thread.run_sync(tool_result, response.status_code, bytes(body))
        return tool_result(response.status_code, bytes(body))
    except httpx2.TimeoutException:
        return _failed(f"The tool's callback at {shown} did not answer within {within:g}s.")
    except httpx2.HTTPError as exc:
        reason = mask_text(str(exc)) or type(exc).__name__
        return _failed(f"The tool's callback at {shown} could not be reached: {reason}")


def callback_server(
    name: str,
    description: str,
    input_schema: Mapping[str, Any],
    callback_url: str,
    *,
    timeout: float,
) -> Server[Any]:
    """An MCP server (low-level, run in-process) whose one tool, `name`, POSTs to `callback_url`."""
    from mcp.server import Server

    tool = types.Tool(name=name, description=description, input_schema=dict(input_schema))

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name != name:  # the gateway sends only names this server listed; a direct client might not
            return _failed(f"Unknown tool {params.name!r}: this server has only {name!r}.")
        return await post_arguments(callback_url, params.arguments or {}, within=timeout, tool=name)

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


class CallbackToolUpstream:
    """The `UpstreamTransport` of a callback tool: its one-tool server, run in-process."""

    def __init__(self, server: Server[Any], callback_url: str) -> None:
        self._server = server
        self._url = callback_url

    @property
    def label(self) -> str:
        return f"callback: {mask_text(self._url)}"

    def diagnostics(self) -> str | None:
        return None

    def target(self, on_closed: Callable[[], None]) -> UpstreamTarget:
        return self._server
