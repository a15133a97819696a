"""`smart_tool_discovery` with an LLM, end to end: an SDK client of either era -> the gateway's MCP server in
`smart` mode -> the demo servers, the LLM being a real OpenAI-compatible endpoint on loopback (its answers
scripted by each test) or the client's own model through MCP sampling.

The LLM picks the tool among the best candidates and maps the request to its arguments (checked,
repaired once); every failure of it (a malformed answer, an error, a refusal, a hang, nobody
listening, a client that cannot sample) falls back to the offline methods, and the answer says so
(smart mode degrades gracefully).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
from benchmarks.processes import free_port
from mcp import Client

from tests.helpers.callback_site import CallbackSite, callback_site
from tests.helpers.chat_site import completion
from tests.helpers.gateway_client import ERAS, structured, text
from tests.helpers.smart_gateway import SMART, smart_client, smart_gateway
from tests.helpers.smart_llm import ScriptedModel, candidates, is_selection, messages_of
from toolscout.config.models import LLMConfig, SmartCacheConfig, SmartConfig
from toolscout.modes.smart import LLM_REST_SECONDS, SmartArgs, SmartDiscovery, llm_source
from toolscout.smart.selection import SELECT_SYSTEM, pool

pytestmark = pytest.mark.anyio

CONVERT = "convert 5 miles to km"
CONVERTED: dict[str, Any] = {"value": 5, "from_unit": "mi", "to_unit": "km"}
EXTRACTED: dict[str, Any] = {"value": 5, "from_unit": "miles", "to_unit": "km"}
"""What the deterministic extractor reads from CONVERT (the offline path's arguments)."""
COUNT = "count the words in 'hello big world'"
HYBRID = re.compile(r"Hybrid\(Semantic: ([\d.]+), Rule: ([\d.]+) → Search: ([\d.]+), LLM: ([\d.]+)\) = ([\d.]+)")
OFFLINE = re.compile(r"Hybrid\(Semantic: [\d.]+, Rule: [\d.]+ → Search: ([\d.]+)\) = ([\d.]+)")
WAIT = 30.0
"""Bound on one call (never an expectation of speed)."""


def endpoint(site: CallbackSite, path: str = "/v1", *, timeout: float = 10.0) -> LLMConfig:
    return LLMConfig(base_url=site.url(path), model="m", timeout=timeout, max_retries=0)


async def ask(client: Client, request: str, **extra: Any) -> types.CallToolResult:
    with anyio.fail_after(WAIT):
        return await client.call_tool(SMART, {"request": request, **extra})


def ran(result: types.CallToolResult) -> dict[str, Any]:
    """The answer of a call that ran its tool successfully."""
    assert not result.is_error, text(result)
    data = structured(result)
    assert data["success"] is True
    assert data["execution_result"]["isError"] is False
    return data


def output(data: dict[str, Any]) -> dict[str, Any]:
    """The chosen tool's own structured result."""
    return cast(dict[str, Any], data["execution_result"]["structuredContent"])


def bodies(site: CallbackSite) -> list[Any]:
    assert all(path == "/v1/chat/completions" for path, _, _ in site.received), site.received
    return [body for _, body, _ in site.received]


def selections(site: CallbackSite) -> list[Any]:
    return [body for body in bodies(site) if is_selection(body)]


def mappings(site: CallbackSite) -> list[Any]:
    return [body for body in bodies(site) if not is_selection(body)]


@pytest.mark.parametrize("era", ERAS)
async def test_the_endpoint_picks_the_tool_and_maps_its_arguments_and_the_tool_runs(era: str) -> None:
    model = ScriptedModel("units/convert_units", 0.9, [CONVERTED], reason="converts units")
    smart = SmartConfig(max_llm_candidates=3)
    async with (
        smart_gateway() as gateway,
        callback_site(model.chat) as site,
        smart_client(gateway, era, smart=smart, llm=endpoint(site)) as client,
    ):
        result = await ask(client, CONVERT)
    data = ran(result)
    assert data["method"] == "hybrid"
    assert "fallbacks" not in data
    assert data["tool_name"] == "units/convert_units"
    assert data["parameters"] == CONVERTED
    assert output(data)["result"] == pytest.approx(8.04672)
    assert data["parameter_extraction"]["source"] == "llm"
    assert data["parameter_extraction"]["status"] == "success"
    # The reasoning shows each method's part, the LLM's being its answer; smart mode's weights 30/15/55:
    # the search's chance (its fusion of semantic and rule) counts 30 + 15, the LLM's 55.
    found = HYBRID.fullmatch(data["discovery_reasoning"])
    assert found is not None, data["discovery_reasoning"]
    _semantic, _rule, search, llm, total = (float(part) for part in found.groups())
    assert llm == 0.9
    pooled = pool({"search": search, "llm": llm}, {"search": 0.45, "llm": 0.55})
    assert data["confidence_score"] == pytest.approx(pooled, abs=0.003)
    assert data["confidence_score"] == pytest.approx(total, abs=0.001)
    assert text(result).startswith("Ran units/convert_units(")
    assert "[hybrid, confidence 0.9" in text(result)

    # One question to choose, one for the arguments, both at temperature 0 and constrained to a schema.
    assert model.selections == 1 and model.mapped == 1
    (selection,) = selections(site)
    (mapping,) = mappings(site)
    for body in (selection, mapping):
        assert body["model"] == "m"
        assert body["temperature"] == 0
        assert body["response_format"]["type"] == "json_schema"
        assert isinstance(body["response_format"]["json_schema"]["schema"], dict)
    assert "choices" in selection["response_format"]["json_schema"]["schema"]["properties"]
    prompt = messages_of(selection)[-1]["content"]
    assert prompt.startswith(f"Request: {CONVERT}\nCandidates:\n")
    listed = candidates(prompt)
    assert len(listed) == smart.max_llm_candidates  # the best few only, each with its signature
    assert sorted(listed.values()) == [1, 2, 3]
    assert "units/convert_units({value: number, from_unit: string, to_unit: string})" in prompt
    mapped = messages_of(mapping)[-1]["content"]
    assert "Tool: convert_units" in mapped and f"Request: {CONVERT}" in mapped
    schema = mapping["response_format"]["json_schema"]["schema"]
    assert set(schema["properties"]) == {"value", "from_unit", "to_unit"}
    assert "required" not in schema  # the model may leave out what the request does not say


@pytest.mark.parametrize("era", ERAS)
async def test_the_llms_pick_outweighs_the_offline_ranking(era: str) -> None:
    request = "how long is 'hello big world'"
    model = ScriptedModel("text/word_count", 0.95, [{"text": "hello big world"}])
    async with smart_gateway() as gateway:
        async with smart_client(gateway, era) as offline:
            ranked = structured(await ask(offline, request, max_suggestions=3))
        assert ranked["suggestions"][0]["tool_name"] != "text/word_count"  # alone, the search ranks another first
        async with callback_site(model.chat) as site, smart_client(gateway, era, llm=endpoint(site)) as client:
            data = ran(await ask(client, request))
    assert data["tool_name"] == "text/word_count"
    assert "LLM: 0.950" in data["discovery_reasoning"]
    assert output(data)["words"] == 3


@pytest.mark.parametrize("era", ERAS)
async def test_in_llm_based_mode_the_confidence_is_the_llms(era: str) -> None:
    model = ScriptedModel("text/word_count", 0.83, [{"text": "hello big world"}], reason="counts words")
    smart = SmartConfig(tool_selection_mode="llm_based")
    context = "The text is a tweet."
    async with (
        smart_gateway() as gateway,
        callback_site(model.chat) as site,
        smart_client(gateway, era, smart=smart, llm=endpoint(site)) as client,
    ):
        data = ran(await ask(client, COUNT, context=context))
    assert data["method"] == "llm"
    assert data["confidence_score"] == 0.83
    assert data["discovery_reasoning"] == "LLM(0.830)"
    assert data["tool_name"] == "text/word_count"
    assert data["parameters"] == {"text": "hello big world"}
    assert output(data)["words"] == 3
    # The context reaches both questions.
    assert all(f"Context: {context}" in prompt for prompt in model.prompts)
    assert len(site.received) == 2


FAILURES: dict[str, tuple[tuple[int, bytes], str, int]] = {
    # every request answered the same way: the answer, the reason, how many requests one call makes
    "malformed json": (completion('{"choices": [{"tool": 1, "confidence": 0.9'), "bad_answer", 3),  # choice, 2 maps
    "server error": ((500, b'{"error": {"message": "internal error"}}'), "http", 2),
    "refusal": (completion(None, refusal="I cannot help with that."), "refused", 2),
    "hang": (completion('{"choices": []}'), "timeout", 1),  # not waited for again for the arguments
}


@asynccontextmanager
async def failing_endpoint(failure: str) -> AsyncGenerator[tuple[LLMConfig, CallbackSite | None]]:
    """An LLM endpoint that fails as `failure` says (each request the same way), and its site if any."""
    if failure == "nobody listening":
        yield LLMConfig(base_url=f"http://127.0.0.1:{free_port()}/v1", model="m", timeout=10, max_retries=0), None
        return
    answer, _, _ = FAILURES[failure]
    async with callback_site(lambda _body: answer) as site:
        if failure == "hang":  # /slow answers only once the site closes: each attempt times out
            yield endpoint(site, "/slow/v1", timeout=0.5), site
        else:
            yield endpoint(site), site


@pytest.mark.parametrize("mode", ["hybrid", "llm_based"])
@pytest.mark.parametrize(
    ("failure", "reason"),
    [*((name, reason) for name, (_, reason, _) in FAILURES.items()), ("nobody listening", "unreachable")],
)
@pytest.mark.parametrize("era", ERAS)
async def test_a_failing_llm_falls_back_to_the_offline_methods_and_says_why(
    era: str, failure: str, reason: str, mode: str
) -> None:
    smart = SmartConfig(tool_selection_mode="llm_based" if mode == "llm_based" else "hybrid")
    async with (
        smart_gateway() as gateway,
        failing_endpoint(failure) as (llm, site),
        smart_client(gateway, era, smart=smart, llm=llm) as client,
    ):
        result = await ask(client, CONVERT)
        asked = list(site.received) if site is not None else []
    data = ran(result)
    assert data["method"] == "hybrid"  # semantic and rule, without the LLM (llm_based too)
    assert data["fallbacks"] == [f"llm: {reason}", f"llm parameter mapping: {reason}"]
    assert OFFLINE.fullmatch(data["discovery_reasoning"]), data["discovery_reasoning"]
    assert data["tool_name"] == "units/convert_units"
    assert data["parameters"] == EXTRACTED
    assert data["parameter_extraction"]["source"] == "rules"
    assert output(data)["result"] == pytest.approx(8.04672)
    assert "[hybrid, confidence" in text(result)
    if site is not None:  # it was asked for the choice, then (unless it did not answer) for the arguments
        assert len(asked) == FAILURES[failure][2]
        assert is_selection(asked[0][1]) and not any(is_selection(body) for _, body, _ in asked[1:])


@pytest.mark.parametrize("era", ERAS)
async def test_an_invalid_mapping_is_sent_back_once_and_the_repaired_one_is_used(era: str) -> None:
    invalid = {"value": "five", "from_unit": "mi", "to_unit": "km"}
    model = ScriptedModel("units/convert_units", 0.9, [invalid, CONVERTED])
    async with (
        smart_gateway() as gateway,
        callback_site(model.chat) as site,
        smart_client(gateway, era, llm=endpoint(site)) as client,
    ):
        data = ran(await ask(client, CONVERT))
    assert "fallbacks" not in data
    assert data["parameters"] == CONVERTED
    assert data["parameter_extraction"]["source"] == "llm"
    assert output(data)["result"] == pytest.approx(8.04672)
    first, repair = mappings(site)
    retry = messages_of(repair)
    assert retry[:-2] == messages_of(first)
    assert retry[-2] == {"role": "assistant", "content": json.dumps(invalid)}
    assert retry[-1]["role"] == "user"
    assert "cannot be used" in retry[-1]["content"] and "value" in retry[-1]["content"]


@pytest.mark.parametrize("era", ERAS)
async def test_two_unusable_mappings_fall_back_to_the_extractor(era: str) -> None:
    model = ScriptedModel(
        "units/convert_units", 0.9, ["Sure! That is 5 miles in km.", {"value": "five", "from_unit": "mi"}]
    )
    async with (
        smart_gateway() as gateway,
        callback_site(model.chat) as site,
        smart_client(gateway, era, llm=endpoint(site)) as client,
    ):
        data = ran(await ask(client, CONVERT))
    assert data["fallbacks"] == ["llm parameter mapping: bad_answer"]
    assert "LLM: 0.900" in data["discovery_reasoning"]  # the choice was still the LLM's
    assert data["method"] == "hybrid"
    assert data["parameters"] == EXTRACTED
    assert data["parameter_extraction"]["source"] == "rules"
    assert output(data)["result"] == pytest.approx(8.04672)
    assert len(mappings(site)) == 2 and len(selections(site)) == 1


@pytest.mark.parametrize("era", ERAS)
async def test_a_required_value_the_llm_leaves_out_is_asked_for_not_invented(era: str) -> None:
    model = ScriptedModel("units/convert_units", 0.9, [{"value": 5, "from_unit": "mi"}])
    async with (
        smart_gateway() as gateway,
        callback_site(model.chat) as site,
        smart_client(gateway, era, llm=endpoint(site)) as client,
    ):
        result = await ask(client, "convert 5 miles")
    assert result.is_error, text(result)
    data = structured(result)
    assert data["success"] is False
    assert "execution_result" not in data
    assert data["tool_name"] == "units/convert_units"
    extraction = data["parameter_extraction"]
    assert extraction["status"] == "partial_success"
    assert extraction["extracted_parameters"] == {"value": 5, "from_unit": "mi"}
    assert extraction["missing_required"] == ["to_unit"]
    assert "missing to_unit" in text(result)
    assert len(site.received) == 2


@pytest.mark.parametrize("era", ERAS)
async def test_a_destructive_tool_the_llm_picks_runs_only_once_confirmed(era: str) -> None:
    purged: list[dict[str, Any]] = []
    model = ScriptedModel("vault/purge_notes", 0.95, [{"folder": "drafts"}])
    async with (
        smart_gateway(purged=purged) as gateway,
        callback_site(model.chat) as site,
        smart_client(gateway, era, llm=endpoint(site)) as client,
    ):
        first = structured(await ask(client, "purge the notes in the drafts folder"))
        assert first["status"] == "confirmation_required"
        assert "LLM: 0.950" in first["discovery_reasoning"]
        planned = {"tool": "vault/purge_notes", "arguments": {"folder": "drafts"}, "confirm": True}
        assert first["planned_call"] == {**planned, "confirmation_id": first["planned_call"]["confirmation_id"]}
        assert purged == []
        asked = len(site.received)
        confirmed = ran(await ask(client, "purge the notes in the drafts folder", **first["planned_call"]))
        assert len(site.received) == asked  # a named tool with its arguments needs no LLM
    assert confirmed["method"] == "explicit"
    assert purged == [{"folder": "drafts"}]


@pytest.mark.parametrize("cached", [True, False])
@pytest.mark.parametrize("era", ERAS)
async def test_the_llms_choice_and_mapping_are_cached_unless_caching_is_off(era: str, cached: bool) -> None:
    model = ScriptedModel("units/convert_units", 0.9, [CONVERTED])
    smart = SmartConfig(cache=SmartCacheConfig(enabled=cached))
    async with (
        smart_gateway() as gateway,
        callback_site(model.chat) as site,
        smart_client(gateway, era, smart=smart, llm=endpoint(site)) as client,
    ):
        first = ran(await ask(client, CONVERT))
        second = ran(await ask(client, CONVERT))
    assert len(selections(site)) == (1 if cached else 2)
    # The arguments are cached too, by the tool's definition and the request's words.
    assert len(mappings(site)) == (1 if cached else 2)
    for data in (first, second):
        assert data["tool_name"] == "units/convert_units"
        assert "LLM: 0.900" in data["discovery_reasoning"]
        assert output(data)["result"] == pytest.approx(8.04672)
    assert second["discovery_reasoning"] == first["discovery_reasoning"]
    (prompt, *_) = [messages_of(body)[-1]["content"] for body in selections(site)]
    assert 3 < len(candidates(prompt)) <= SmartConfig().max_llm_candidates


@pytest.mark.parametrize("era", ERAS)
async def test_the_clients_own_model_answers_through_sampling_when_opted_in(era: str) -> None:
    model = ScriptedModel("text/word_count", 0.95, [{"text": "hello big world"}])
    async with (
        smart_gateway() as gateway,
        smart_client(gateway, era, smart=SmartConfig(sampling=True), sampling_callback=model.sample) as client,
    ):
        assert client.protocol_version == ("2025-11-25" if era == "legacy" else "2026-07-28")
        data = ran(await ask(client, COUNT))
    assert "fallbacks" not in data
    assert data["method"] == "hybrid"
    assert "LLM: 0.950" in data["discovery_reasoning"]
    assert data["tool_name"] == "text/word_count"
    assert data["parameters"] == {"text": "hello big world"}
    assert data["parameter_extraction"]["source"] == "llm"
    assert output(data)["words"] == 3
    assert model.selections == 1 and model.mapped == 1
    selection, mapping = model.sampled
    assert selection.system_prompt is not None and selection.system_prompt.startswith(SELECT_SYSTEM)
    assert "Answer with JSON only" in selection.system_prompt  # sampling has no structured output
    assert selection.temperature == 0.0 and selection.include_context == "none"
    assert "text/word_count" in candidates(model.prompts[0])
    assert mapping.system_prompt is not None and "arguments of one tool" in mapping.system_prompt


async def prose(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    """A client's model that chats instead of answering in JSON."""
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(text="I would use the word counter!"), model="chatty"
    )


@pytest.mark.parametrize(("callback", "reason"), [(None, "refused"), (prose, "bad_answer")])
@pytest.mark.parametrize("era", ERAS)
async def test_a_client_model_that_cannot_or_does_not_answer_leaves_the_offline_methods(
    era: str, callback: Any, reason: str
) -> None:
    options: dict[str, Any] = {} if callback is None else {"sampling_callback": callback}
    async with (
        smart_gateway() as gateway,
        smart_client(gateway, era, smart=SmartConfig(sampling=True), **options) as client,
    ):
        data = ran(await ask(client, COUNT))
    assert data["fallbacks"] == [f"llm: {reason}", f"llm parameter mapping: {reason}"]
    assert data["method"] == "hybrid"
    assert OFFLINE.fullmatch(data["discovery_reasoning"]), data["discovery_reasoning"]
    assert data["tool_name"] == "text/word_count"
    assert data["parameter_extraction"]["source"] == "rules"
    assert output(data)["words"] == 3


@pytest.mark.parametrize("era", ERAS)
async def test_sampling_is_opt_in(era: str) -> None:
    model = ScriptedModel("text/word_count", 0.95, [{"text": "hello big world"}])
    async with smart_gateway() as gateway, smart_client(gateway, era, sampling_callback=model.sample) as client:
        data = ran(await ask(client, COUNT))
    assert model.sampled == []
    assert "fallbacks" not in data
    assert OFFLINE.fullmatch(data["discovery_reasoning"]), data["discovery_reasoning"]
    assert data["parameter_extraction"]["source"] == "rules"
    assert output(data)["words"] == 3


@pytest.mark.parametrize("era", ERAS)
async def test_a_configured_endpoint_comes_before_the_clients_model(era: str) -> None:
    endpoint_model = ScriptedModel("text/word_count", 0.8, [{"text": "hello big world"}])
    client_model = ScriptedModel("text/word_count", 0.95, [{"text": "hello big world"}])
    async with (
        smart_gateway() as gateway,
        callback_site(endpoint_model.chat) as site,
        smart_client(
            gateway, era, smart=SmartConfig(sampling=True), llm=endpoint(site), sampling_callback=client_model.sample
        ) as client,
    ):
        data = ran(await ask(client, COUNT))
    assert "LLM: 0.800" in data["discovery_reasoning"]
    assert len(site.received) == 2
    assert client_model.sampled == []


async def test_an_llm_that_timed_out_rests_and_is_asked_again_after() -> None:
    # The engine itself, its clock moved by the test: no waiting for the rest to pass.
    now = [0.0]
    async with smart_gateway() as gateway, callback_site(lambda _body: completion("{}")) as site:
        smart = SmartConfig()
        # The timeout must outlast the request's way to the site (which records it, then hangs): 0.5 s did
        # not, once, with the suite and `stress --cpu 2` sharing two cores. Each timeout is waited out twice.
        engine = SmartDiscovery(gateway, smart, llm=llm_source(endpoint(site, "/slow/v1", timeout=2.0), smart))
        engine.clock = lambda: now[0]
        with anyio.fail_after(WAIT):
            first = structured(await engine.run(SmartArgs.model_validate({"request": CONVERT})))
            assert len(site.received) == 1  # asked for the choice, timed out, not asked for the arguments
            second = structured(await engine.run(SmartArgs.model_validate({"request": COUNT})))
            assert len(site.received) == 1  # resting: not asked (and not waited for) at all
            now[0] = LLM_REST_SECONDS
            await engine.run(SmartArgs.model_validate({"request": CONVERT}))
            assert len(site.received) == 2  # the rest is over: asked again
    assert first["fallbacks"] == second["fallbacks"] == ["llm: timeout", "llm parameter mapping: timeout"]
    assert second["tool_name"] == "text/word_count" and second["success"] is True


# Handshake era only: at 2026-07-28 the question is the answer to the client's own request, and a
# client stuck in its callback never sends the retry that would fetch the result (the gateway's call
# goes on without the model all the same; tests/test_rounds.py covers clients that never come back).
async def test_a_client_model_that_never_answers_times_out_and_the_call_goes_on() -> None:
    era = "legacy"
    never = anyio.Event()

    async def silent(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        await never.wait()
        raise AssertionError("never answered")

    smart = SmartConfig(sampling=True, sampling_timeout=0.5)
    async with smart_gateway() as gateway, smart_client(gateway, era, smart=smart, sampling_callback=silent) as client:
        try:
            data = ran(await ask(client, COUNT))
        finally:
            never.set()
    assert data["fallbacks"] == ["llm: timeout", "llm parameter mapping: timeout"]
    assert data["tool_name"] == "text/word_count" and output(data)["words"] == 3


@pytest.mark.parametrize("era", ERAS)
async def test_one_clients_model_s_choice_is_not_another_clients(era: str) -> None:
    # The same request from two clients: each one's own model is asked (caches are per client model).
    first = ScriptedModel("text/word_count", 0.95, [{"text": "hello big world"}])
    second = ScriptedModel("text/word_count", 0.95, [{"text": "hello big world"}])
    smart = SmartConfig(sampling=True)
    async with smart_gateway() as gateway:
        async with smart_client(gateway, era, smart=smart, sampling_callback=first.sample) as client:
            ran(await ask(client, COUNT))
        async with smart_client(gateway, era, smart=smart, sampling_callback=second.sample) as client:
            ran(await ask(client, COUNT))
    assert (first.selections, second.selections) == (1, 1)
