"""The fair hybrid, end to end: an SDK client -> the gateway's smart face -> the demo servers, the LLM a
real OpenAI-compatible endpoint on loopback whose answers each test scripts (right, wrong and sure of
itself, unsure, declining, failing).

A method that declined or failed does not count as a zero: the search alone then decides. A
confident search is never overruled by the LLM alone; a confident LLM overrules an unsure search.
`preferred_tools` and learning change the pick among the tools a request could mean.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.helpers.callback_site import CallbackSite, callback_site
from tests.helpers.gateway_client import structured, text
from tests.helpers.smart_gateway import SMART, smart_client, smart_gateway
from tests.helpers.smart_llm import ScriptedModel
from toolscout.config.models import LLMConfig, SmartConfig

pytestmark = pytest.mark.anyio

CONVERT = "convert 5 miles to km"
"""A request the search is sure of (units/convert_units)."""
CONVERTED: dict[str, Any] = {"value": 5, "from_unit": "mi", "to_unit": "km"}
UPPER = "uppercase the text hello"
"""A request the search is unsure of: its first is text/slugify, text/change_case is further down."""
UPPERED: dict[str, Any] = {"text": "hello", "style": "upper"}
WAIT = 30.0
"""Bound on one call (never an expectation of speed)."""


def endpoint(site: CallbackSite) -> LLMConfig:
    return LLMConfig(base_url=site.url("/v1"), model="m", timeout=10.0, max_retries=0)


async def ask(client: Client, request: str, **extra: Any) -> types.CallToolResult:
    with anyio.fail_after(WAIT):
        return await client.call_tool(SMART, {"request": request, **extra})


async def with_llm(model: ScriptedModel, request: str, **extra: Any) -> tuple[types.CallToolResult, CallbackSite]:
    async with (
        smart_gateway() as gateway,
        callback_site(model.chat) as site,
        smart_client(gateway, "auto", llm=endpoint(site)) as client,
    ):
        return await ask(client, request, **extra), site


def ran(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text(result)
    data = structured(result)
    assert data["success"] is True and data["execution_result"]["isError"] is False
    return data


async def test_a_right_llm_and_a_sure_search_run_the_tool() -> None:
    model = ScriptedModel("units/convert_units", 0.9, [CONVERTED])
    result, _ = await with_llm(model, CONVERT)
    data = ran(result)
    assert data["tool_name"] == "units/convert_units" and data["parameters"] == CONVERTED
    assert data["confidence_score"] > 0.9  # two witnesses agreeing
    assert "LLM: 0.900" in data["discovery_reasoning"]


async def test_a_confidently_wrong_llm_does_not_run_its_pick_against_a_sure_search() -> None:
    model = ScriptedModel("text/word_count", 0.95, [CONVERTED])
    result, _ = await with_llm(model, CONVERT, include_error_details=True)
    # Two sure witnesses disagree: nothing runs on the LLM's word alone, and the answer lists both.
    assert result.is_error, text(result)
    error = structured(result)["error"]
    assert error["code"] == "TOOL_NOT_FOUND"
    assert error["fallback_options"][0]["tool_name"] == "units/convert_units"
    assert all(o["confidence"] < 0.5 for o in error["fallback_options"])
    ranked, _ = await with_llm(ScriptedModel("text/word_count", 0.95), CONVERT, max_suggestions=10)
    suggested = {s["tool_name"]: s for s in structured(ranked)["suggestions"]}
    assert suggested["text/word_count"]["confidence_score"] < 0.05  # capped: the search is sure of another
    assert model.mapped == 0
    assert "Nothing was run" in text(result)


async def test_a_weak_wrong_llm_pick_is_overruled_by_a_sure_search() -> None:
    model = ScriptedModel("text/word_count", 0.4, [CONVERTED])
    result, _ = await with_llm(model, CONVERT)
    data = ran(result)
    assert data["tool_name"] == "units/convert_units"
    assert data["confidence_score"] > 0.7


async def test_an_llm_that_declines_leaves_the_choice_to_a_sure_search() -> None:
    model = ScriptedModel(None, mappings=[CONVERTED])
    result, _ = await with_llm(model, CONVERT)
    data = ran(result)
    assert data["tool_name"] == "units/convert_units"
    assert "fallbacks" not in data  # the LLM answered (none fits): not a failure
    assert "LLM" not in data["discovery_reasoning"]  # and not a zero either
    assert data["confidence_score"] > 0.9
    assert model.selections == 1


async def test_an_llm_that_fails_leaves_the_choice_to_a_sure_search() -> None:
    async with (
        smart_gateway() as gateway,
        callback_site(lambda _body: (500, b'{"error": {"message": "down"}}')) as site,
        smart_client(gateway, "auto", llm=endpoint(site)) as client,
    ):
        result = await ask(client, CONVERT)
    data = ran(result)
    assert data["tool_name"] == "units/convert_units"
    assert "llm: http" in data["fallbacks"]
    assert data["confidence_score"] > 0.9


async def test_a_sure_llm_overrules_an_unsure_search() -> None:
    offline = await with_llm(ScriptedModel(None), UPPER, max_suggestions=3)
    first = structured(offline[0])["suggestions"][0]
    assert first["tool_name"] == "text/slugify" and first["confidence_score"] < 0.9  # unsure, and wrong
    model = ScriptedModel("text/change_case", 0.95, [UPPERED])
    result, _ = await with_llm(model, UPPER)
    data = ran(result)
    assert data["tool_name"] == "text/change_case"
    assert data["execution_result"]["structuredContent"]["result"] == "HELLO"


async def test_preferred_tools_change_the_pick_without_an_llm() -> None:
    async with smart_gateway() as gateway, smart_client(gateway, "auto") as client:
        plain = structured(await ask(client, UPPER, max_suggestions=3))["suggestions"]
        preferred = structured(await ask(client, UPPER, max_suggestions=3, preferred_tools=["text/change_case"]))
        chosen = structured(await ask(client, UPPER, preferred_tools=["change_case"]))
        colon = structured(await ask(client, UPPER, max_suggestions=3, preferred_tools=["text:change_case"]))
        # A preferred tool the request cannot mean is not forced on it.
        unrelated = structured(await ask(client, CONVERT, preferred_tools=["text/slugify"]))
    assert plain[0]["tool_name"] == "text/slugify"
    assert preferred["suggestions"][0]["tool_name"] == "text/change_case"
    assert preferred["suggestions"][0]["confidence_score"] >= plain[0]["confidence_score"]
    assert "Preferred ×10" in preferred["suggestions"][0]["reasoning"]
    assert colon["suggestions"][0]["tool_name"] == "text/change_case"  # (the discovery design's spelling)
    assert chosen["tool_name"] == "text/change_case"  # chosen (its style is not read from the words)
    assert unrelated["tool_name"] == "units/convert_units"


async def test_a_tool_that_ran_for_these_very_words_wins_next_time(tmp_path: Path) -> None:
    learning = SmartConfig(enable_learning=True)
    path = tmp_path / "memory.json"
    async with smart_gateway() as gateway:
        async with smart_client(gateway, "auto", smart=learning, memory_path=path) as client:
            before = structured(await ask(client, UPPER))
            # slugify ran for these words once, then the caller named change_case for them.
            slugged = await ask(client, UPPER, tool="text/slugify", arguments={"text": "hello"})
            assert not slugged.is_error, text(slugged)
            taught = await ask(client, UPPER, tool="text/change_case", arguments=UPPERED)
            assert not taught.is_error, text(taught)
            after = structured(await ask(client, UPPER))
            # The caller's own preference says otherwise: the learnt tool does not win then. (Asked for
            # suggestions, so that nothing runs: a run would itself be learnt for these words.)
            overruled = structured(await ask(client, UPPER, max_suggestions=3, preferred_tools=["text/slugify"]))
        # A new gateway with the same file remembers.
        async with smart_client(gateway, "auto", smart=learning, memory_path=path) as client:
            again = structured(await ask(client, UPPER))
    assert before["tool_name"] == "text/slugify"
    assert after["tool_name"] == "text/change_case"
    assert "Learned ×10" in cast(str, after["discovery_reasoning"])
    assert after["confidence_score"] >= before["confidence_score"]
    assert overruled["suggestions"][0]["tool_name"] == "text/slugify"
    assert again["tool_name"] == "text/change_case"


async def test_the_llm_sees_the_preferred_tool_wherever_the_search_ranks_it() -> None:
    # One candidate only: the search's first would be text/slugify; the preferred tool is shown instead.
    model = ScriptedModel("text/change_case", 0.9, [UPPERED])
    async with (
        smart_gateway() as gateway,
        callback_site(model.chat) as site,
        smart_client(gateway, "auto", smart=SmartConfig(max_llm_candidates=1), llm=endpoint(site)) as client,
    ):
        result = await ask(client, UPPER, preferred_tools=["text/change_case"])
    data = ran(result)
    assert data["tool_name"] == "text/change_case"
    assert "text/change_case(" in model.prompts[0] and "text/slugify(" not in model.prompts[0]


async def test_required_arguments_the_llm_left_out_are_read_from_the_words() -> None:
    # The LLM picks right but maps only the number: the units come from the words, not from nowhere.
    model = ScriptedModel("units/convert_units", 0.9, [{"value": 5}])
    result, _ = await with_llm(model, CONVERT)
    data = ran(result)
    assert data["parameters"]["value"] == 5
    assert {"from_unit", "to_unit"} <= set(data["parameters"])
    assert data["execution_result"]["structuredContent"]["to_unit"] == "km"


async def test_an_llm_that_maps_no_arguments_leaves_the_whole_reading_to_the_words() -> None:
    # It picks right and maps nothing: the limit the request names is read too, not only the path.
    model = ScriptedModel("files/read_file", 0.9, [{}])
    result, _ = await with_llm(model, "show the first 200 bytes of data/cities.csv from the sample files")
    data = ran(result)
    assert data["parameters"] == {"path": "data/cities.csv", "max_bytes": 200}
    assert data["parameter_extraction"]["source"] == "rules"
