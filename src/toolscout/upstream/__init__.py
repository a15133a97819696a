"""Upstream MCP servers: how they are reached and how each connection lives."""

from toolscout.upstream.connection import ServerIdentity, Status, Upstream, UpstreamSpec
from toolscout.upstream.transport import (
    HttpUpstream,
    InProcessUpstream,
    SseUpstream,
    StdioUpstream,
    UpstreamTransport,
    transport_for,
)

__all__ = [
    "HttpUpstream",
    "InProcessUpstream",
    "ServerIdentity",
    "SseUpstream",
    "Status",
    "StdioUpstream",
    "Upstream",
    "UpstreamSpec",
    "UpstreamTransport",
    "transport_for",
]
