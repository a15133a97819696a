"""Smart mode's LLM through each provider's own API: Anthropic's Messages API and Ollama's `/api/chat`,
each a real HTTP server on loopback with scripted answers, failures and hangs; and one LLM choosing the
tool while another maps its arguments (`llm.mapping`), the mapping cached.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.helpers.callback_site import CallbackSite, callback_site
from tests.helpers.chat_site import anthropic_message, ollama_chat
from tests.helpers.gateway_client import structured, text
from tests.helpers.smart_gateway import SMART, smart_client, smart_gateway
from tests.helpers.smart_llm import ScriptedModel
from toolscout.config.models import LLMConfig
from toolscout.errors import ArgumentValidationError, LLMUnavailable
from toolscout.smart.llm import map_with_llm
from toolscout.smart.providers import LLMRoles, open_llm

pytestmark = pytest.mark.anyio

CONVERTED: dict[str, Any] = {"value": 5, "from_unit": "mi", "to_unit": "km"}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"value": {"type": "number"}, "from_unit": {"type": "string"}, "to_unit": {"type": "string"}},
    "required": ["value", "from_unit", "to_unit"],
}


def validate(schema: dict[str, Any], arguments: dict[str, Any]) -> None:
    wrong = [name for name, value in arguments.items() if name == "value" and not isinstance(value, int | float)]
    if wrong:
        raise ArgumentValidationError(f"value must be a number, got {arguments['value']!r}", errors=[])


async def mapped(config: LLMConfig) -> Any:
    with anyio.fail_after(30):
        async with open_llm(config) as llm:
            return await map_with_llm(
                llm,
                "convert 5 miles to km",
                tool="convert_units",
                description="Convert.",
                schema=SCHEMA,
                validate=validate,
            )


def llm(site: CallbackSite, provider: str, path: str = "", **extra: Any) -> LLMConfig:
    return LLMConfig.model_validate({"provider": provider, "baseUrl": site.url(path), "model": "m", **extra})


async def test_anthropic_is_asked_through_its_messages_api_with_its_key_and_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    async with callback_site(
        lambda _body: anthropic_message('```json\n{"value": 5, "from_unit": "mi", "to_unit": "km"}\n```')
    ) as site:
        result = await mapped(llm(site, "anthropic", maxTokens=300))
    assert result.arguments == CONVERTED and result.model == "anthropic:m"
    ((path, body, headers),) = site.received
    assert path == "/v1/messages"
    assert headers["x-api-key"] == "sk-ant-test"
    assert headers["anthropic-version"] == "2023-06-01"
    assert body["max_tokens"] == 300 and body["temperature"] == 0 and body["model"] == "m"
    assert body["system"].startswith("You map a user's request") and "JSON schema" in body["system"]
    assert [m["role"] for m in body["messages"]] == ["user"]  # the system prompt is not a message


async def test_ollama_is_asked_through_its_chat_api_at_the_ollama_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    async with callback_site(lambda _body: ollama_chat('{"value": 5, "from_unit": "mi", "to_unit": "km"}')) as site:
        monkeypatch.setenv("OLLAMA_BASE_URL", site.base)
        config = LLMConfig(provider="ollama", model="qwen2.5")
        result = await mapped(config)
    assert result.arguments == CONVERTED and result.model == "ollama:qwen2.5"
    ((path, body, _),) = site.received
    assert path == "/api/chat"
    assert body["stream"] is False and body["options"]["temperature"] == 0
    assert set(body["format"]["properties"]) == {"value", "from_unit", "to_unit"}
    assert body["messages"][0]["role"] == "system"


FAILURES: dict[str, tuple[tuple[int, bytes], str, int]] = {
    "http 500": ((500, b"busy"), "http", 2),  # asked again once (max_retries 1), then given up
    "http 400": ((400, b"bad request"), "http", 1),
    "bad json": ((200, b"not json"), "bad_answer", 1),
}


@pytest.mark.parametrize("provider", ["anthropic", "ollama"])
@pytest.mark.parametrize("failure", [*FAILURES, "timeout", "no text"])
async def test_a_failing_provider_is_an_llm_failure_with_its_reason(provider: str, failure: str) -> None:
    if failure in FAILURES:
        answer, reason, asked = FAILURES[failure]
    elif failure == "no text":
        answer, reason, asked = (
            (anthropic_message(None) if provider == "anthropic" else ollama_chat("")),
            "bad_answer",
            1,
        )
    else:
        answer, reason, asked = anthropic_message("{}"), "timeout", 2
    async with callback_site(lambda _body: answer) as site:
        path = "/slow" if failure == "timeout" else ""
        config = llm(site, provider, path, timeout=0.5, maxRetries=1)
        with pytest.raises(LLMUnavailable) as caught:
            await mapped(config)
        assert len(site.received) == asked
    assert caught.value.reason == reason
    assert caught.value.to_dict()["code"] == "LLM_UNAVAILABLE"


async def test_an_anthropic_refusal_is_a_refusal() -> None:
    async with callback_site(lambda _body: anthropic_message("I can't help", stop_reason="refusal")) as site:
        with pytest.raises(LLMUnavailable) as caught:
            await mapped(llm(site, "anthropic"))
    assert caught.value.reason == "refused"


def test_the_llm_config_names_its_provider_defaults_and_roles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
    config = LLMConfig.model_validate(
        {"provider": "anthropic", "model": "claude", "mapping": {"provider": "ollama", "model": "qwen"}}
    )
    assert config.url() == "https://api.anthropic.com"
    assert config.for_mapping().url() == "http://localhost:11434"
    assert config.for_selection() is config
    assert LLMConfig(model="gpt").url() == "https://api.openai.com/v1"
    with pytest.raises(ValueError, match="provider"):
        LLMConfig.model_validate({"provider": "cohere", "model": "x"})
    with pytest.raises(ValueError, match="cannot have a selection or mapping"):
        LLMConfig.model_validate({"model": "x", "mapping": {"model": "y", "selection": {"model": "z"}}})


async def test_one_llm_chooses_the_tool_and_another_maps_its_arguments_cached() -> None:
    chooser = ScriptedModel("units/convert_units", 0.9)
    mapper = ScriptedModel(None, mappings=[CONVERTED])
    async with (
        smart_gateway() as gateway,
        callback_site(chooser.anthropic) as claude,
        callback_site(mapper.ollama) as ollama,
    ):
        config = llm(claude, "anthropic", mapping={"provider": "ollama", "baseUrl": ollama.base, "model": "qwen"})
        async with open_llm(config) as opened:
            assert isinstance(opened, LLMRoles)
        async with smart_client(gateway, "auto", llm=config) as client:
            with anyio.fail_after(30):
                first = await client.call_tool(SMART, {"request": "convert 5 miles to km"})
                second = await client.call_tool(SMART, {"request": "convert 5 miles to km"})
    for result in (first, second):
        assert not result.is_error, text(result)
        data = structured(result)
        assert data["tool_name"] == "units/convert_units"
        assert data["parameters"] == CONVERTED
        assert data["parameter_extraction"]["source"] == "llm"
    assert chooser.selections == 1 and chooser.mapped == 0  # the choice is cached as before
    assert mapper.selections == 0 and mapper.mapped == 1  # and the mapping now too
    assert {path for path, _, _ in claude.received} == {"/v1/messages"}
    assert {path for path, _, _ in ollama.received} == {"/api/chat"}
