"""Output caps for `execute_tool`: long text is cut with a notice; nothing else is touched (and a result
too large for a client to read in one message, `fit_result`, is cut to fit or refused).

Only text blocks count and only text is cut: `structuredContent` is data for programs and
images, audio and resources are not divisible, so they pass whole. The notice says how much was
dropped and how to get it, because a model that does not know output was cut will trust it.
"""

from __future__ import annotations

from typing import cast

import anyio.to_thread
import mcp_types as types

from toolscout.config.models import DEFAULT_MAX_RESULT_BYTES

__all__ = ["DEFAULT_MAX_RESULT_BYTES", "cap_output", "fit_result", "fit_result_off_loop"]


def cap_output(result: types.CallToolResult, max_chars: int | None) -> types.CallToolResult:
    """Return `result` with at most `max_chars` characters of text in total (None or 0: no cap)."""
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


_MEASURED_ON_LOOP_CHARS = 64 * 1024
"""A result whose text and binary data are longer than this is measured (and cut) in a worker thread."""
_FIT_ATTEMPTS = 8


def _size(result: types.CallToolResult) -> int:
    """The bytes of `result` as JSON, as a client receives it (within a few bytes of the SDK's own)."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


def _cut_text(result: types.CallToolResult, keep: int, notice: str) -> types.CallToolResult:
    """Return `result` with only its first `keep` characters of text (over all text blocks), then `notice`."""
    budget = keep
    content: list[types.ContentBlock] = []
    for block in result.content:
        if not isinstance(block, types.TextContent):
            content.append(block)
        elif budget > 0:
            kept = block.text[:budget]
            budget -= len(kept)
            content.append(block.model_copy(update={"text": kept}))
    return result.model_copy(update={"content": [*content, types.TextContent(text=notice)]})


def fit_result(result: types.CallToolResult, max_bytes: int | None) -> types.CallToolResult:
    """Return `result` if its JSON is at most `max_bytes` bytes (None: no limit); else its text cut
    to fit, with a notice; else, when what is not text (images, audio, resources, structuredContent) is over
    it alone, an error result saying so. The limit is what a client reads in one message: the SDK's
    client refuses a server-sent event over 1 MiB, so that a larger result never reaches its caller."""
    if max_bytes is None:
        return result
    size = _size(result)
    if size <= max_bytes:
        return result
    total = sum(len(block.text) for block in result.content if isinstance(block, types.TextContent))

    def notice(kept: int) -> str:
        return (
            f"[toolscout: result cut to fit {max_bytes} bytes, the most a client reads in one message "
            f"(maxResultBytes): {kept} of {total} characters of text kept ({total - kept} dropped). "
            "Narrow the request, or ask for the rest in parts.]"
        )

    if _size(_cut_text(result, 0, notice(0))) > max_bytes:
        return types.CallToolResult(
            content=[
                types.TextContent(
                    text=f"The tool's result was {size} bytes, over the {max_bytes} bytes a client reads in one "
                    "message (maxResultBytes), and not in its text alone (images, audio, resources or "
                    "structuredContent); nothing of it was passed on. Narrow the request."
                )
            ],
            is_error=True,
        )
    keep, cut = total, result
    for _ in range(_FIT_ATTEMPTS):  # the text's JSON size per character varies (escapes, UTF-8): measured
        keep = int(keep * max_bytes / size * 0.97)
        cut = _cut_text(result, keep, notice(keep))
        size = _size(cut)
        if size <= max_bytes:
            return cut
    return _cut_text(result, 0, notice(0))


def _rough_size(block: types.ContentBlock) -> int:
    if isinstance(block, types.TextContent):
        return len(block.text)
    resource = getattr(block, "resource", None)  # an embedded resource's text or blob
    data = getattr(resource, "text", None) or getattr(resource, "blob", None) or getattr(block, "data", "")
    return len(data) if isinstance(data, str) else 0


_SURELY_SMALL_NODES = 512
"""The most values of a result's `structuredContent` walked to show that it is surely small."""


def _data_bound(data: object) -> int | None:
    """An upper bound on the bytes of `data` as JSON (a string's character takes at most 6: `\\u001f`),
    or None when it has more than `_SURELY_SMALL_NODES` values (then it is measured, not bounded)."""
    bound, nodes = 0, 0
    stack: list[object] = [data]
    while stack:
        nodes += 1
        if nodes > _SURELY_SMALL_NODES:
            return None
        item = stack.pop()
        if isinstance(item, str):
            bound += 6 * len(item) + 2
        elif isinstance(item, dict):
            mapping = cast(dict[object, object], item)
            stack.extend(mapping.values())
            bound += sum(6 * len(str(key)) + 4 for key in mapping)
        elif isinstance(item, list | tuple):
            items = cast(list[object], item)
            stack.extend(items)
            bound += len(items) + 2
        else:
            bound += 32  # a number, a boolean, null
    return bound


def _surely_within(result: types.CallToolResult, max_bytes: int) -> bool:
    """Whether `result` surely fits in `max_bytes` without serialising it: the common case of every
    call, which must not pay for a measurement (nor a worker thread) it does not need."""
    bound = 256 + sum(6 * _rough_size(block) + 256 for block in result.content)
    if result.structured_content is not None:
        data = _data_bound(result.structured_content)
        if data is None:
            return False
        bound += data
    return bound <= max_bytes


async def fit_result_off_loop(result: types.CallToolResult, max_bytes: int | None) -> types.CallToolResult:
    """Run `fit_result`, in a worker thread when the result is large (measuring it serialises it whole)."""
    if max_bytes is None or _surely_within(result, max_bytes):
        return result
    if (
        result.structured_content is None
        and sum(_rough_size(block) for block in result.content) < _MEASURED_ON_LOOP_CHARS
    ):
        return fit_result(result, max_bytes)
    return await anyio.to_thread.run_sync(fit_result, result, max_bytes)
