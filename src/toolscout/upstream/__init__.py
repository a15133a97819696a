"""Upstream MCP servers: how they are reached and how each connection lives."""

from toolscout.upstream.connection import Upstream
from toolscout.upstream.spec import ServerIdentity, Status, UpstreamSpec, transport_for
from toolscout.upstream.stdio_child import StdioUpstream
from toolscout.upstream.transport import InProcessUpstream, RemoteUpstream, UpstreamTransport

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
