"""Output caps for `execute_tool`: long text is cut with a notice; nothing else is touched.

Only text blocks count and only text is cut: `structuredContent` is data for programs and
images, audio and resources are not divisible, so they pass whole. The notice says how much was
dropped and how to get it, because a model that does not know output was cut will trust it.
"""

from __future__ import annotations

import mcp_types as types


def cap_output(result: types.CallToolResult, max_chars: int | None) -> types.CallToolResult:
    """`result` with at most `max_chars` characters of text in total (None or 0: no cap)."""
    if not max_chars or max_chars <= 0:
        return result
    total = sum(len(block.text) for block in result.content if isinstance(block, types.TextContent))
    if total <= max_chars:
        return result
    budget = max_chars
    content: list[types.ContentBlock] = []
    for block in result.content:
        if not isinstance(block, types.TextContent):
            content.append(block)
            continue
        if budget <= 0:
            continue  # dropped whole; the notice below accounts for it
        kept = block.text[:budget]
        budget -= len(kept)
        content.append(block.model_copy(update={"text": kept}))
    content.append(
        types.TextContent(
            text=f"[toolscout: output cut to {max_chars} of {total} characters ({total - max_chars} dropped). "
            "Call again with a larger max_output_chars, or narrow the request.]"
        )
    )
    return result.model_copy(update={"content": content})
