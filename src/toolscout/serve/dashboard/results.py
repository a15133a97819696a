"""A tool's `CallToolResult` as HTML for the "Run a tool" page: text, images and audio inline,
resource links and embedded resources, structured content pretty-printed, an `isError` result
marked as the tool's error.

Every byte of a result comes from an upstream server. Text is escaped; an image or audio clip is
shown only when its MIME type is on an allow-list of formats a browser decodes as media and
nothing else (no SVG, which may carry script) and its data is plain base64, and then only as a
`data:` URL of that same data; a link becomes clickable only for `http` and `https` URIs (a
`javascript:` URI is shown as text).
"""

from __future__ import annotations

import binascii
import json
import re
from html import escape
from typing import Any

import mcp_types as types

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif", "image/bmp"})
"""Image formats shown inline. SVG is left out on purpose: it is a document that may run script."""
AUDIO_TYPES = frozenset(
    {
        "audio/wav",
        "audio/x-wav",
        "audio/wave",
        "audio/mpeg",
        "audio/mp3",
        "audio/ogg",
        "audio/webm",
        "audio/flac",
        "audio/aac",
        "audio/mp4",
    }
)
"""Audio formats given a player."""
MAX_STRUCTURED_CHARS = 200_000
"""Structured content longer than this, pretty-printed, is cut on the page."""

_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def render_result(result: types.CallToolResult) -> str:
    """The result as an HTML fragment (a `<section>`, with class `result-error` for an isError result)."""
    error = bool(result.is_error)
    parts = [f'<section class="result{" result-error" if error else ""}">']
    if error:
        parts.append('<p class="error" role="alert">The tool answered with an error (isError):</p>')
    parts += [render_block(block) for block in result.content]
    if result.structured_content is not None:
        parts.append(
            '<details class="structured" open><summary>Structured content</summary>'
            f"<pre>{escape(_pretty(result.structured_content))}</pre></details>"
        )
    if not result.content and result.structured_content is None:
        parts.append('<p class="note">The tool returned no content.</p>')
    parts.append("</section>")
    return "\n".join(parts)


def render_block(block: types.ContentBlock) -> str:
    """One content block as HTML."""
    if isinstance(block, types.TextContent):
        return f'<pre class="text">{escape(block.text)}</pre>'
    if isinstance(block, types.ImageContent):
        mime = block.mime_type.lower().strip()
        if mime in IMAGE_TYPES and _is_base64(block.data):
            source = f"data:{mime};base64,{block.data}"
            return f'<figure class="image"><img alt="image from the tool ({escape(mime)})" src="{source}"></figure>'
        return _not_shown("image", block.mime_type, block.data)
    if isinstance(block, types.AudioContent):
        mime = block.mime_type.lower().strip()
        if mime in AUDIO_TYPES and _is_base64(block.data):
            return f'<figure class="audio"><audio controls src="data:{mime};base64,{block.data}"></audio></figure>'
        return _not_shown("audio", block.mime_type, block.data)
    if isinstance(block, types.ResourceLink):
        title = block.title or block.name
        detail = f" ({escape(block.mime_type)})" if block.mime_type else ""
        description = f'<p class="description">{escape(block.description)}</p>' if block.description else ""
        return f'<div class="resource-link">Resource link: {_link(block.uri, title)}{detail}{description}</div>'
    resource = block.resource  # an embedded resource
    head = f'<div class="resource">Resource {_link(resource.uri, resource.uri)}'
    if resource.mime_type:
        head += f" ({escape(resource.mime_type)})"
    if isinstance(resource, types.TextResourceContents):
        return f"{head}<pre>{escape(resource.text)}</pre></div>"
    return f"{head}: {_size(resource.blob)} of binary data, not shown.</div>"


def _is_base64(data: str) -> bool:
    """Whether `data` is plain base64 (nothing that could end the attribute or the URL early)."""
    if len(data) % 4 or not _BASE64.fullmatch(data):
        return False
    try:
        binascii.a2b_base64(data[:4096], strict_mode=True)
    except binascii.Error:
        return False
    return True


def _not_shown(what: str, mime: str, data: str) -> str:
    why = f"not shown: only {_allowed(what)} are shown"
    return f'<p class="note">An {what} of type {escape(mime)} ({_size(data)}), {why}.</p>'


def _allowed(what: str) -> str:
    kinds = IMAGE_TYPES if what == "image" else AUDIO_TYPES
    return ", ".join(sorted(kinds))


def _size(data: str) -> str:
    return f"about {len(data) * 3 // 4:,} bytes"


def _link(uri: str, text: str) -> str:
    if re.match(r"https?://", uri, re.IGNORECASE):
        return f'<a href="{escape(uri)}" rel="noopener noreferrer" target="_blank">{escape(text)}</a>'
    return f"<code>{escape(text)}</code>" + (f" <code>{escape(uri)}</code>" if text != uri else "")


def _pretty(value: Any) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if len(text) > MAX_STRUCTURED_CHARS:
        return text[:MAX_STRUCTURED_CHARS] + f"\n… ({len(text) - MAX_STRUCTURED_CHARS:,} more characters)"
    return text
