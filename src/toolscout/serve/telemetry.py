"""The MCP face's metrics and trace attributes, the HTTP edge's refusals counted, and `/metrics`.

Every MCP request the face serves is timed by `observed` (the wrapper `GatewayServer` puts around
each handler), into `mcp_server_operation_duration_seconds` with its method, its tool (`tools/call`)
and how it ended: empty when it succeeded, `tool_error` for an `isError` result, a JSON-RPC error by
its name (`invalid_params`...), `cancelled`. A tool name is a label only when the face knew the tool
(it answered the call, or passed on the upstream's own error on it), and only for the first
`MAX_TOOL_LABELS` names (telemetry/metrics.py): a client calling made-up names gets `_OTHER`, never
a series of its own.

While traces are exported, the same wrapper adds `mcp.session.id` and `network.transport` to the
span the SDK opened for the request (telemetry/tracing.py).

`/metrics` is answered to an admin (or to anyone while the gateway authenticates no one); with
`telemetry.metrics.public`, to anyone at all, without a credential.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import mcp_types as types
from mcp.shared.exceptions import MCPError
from opentelemetry import trace
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolscout.serve.auth import Principal, PrincipalRefused, PrincipalResolver, error_response, peer_of, principal_of
from toolscout.serve.sessions import Context
from toolscout.telemetry.metrics import CONTENT_TYPE, OTHER, TOOL_ERROR, Metrics, jsonrpc_error_type
from toolscout.telemetry.tracing import tracing_active

P = TypeVar("P")
R = TypeVar("R")

METRICS_PATH = "/metrics"


class PassedOn(MCPError):
    """An upstream's own protocol error on one of its tools, passed on to the client as it came
    (serve/server.py's `passed_on`): the tool was known."""


def observed(
    method: str, handler: Callable[[Context, P], Awaitable[R]], metrics: Metrics
) -> Callable[[Context, P], Awaitable[R]]:
    """Return `handler` timed as `method` into `metrics` (nothing more when they are off), its span
    described while traces are exported."""
    record = metrics.operations.observe if metrics.enabled else None
    calls_tool = method == "tools/call"

    async def run(ctx: Context, params: P) -> R:
        if tracing_active():
            describe_span(ctx)
        if record is None:
            return await handler(ctx, params)
        started = time.perf_counter()
        known, error = False, "cancelled"
        try:
            result = await handler(ctx, params)
            known, error = True, TOOL_ERROR if isinstance(result, types.CallToolResult) and result.is_error else ""
            return result
        except MCPError as exc:
            known, error = isinstance(exc, PassedOn), jsonrpc_error_type(exc.error.code)
            raise
        except Exception:  # a bug of ours: the SDK answers it as an internal error
            error = "internal_error"
            raise
        finally:
            tool = ""
            if calls_tool:
                name = getattr(params, "name", None)
                tool = metrics.tool_label(name) if known and isinstance(name, str) else OTHER
            record((method, tool, error), time.perf_counter() - started)

    return run


def describe_span(ctx: Context) -> None:
    """Add what only the face knows to the SDK's span of the request being served."""
    span = trace.get_current_span()
    request = ctx.request
    if request is None:  # stdio, or a client in this process
        span.set_attribute("network.transport", "pipe")
        return
    scope = getattr(request, "scope", None)
    transport = "unix" if isinstance(scope, dict) and peer_of(scope) == "unix" else "tcp"  # pyright: ignore[reportUnknownArgumentType]
    span.set_attribute("network.transport", transport)
    headers = getattr(request, "headers", None)
    session = headers.get("mcp-session-id") if headers is not None else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if isinstance(session, str):
        span.set_attribute("mcp.session.id", session)


# The HTTP edge


class CountedPrincipals:
    """A `PrincipalResolver` counting the refusals of the one it wraps (auth failures, rate limits), and
    letting `/metrics` through without a credential when it is public."""

    def __init__(self, resolver: PrincipalResolver, metrics: Metrics, *, public_metrics: bool) -> None:
        self._resolver = resolver
        self._metrics = metrics
        self._public = public_metrics

    async def resolve(self, request: Request) -> Principal:
        if self._public and request.url.path == METRICS_PATH:
            return Principal(address=peer_of(request.scope))
        try:
            return await self._resolver.resolve(request)
        except PrincipalRefused as refused:
            status = getattr(refused.response, "status_code", None)
            if status == 429:
                self._metrics.rate_limited.inc()
            elif status == 401:
                presented = request.headers.get("authorization") is not None
                self._metrics.auth_failures.inc(("invalid" if presented else "missing",))
            elif status == 503:
                self._metrics.auth_failures.inc(("unverifiable",))
            raise


@dataclass(frozen=True)
class MetricsAccess:
    """`/metrics` on the HTTP face: whose metrics, and whether anyone may read them (`telemetry.metrics.public`)."""

    metrics: Metrics
    public: bool = False

    def route(self) -> Route:
        """The `/metrics` route: the text exposition format, to an admin unless public."""

        async def answer(request: Request) -> Response:
            if not self.public and not principal_of(request).admin:
                return error_response(
                    403,
                    "FORBIDDEN",
                    "/metrics needs an admin key (auth.adminKeys); set telemetry.metrics.public to true to let "
                    "any scraper read it without a credential.",
                )
            return Response(self.metrics.exposition(), media_type=CONTENT_TYPE)

        return Route(METRICS_PATH, endpoint=answer, methods=["GET"])
