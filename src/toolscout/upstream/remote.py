"""A remote upstream: streamable HTTP, or the legacy HTTP+SSE transport.

HTTP and SSE upstreams share one SSL context, built once in a worker thread when the first of
them connects, instead of one per client (each costs 20+ ms of CPU on the event loop and 850 KiB).
"""

from __future__ import annotations

import contextlib
import ssl
import threading
from collections.abc import AsyncGenerator, Callable

import anyio.to_thread
import httpx2
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from toolscout.config.models import HttpServerConfig, SseServerConfig
from toolscout.masking import mask_text
from toolscout.upstream._sdk import SDK_HTTP_TIMEOUT, SDK_SSE_READ_TIMEOUT, HttpClientFactory, SessionStreams
from toolscout.upstream.transport import UpstreamTarget, watched

_ssl_context: ssl.SSLContext | None = None
_ssl_lock = threading.Lock()


def _build_ssl_context() -> ssl.SSLContext:
    global _ssl_context
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
    """A server reached over the network: streamable HTTP, or the legacy HTTP+SSE transport."""

    def __init__(self, config: HttpServerConfig | SseServerConfig) -> None:
        self._sse = isinstance(config, SseServerConfig)
        self._url = config.url
        self._headers = dict(config.headers) or None

    @property
    def label(self) -> str:
        return f"{'sse' if self._sse else 'http'}: {mask_text(self._url)}"

    def diagnostics(self) -> str | None:
        return None

    def target(self, on_closed: Callable[[], None]) -> UpstreamTarget:
        return watched(self._open(), on_closed)

    @contextlib.asynccontextmanager
    async def _open(self) -> AsyncGenerator[SessionStreams]:
        factory = _client_factory(await shared_ssl_context())
        if self._sse:
            async with sse_client(self._url, headers=self._headers, httpx_client_factory=factory) as streams:
                yield streams
            return
        async with (
            factory(headers=self._headers) as http,
            # No cap on one SSE event: a tool's result is one event, and the SDK's 1 MiB default
            # would turn any larger result into a lost connection. Output caps apply downstream.
            streamable_http_client(self._url, http_client=http, max_sse_event_size=None) as streams,
        ):
            yield streams
