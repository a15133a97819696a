"""OpenTelemetry traces, sent over OTLP/HTTP while the gateway serves (the `toolscout[otel]` extra).

The MCP SDK already makes the spans, named as the OpenTelemetry conventions for MCP have them: one
for each request the gateway serves (`mcp.method.name`, `gen_ai.tool.name`, `error.type`, its
parent taken from the `traceparent` and `tracestate` in the request's `params._meta`), and a child
for each request the gateway sends upstream, whose `params._meta` carries the trace on. Without a
tracer provider they cost next to nothing and go nowhere; `exporting_traces` installs one that
sends them to a collector, and the MCP face adds what only it knows (`mcp.session.id`,
`network.transport`, serve/telemetry.py) while `tracing_active()`. The SDK's span of an upstream
request does not know which configured server it goes to; `naming_upstream` tells it, and the
tracer provider's `upstream_names` processor writes it as `toolscout.server.name` on the span (the
conventions name the remote by network address only, which a stdio server has none of).

Traces are on when `telemetry.traces.enabled` says so, or, left unset, when the standard variable
OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; OTEL_SDK_DISABLED=true
turns them off. The other OTEL_* variables (headers, timeout, resource attributes) are read by the
OpenTelemetry SDK itself.
"""

from __future__ import annotations

import importlib
import logging
import os
import weakref
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from toolscout.config.telemetry import TracesConfig
from toolscout.errors import ConfigurationError

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import Span, SpanProcessor

logger = logging.getLogger(__name__)

DEFAULT_SERVICE_NAME = "toolscout"
SERVER_NAME_ATTRIBUTE = "toolscout.server.name"
"""The span attribute naming the configured (or registered) upstream server a request is sent to."""
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")

_exporting = 0
"""How many `exporting_traces` blocks are open in this process (the tracer provider is the process's)."""


_naming: weakref.WeakSet[object] = weakref.WeakSet()
"""The tracer providers `UpstreamNames` was added to (once each)."""
_upstream: ContextVar[str | None] = ContextVar("toolscout_upstream_server", default=None)


@contextmanager
def naming_upstream(server: str) -> Generator[None]:
    """Name `server` on the spans of the upstream requests sent inside (a no-op unless traces are exported)."""
    if not tracing_active():
        yield
        return
    token = _upstream.set(server)
    try:
        yield
    finally:
        _upstream.reset(token)


def upstream_names() -> SpanProcessor:
    """A span processor that adds `toolscout.server.name` to a client span started inside `naming_upstream`
    (needs the `otel` extra)."""
    from opentelemetry.sdk.trace import SpanProcessor
    from opentelemetry.trace import SpanKind

    class UpstreamNames(SpanProcessor):
        def on_start(self, span: Span, parent_context: Context | None = None) -> None:
            server = _upstream.get()
            if server is not None and span.kind == SpanKind.CLIENT:
                span.set_attribute(SERVER_NAME_ATTRIBUTE, server)

    return UpstreamNames()


def tracing_active() -> bool:
    """Whether spans are being exported (else adding attributes to them would be wasted work)."""
    return _exporting > 0


def traces_wanted(config: TracesConfig, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether `config` and the environment ask for traces (see the module)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if config.enabled is not None:
        return config.enabled
    return any(environ.get(name) for name in ENDPOINT_VARIABLES)


def check_traces(config: TracesConfig, environ: Mapping[str, str] = os.environ) -> None:
    """Refuse traces that are asked for (`traces_wanted`) when they cannot be sent: said before serving starts.

    Raises:
        ConfigurationError: the `otel` extra (the OpenTelemetry SDK and its OTLP exporter) is not installed.
    """
    if not traces_wanted(config, environ):
        return
    try:
        for module in ("opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.http.trace_exporter"):
            importlib.import_module(module)
    except ImportError:
        raise ConfigurationError(
            "traces are turned on (telemetry.traces or OTEL_EXPORTER_OTLP_ENDPOINT) but the OpenTelemetry SDK "
            "is not installed: install toolscout with the otel extra (pip install 'toolscout[otel]'), or set "
            "telemetry.traces.enabled to false."
        ) from None


@contextmanager
def exporting_traces(config: TracesConfig, environ: Mapping[str, str] = os.environ) -> Generator[None]:
    """Send spans to the OTLP collector while the block runs, if asked to (`traces_wanted`); those
    still queued are sent when it ends.

    Raises:
        ConfigurationError: traces are asked for but the `otel` extra is not installed.
    """
    if not traces_wanted(config, environ):
        yield
        return
    check_traces(config, environ)
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    global _exporting
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):  # a process has one provider; a second gateway adds to it
        name = config.service_name or environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
        provider = TracerProvider(resource=Resource.create({"service.name": name}))
        trace.set_tracer_provider(provider)
    if provider not in _naming:
        provider.add_span_processor(upstream_names())
        _naming.add(provider)
    # Given a base URL, the path is ours to add; else the exporter reads the variables (or its default).
    endpoint = config.endpoint.rstrip("/") + "/v1/traces" if config.endpoint else None
    processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint))
    provider.add_span_processor(processor)
    _exporting += 1
    logger.info("sending traces to %s", endpoint or "the OTLP endpoint of the OTEL_* variables")
    try:
        yield
    finally:
        _exporting -= 1
        processor.shutdown()  # what is queued is sent first
