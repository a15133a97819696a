"""Output caps: text cut with a notice, everything else passed whole; per call and by config."""

from __future__ import annotations

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.helpers.gateway_client import structured, text
from tests.servers.kitchen import TINY_PNG, Kitchen
from toolscout.gateway.core import Gateway, cap_output
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec


def _result() -> types.CallToolResult:
    return types.CallToolResult(
        content=[
            types.TextContent(text="a" * 60),
            types.ImageContent(data=TINY_PNG, mime_type="image/png"),
            types.TextContent(text="b" * 60),
        ],
        structured_content={"rows": list(range(100))},
        is_error=True,
        _meta={"trace": "1"},
    )


def test_text_beyond_the_cap_is_cut_with_a_notice_and_nothing_else_is_touched() -> None:
    original = _result()
    capped = cap_output(original, 90)
    texts = [b.text for b in capped.content if isinstance(b, types.TextContent)]
    assert texts[:2] == ["a" * 60, "b" * 30]
    assert "cut to 90 of 120 characters (30 dropped)" in texts[2] and "max_output_chars" in texts[2]
    assert [type(b) for b in capped.content] == [
        types.TextContent,
        types.ImageContent,
        types.TextContent,
        types.TextContent,
    ]
    assert capped.structured_content == {"rows": list(range(100))}
    assert capped.is_error is True and capped.meta == {"trace": "1"}
    assert original == _result()  # the input is not mutated


def test_text_blocks_past_the_cap_are_dropped_whole() -> None:
    capped = cap_output(_result(), 10)
    texts = [b.text for b in capped.content if isinstance(b, types.TextContent)]
    assert texts[0] == "a" * 10 and len(texts) == 2
    assert any(isinstance(b, types.ImageContent) for b in capped.content)


@pytest.mark.parametrize("cap", [None, 0, 120, 10_000])
def test_no_cap_or_enough_room_returns_the_result_as_is(cap: int | None) -> None:
    result = _result()
    assert cap_output(result, cap) is result


@pytest.mark.anyio
async def test_execute_tool_applies_the_call_cap_over_the_configured_default() -> None:
    specs = [UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server))]
    async with Gateway(specs, max_output_chars=20) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        async with Client(build_server(gateway)) as client:
            call = {"server": "kitchen", "tool": "get_weather", "arguments": {"city": "Paris" * 20}}
            default = await client.call_tool("execute_tool", call)
            assert "output cut to 20 of" in text(default)
            assert structured(default)["city"] == "Paris" * 20  # structured data is never cut
            wider = await client.call_tool("execute_tool", {**call, "max_output_chars": 5000})
            assert "output cut" not in text(wider)
            none = await client.call_tool("execute_tool", {**call, "max_output_chars": 0})
            assert "output cut" not in text(none)


def test_a_result_too_large_for_one_message_is_cut_to_fit_or_refused_when_its_bulk_is_not_text() -> None:
    from toolscout.gateway.core import fit_result

    small = _result()
    assert fit_result(small, 4096) is small
    assert fit_result(small, None) is small
    # Text that JSON escapes (quotes, newlines, non-ASCII) is measured as sent, not by its length.
    escaped = 'é"\n' * 200_000
    cut = fit_result(
        types.CallToolResult(content=[types.TextContent(text=escaped)], structured_content={"n": 1}), 100_000
    )
    assert len(cut.model_dump_json(by_alias=True, exclude_none=True).encode()) <= 100_000
    kept, notice = [block.text for block in cut.content if isinstance(block, types.TextContent)]
    assert kept == escaped[: len(kept)]
    assert notice.startswith("[toolscout: result cut to fit 100000 bytes")
    assert cut.structured_content == {"n": 1}
    # An image (or structuredContent) over the limit by itself cannot be cut: a clear error result.
    image = types.CallToolResult(content=[types.ImageContent(data="A" * 200_000, mime_type="image/png")])
    refused = fit_result(image, 100_000)
    assert refused.is_error
    assert "over the 100000 bytes a client reads in one message (maxResultBytes)" in text(refused)
