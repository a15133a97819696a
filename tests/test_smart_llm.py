"""`smart` mode's LLM: an OpenAI-compatible endpoint (a real HTTP server here, answering what each test
scripts), and parameter mapping with it: schema-checked, repaired once, every failure a reasoned
`LLMUnavailable` for the caller to fall back on."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from benchmarks.processes import free_port

from tests.helpers.callback_site import callback_site
from tests.helpers.chat_site import completion, json_completion, scripted
from toolscout.errors import LLMUnavailable
from toolscout.gateway.validation import ArgumentValidator
from toolscout.smart.llm import ChatMessage, OpenAICompatibleLLM, map_with_llm, parse_json_object

pytestmark = pytest.mark.anyio

ASK: list[ChatMessage] = [{"role": "user", "content": "convert 5 miles to km"}]
CONVERT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "value": {"type": "number"},
        "from_unit": {"type": "string"},
        "to_unit": {"type": "string"},
    },
    "required": ["value", "from_unit", "to_unit"],
}
VALIDATOR = ArgumentValidator()


def validate(schema: dict[str, Any], arguments: dict[str, Any]) -> None:
    VALIDATOR.validate(schema, arguments, server="units", tool="convert")


async def map_convert(llm: OpenAICompatibleLLM, request: str = "convert 5 miles to km") -> Any:
    return await map_with_llm(
        llm, request, tool="units/convert", description="Convert units", schema=CONVERT, validate=validate
    )


async def test_the_request_is_a_chat_completion_constrained_to_the_schema_with_the_key() -> None:
    async with (
        callback_site(scripted([completion('{"ok": true}')])) as site,
        OpenAICompatibleLLM(site.base + "/v1", "llama3", api_key="sk-test") as llm,
    ):
        text = await llm.complete(ASK, json_schema={"type": "object"})
    assert text == '{"ok": true}'
    ((path, body, headers),) = site.received
    assert path == "/v1/chat/completions"
    assert body["model"] == "llama3"
    assert body["messages"] == ASK
    assert body["temperature"] == 0
    assert body["response_format"]["json_schema"]["schema"] == {"type": "object"}
    assert headers["authorization"] == "Bearer sk-test"
    assert llm.name == "openai-compatible:llama3"


async def test_a_busy_endpoint_is_asked_again_and_a_wrong_request_is_not() -> None:
    busy = scripted([(503, b'{"error": "overloaded"}'), completion("fine")])
    async with callback_site(busy) as site, OpenAICompatibleLLM(site.base, "m", max_retries=1, backoff=0.01) as llm:
        assert await llm.complete(ASK) == "fine"
    assert len(site.received) == 2
    wrong = scripted([(400, b'{"error": "unknown model"}')])
    async with callback_site(wrong) as site, OpenAICompatibleLLM(site.base, "m", max_retries=3, backoff=0.01) as llm:
        with pytest.raises(LLMUnavailable) as caught:
            await llm.complete(ASK)
    assert caught.value.reason == "http"
    assert "HTTP 400" in caught.value.message and "unknown model" in caught.value.message
    assert len(site.received) == 1


async def test_an_endpoint_that_does_not_answer_in_time_fails_as_a_timeout_after_its_retries() -> None:
    with anyio.fail_after(20):
        async with (
            callback_site(scripted([completion("late")])) as site,
            OpenAICompatibleLLM(site.base + "/slow", "m", timeout=0.2, max_retries=1, backoff=0.01) as llm,
        ):
            with pytest.raises(LLMUnavailable) as caught:
                await llm.complete(ASK)
            assert len(site.received) == 2
    assert caught.value.reason == "timeout"
    assert "no answer within 0.2 s" in caught.value.message


async def test_an_endpoint_nobody_listens_on_is_unreachable() -> None:
    async with OpenAICompatibleLLM(f"http://127.0.0.1:{free_port()}", "m", max_retries=0) as llm:
        with pytest.raises(LLMUnavailable) as caught:
            await llm.complete(ASK)
    assert caught.value.reason == "unreachable"


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (completion(None, refusal="I can't help with that."), "refused"),
        (completion("partial", finish="content_filter"), "refused"),
        (completion("   "), "bad_answer"),
        ((200, b"<html>not json</html>"), "bad_answer"),
        ((200, b'{"choices": []}'), "bad_answer"),
    ],
)
async def test_refusals_and_answers_without_text_are_failures_with_their_reason(
    answer: tuple[int, bytes], reason: str
) -> None:
    async with callback_site(scripted([answer])) as site, OpenAICompatibleLLM(site.base, "m") as llm:
        with pytest.raises(LLMUnavailable) as caught:
            await llm.complete(ASK)
    assert caught.value.reason == reason
    assert caught.value.to_dict()["code"] == "LLM_UNAVAILABLE"


async def test_valid_arguments_are_used_and_a_required_one_left_out_is_reported_missing() -> None:
    answer = scripted([json_completion({"value": 5, "from_unit": "mi"})])
    async with callback_site(answer) as site, OpenAICompatibleLLM(site.base, "m") as llm:
        mapping = await map_convert(llm, "convert 5 miles")
    assert mapping.arguments == {"value": 5, "from_unit": "mi"}
    assert mapping.missing_required == ["to_unit"]
    assert not mapping.repaired
    # The model is told the tool, its schema and the request, and may leave out required arguments.
    ((_, body, _),) = site.received
    prompt = body["messages"][-1]["content"]
    assert "units/convert" in prompt and "convert 5 miles" in prompt and '"from_unit"' in prompt
    assert "required" not in body["response_format"]["json_schema"]["schema"]


async def test_an_invalid_answer_is_sent_back_once_with_its_violations() -> None:
    answers = scripted(
        [
            json_completion({"value": "five", "from_unit": "mi", "to_unit": "km"}),
            completion('```json\n{"value": 5, "from_unit": "mi", "to_unit": "km"}\n```'),
        ]
    )
    async with callback_site(answers) as site, OpenAICompatibleLLM(site.base, "m") as llm:
        mapping = await map_convert(llm)
    assert mapping.arguments == {"value": 5, "from_unit": "mi", "to_unit": "km"}
    assert mapping.repaired and mapping.missing_required == []
    retry = site.received[1][1]["messages"]
    assert retry[-2] == {
        "role": "assistant",
        "content": json.dumps({"value": "five", "from_unit": "mi", "to_unit": "km"}),
    }
    assert "value" in retry[-1]["content"] and "number" in retry[-1]["content"]


async def test_two_unusable_answers_are_an_llm_failure_the_caller_falls_back_on() -> None:
    answers = scripted([completion("Sure! The value is 5."), completion("[5, 'mi', 'km']")])
    async with callback_site(answers) as site, OpenAICompatibleLLM(site.base, "m") as llm:
        with pytest.raises(LLMUnavailable) as caught:
            await map_convert(llm)
    assert caught.value.reason == "bad_answer"
    assert "unusable twice" in caught.value.message
    assert len(site.received) == 2


def test_json_is_read_with_or_without_a_fence_and_only_as_an_object() -> None:
    assert parse_json_object('{"a": 1}') == {"a": 1}
    assert parse_json_object('```json\n{"a": 1}\n```') == {"a": 1}
    with pytest.raises(ValueError, match="list"):
        parse_json_object("[1]")
    with pytest.raises(json.JSONDecodeError):
        parse_json_object("not json")
