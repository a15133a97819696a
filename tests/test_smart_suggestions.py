"""`smart_tool_discovery`'s ranked suggestions (`max_suggestions`) and its category fallback, end to end:
an SDK client of either era -> the gateway's MCP face in smart mode -> the demo servers; the LLM, where
one is configured, a real OpenAI-compatible endpoint on loopback."""

from __future__ import annotations

import json
import re
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.helpers.callback_site import callback_site
from tests.helpers.chat_site import completion
from tests.helpers.gateway_client import ERAS, structured, text
from tests.helpers.smart_gateway import SMART, smart_client, smart_gateway
from tests.helpers.smart_llm import is_selection, messages_of
from toolscout.catalog import CatalogTool
from toolscout.config.models import LLMConfig, SmartConfig, SmartFallbackConfig
from toolscout.smart.categories import plain, request_category, tool_categories

pytestmark = pytest.mark.anyio

WAIT = 30.0
"""Bound on one call (never an expectation of speed)."""
MILES = "convert 5 miles to km"
UNSURE = "please frobnicate whatever sits in that directory"
"""Words no tool's name or description has, but one that says what kind of tool is wanted."""


async def ask(client: Client, request: str, **extra: Any) -> types.CallToolResult:
    with anyio.fail_after(WAIT):
        return await client.call_tool(SMART, {"request": request, **extra})


def suggested(result: types.CallToolResult) -> list[dict[str, Any]]:
    data = structured(result)
    assert data["success"] is True, data
    return cast(list[dict[str, Any]], data["result"]["suggestions"])


@pytest.mark.parametrize("era", ERAS)
async def test_suggestions_answer_in_the_result_shape_and_run_nothing(era: str) -> None:
    async with smart_gateway() as gateway, smart_client(gateway, era) as client:
        result = await ask(client, MILES, max_suggestions=3, include_reasoning=True)
        terse = await ask(client, MILES, max_suggestions=2, include_reasoning=False)
    entries = suggested(result)
    assert len(entries) == 3
    assert [e["confidence_score"] for e in entries] == sorted((e["confidence_score"] for e in entries), reverse=True)
    best = entries[0]
    assert best["tool_name"] == "units/convert_units"
    assert isinstance(best["reasoning"], str) and best["reasoning"]
    assert best["arguments_source"] == "rules"
    assert best["arguments"] == {"value": 5, "from_unit": "miles", "to_unit": "km"}
    assert "missing_required" not in best
    assert "none run" in text(result)
    assert all("reasoning" not in e for e in suggested(terse))
    assert len(suggested(terse)) == 2


class MappingModel:
    """An LLM that chooses nothing, and maps each tool's arguments from `arguments` (by the prompt's tool)."""

    def __init__(self, arguments: dict[str, dict[str, Any]]) -> None:
        self.arguments = arguments
        self.asked: list[str] = []
        """The tools whose arguments it was asked for."""

    def chat(self, body: Any) -> tuple[int, bytes]:
        if is_selection(body):
            return completion(json.dumps({"choices": []}))
        prompt = str(messages_of(body)[-1]["content"])
        found = re.search(r"^Tool: (\S+)", prompt, re.MULTILINE)
        assert found is not None, prompt
        self.asked.append(found.group(1))
        return completion(json.dumps(self.arguments.get(found.group(1), {})))


@pytest.mark.parametrize("era", ERAS)
async def test_suggestions_carry_the_llms_arguments_when_one_is_configured(era: str) -> None:
    by_tool = {"convert_units": {"value": 5, "from_unit": "mi", "to_unit": "km"}}
    model = MappingModel(by_tool)
    async with (
        smart_gateway() as gateway,
        callback_site(model.chat) as site,
        smart_client(
            gateway, era, llm=LLMConfig(base_url=site.url("/v1"), model="m", timeout=10.0, max_retries=0)
        ) as client,
    ):
        entries = suggested(await ask(client, MILES, max_suggestions=3))
    convert = next(e for e in entries if e["tool_name"] == "units/convert_units")
    assert convert["arguments"] == by_tool["convert_units"]  # the LLM's "mi", not the extractor's "miles"
    assert convert["arguments_source"] == "llm"
    # Every suggestion was mapped by the LLM (each asked once), not only the first.
    assert sorted(model.asked) == sorted(e["tool_name"].split("/")[1] for e in entries)


@pytest.mark.parametrize("era", ERAS)
async def test_suggestions_fall_back_to_the_extractor_when_the_llm_fails(era: str) -> None:
    def broken(body: Any) -> tuple[int, bytes]:
        return 500, b"down"

    async with (
        smart_gateway() as gateway,
        callback_site(broken) as site,
        smart_client(
            gateway, era, llm=LLMConfig(base_url=site.url("/v1"), model="m", timeout=10.0, max_retries=0)
        ) as client,
    ):
        data = structured(await ask(client, MILES, max_suggestions=2))
    entries = cast(list[dict[str, Any]], data["result"]["suggestions"])
    assert entries[0]["arguments_source"] == "rules"
    assert entries[0]["arguments"]["value"] == 5
    fallbacks = cast(list[str], data["fallbacks"])
    assert len(fallbacks) == len(set(fallbacks))  # one line per reason, not one per suggestion
    assert any(f.startswith("llm") for f in fallbacks)


@pytest.mark.parametrize("era", ERAS)
async def test_nothing_above_the_threshold_offers_the_best_tools_of_the_requests_category(era: str) -> None:
    smart = SmartConfig(fallback=SmartFallbackConfig(max_suggestions=4))
    async with smart_gateway() as gateway, smart_client(gateway, era, smart=smart) as client:
        result = await ask(client, UNSURE, confidence_threshold=1.0)
        catalog = {f"{t.server}/{t.name}": t for t in gateway.catalog.tools()}
    assert result.is_error
    error = structured(result)["error"]
    assert error["code"] == "TOOL_NOT_FOUND"
    category = error["category_fallback"]
    assert category["category"] == "file"
    assert "directory" in category["matched_words"]
    names = [t["tool_name"] for t in category["tools"]]
    assert 1 <= len(names) <= 4
    assert "files/list_directory" in names
    assert all("file" in tool_categories(catalog[name]) for name in names)
    assert not any(name.startswith("units/") for name in names)
    offered = [o["tool_name"] for o in error["fallback_options"]]
    assert all(name in offered for name in names)  # the category's tools are offered too
    assert "Best file tools:" in text(result)


@pytest.mark.parametrize("era", ERAS)
async def test_the_fallback_block_turns_each_fallback_off(era: str) -> None:
    no_category = SmartConfig(fallback=SmartFallbackConfig(category=False))
    no_keyword = SmartConfig(fallback=SmartFallbackConfig(keyword=False))
    nothing = SmartConfig(fallback=SmartFallbackConfig(enabled=False))
    async with smart_gateway() as gateway:
        async with smart_client(gateway, era, smart=no_category) as client:
            plain_error = structured(await ask(client, UNSURE, confidence_threshold=1.0))["error"]
        async with smart_client(gateway, era, smart=no_keyword) as client:
            category_only = structured(await ask(client, UNSURE, confidence_threshold=1.0))["error"]
        async with smart_client(gateway, era, smart=nothing) as client:
            bare = structured(await ask(client, UNSURE, confidence_threshold=1.0))["error"]
    assert "category_fallback" not in plain_error
    assert plain_error["fallback_options"] and all(o["source"] == "keyword" for o in plain_error["fallback_options"])
    assert category_only["category_fallback"]["category"] == "file"
    assert category_only["fallback_options"] and all(
        o["source"] == "category" for o in category_only["fallback_options"]
    )
    assert bare["fallback_options"] == [] and "category_fallback" not in bare


def test_a_requests_category_is_the_one_its_words_point_at() -> None:
    assert plain("queries") == "query" and plain("files") == "file" and plain("address") == "address"
    network = request_category("ping google.com to test connectivity")
    assert network is not None and network.name == "network" and "ping" in network.words
    database = request_category("query the users table for active rows")
    assert database is not None and database.name == "database"
    assert request_category("hello there") is None


def test_a_tools_categories_come_from_its_name_description_and_tags() -> None:
    tool = types.Tool(name="runSqlQuery", description="Runs a statement.", input_schema={"type": "object"})
    assert tool_categories(CatalogTool("db", tool, True, ())) == {"database"}
    tagged = types.Tool(name="x", description="Does x.", input_schema={"type": "object"})
    assert "network" in tool_categories(CatalogTool("s", tagged, True, ("http",)))
