"""Upstream MCP servers: how they are reached and how each connection lives."""

from toolscout.upstream.connection import ServerIdentity, Status, Upstream, UpstreamSpec
from toolscout.upstream.transport import (
    InProcessUpstream,
    RemoteUpstream,
    StdioUpstream,
    UpstreamTransport,
    transport_for,
)

__all__ = [
    "InProcessUpstream",
    "RemoteUpstream",
    "ServerIdentity",
    "Status",
    "StdioUpstream",
    "Upstream",
    "UpstreamSpec",
    "UpstreamTransport",
    "transport_for",
]
