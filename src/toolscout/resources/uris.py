"""The gateway's names for upstream resources: `toolscout://<server>/<its upstream URI, verbatim>`.

The server name is percent-encoded (`toolscout://docs/file:///srv/a.md?rev=2#top`). Routing
strips the prefix as text, so every URI comes back exactly as the upstream gave it, query,
fragment, odd characters and all; and a client sees the upstream's own URI after the server's name.

A resource template is the same prefix before the upstream's template, verbatim
(`toolscout://docs/file:///srv/{path}`). The prefix is literal characters only (letters, digits,
`:`, `/`, `%XX`), so the result is still an RFC 6570 template with the same variables, and any
expansion of it is the prefix followed by exactly what the upstream's template expands to with
the same values: `resources/read` strips the prefix and the upstream gets the URI its own
template would have made.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

import mcp_types as types

SCHEME = "toolscout"
PREFIX = f"{SCHEME}://"


def gateway_uri(server: str, uri: str) -> str:
    """The gateway's URI (or URI template) for `server`'s `uri`: the prefix, then `uri` verbatim."""
    return f"{PREFIX}{quote(server, safe='')}/{uri}"


def split_gateway_uri(uri: str) -> tuple[str, str] | None:
    """`(server, upstream URI)` of a gateway URI, or None when `uri` is not one."""
    if uri[: len(PREFIX)].lower() != PREFIX:  # a scheme is case-insensitive
        return None
    server, slash, original = uri[len(PREFIX) :].partition("/")
    if not slash or not server:
        return None
    return unquote(server), original


def gateway_block(server: str, block: types.ContentBlock) -> types.ContentBlock:
    """A content block of `server`'s with the resource it embeds or links to named as the gateway names it."""
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource.model_copy(update={"uri": gateway_uri(server, block.resource.uri)})
        return block.model_copy(update={"resource": resource})
    if isinstance(block, types.ResourceLink):
        return block.model_copy(update={"uri": gateway_uri(server, block.uri)})
    return block
