"""Every name toolscout takes from a private module of the MCP SDK (`mcp.*._*`), in one place.

The SDK may move or rename what its private modules hold in any release. Everything toolscout needs
from them is imported here, under toolscout's own names, and nowhere else (tests/test_sdk_private_imports.py
checks both: that each import below still resolves, naming the line to change when one does not, and that
no other module of src/ imports a private SDK module). When the SDK moves one, change its line here.
"""

from mcp.client._transport import TransportStreams as SessionStreams
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT as SDK_SSE_READ_TIMEOUT
from mcp.shared._httpx_utils import MCP_DEFAULT_TIMEOUT as SDK_HTTP_TIMEOUT
from mcp.shared._httpx_utils import McpHttpClientFactory as HttpClientFactory
from mcp.shared._stream_protocols import ReadStream as SessionReadStream

__all__ = ["SDK_HTTP_TIMEOUT", "SDK_SSE_READ_TIMEOUT", "HttpClientFactory", "SessionReadStream", "SessionStreams"]

# What each name is, for readers of the modules that use them:
# SessionStreams       the (read, write) stream pair a client transport yields to `mcp.Client`
# SessionReadStream    the read half of that pair (what a transport wrapper delegates to)
# SDK_HTTP_TIMEOUT     the SDK's HTTP timeout for MCP requests (seconds)
# SDK_SSE_READ_TIMEOUT the SDK's read timeout on an SSE stream (seconds)
# HttpClientFactory    what builds the httpx2 client of an HTTP or SSE transport
