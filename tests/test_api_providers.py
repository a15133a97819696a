"""The Python API's helpers for the model APIs (`toolscout.api.anthropic`, `toolscout.api.openai`).

What they make is checked against the official packages' own types (`conforms`: every nested item,
nothing unknown), then sent by the official clients (`anthropic.AsyncAnthropic`, `openai.AsyncOpenAI`)
to a small real HTTP server standing in for the API, which records each request and answers with a
scripted tool call; the helpers then run that call through a gateway of real MCP servers (the demo
notes server and the kitchen test server, in process) and the next request carries its result.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anthropic
import anyio
import mcp_types as types
import openai
import pytest
from anthropic.types import MessageParam, ToolParam, ToolReferenceBlockParam, ToolResultBlockParam
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionToolMessageParam
from openai.types.responses import (
    FunctionToolParam,
    NamespaceToolParam,
    ResponseInputItemParam,
    ResponseToolSearchOutputItemParamParam,
    ToolSearchToolParam,
)
from openai.types.responses.response_input_item_param import FunctionCallOutput

from tests.helpers.callback_site import CallbackSite, callback_site
from tests.helpers.chat_site import anthropic_message, completion, scripted
from tests.helpers.config_files import BOUND
from tests.helpers.model_apis import (
    anthropic_tool_use,
    chat_tool_calls,
    conforms,
    function_call,
    output_text,
    plain,
    responses_output,
    tool_search_call,
)
from tests.servers.kitchen import Kitchen
from toolscout.api import Scout, ToolDetails
from toolscout.api import anthropic as for_anthropic
from toolscout.api import openai as for_openai
from toolscout.api.results import DEFAULT_SEARCH_LIMIT, result_parts
from toolscout.config.models import ListCacheConfig
from toolscout.config.rules import RuleSet, ToolRule
from toolscout.demo import notes
from toolscout.errors import GatewayNotOpen, InvalidArguments, ServerNotFound
from toolscout.gateway.core import Gateway
from toolscout.upstream import InProcessUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio

OPENAI_CLIENT = pytest.mark.processes
"""The mark of a test that sends with the openai client: its platform headers run `uname -p` (`platform.processor`)."""

VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""A tool name both APIs accept."""


@asynccontextmanager
async def opened(tmp_path: Path) -> AsyncGenerator[Scout]:
    """A scout over the notes demo server (its store in `tmp_path`) and the kitchen test server, in
    process; the kitchen's delete tool disabled, its weather tool hidden from listings."""
    specs = [
        UpstreamSpec("notes", InProcessUpstream(notes.build_server(tmp_path / "notes.json")), description="Notes."),
        UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server)),
    ]
    rules = RuleSet(
        [
            ToolRule(server="kitchen", pattern=["delete_*"], enabled=False),
            ToolRule(server="kitchen", pattern=["get_weather"], hidden=True),
        ]
    )
    with anyio.fail_after(BOUND):
        async with Scout(Gateway(specs, rules=rules)) as scout:
            yield scout


def sent(site: CallbackSite, index: int) -> dict[str, Any]:
    """The JSON body of the `index`th request the site received."""
    return site.received[index][1]


def stored_titles(tmp_path: Path) -> list[str]:
    return [note["title"] for note in json.loads((tmp_path / "notes.json").read_text(encoding="utf-8"))["notes"]]


# Anthropic's Messages API


async def test_anthropic_tool_definitions_conform_and_name_every_tool_a_search_may_name(tmp_path: Path) -> None:
    async with opened(tmp_path) as scout:
        deferred = await for_anthropic.tool_params(scout, defer_loading=True)
        for param in deferred:
            conforms(ToolParam, param)
            assert VALID_NAME.match(param["name"]) and param.get("defer_loading") is True
        names = {param["name"] for param in deferred}
        assert {"notes__create_note", "kitchen__render_chart", "kitchen__get_weather"} <= names
        assert "kitchen__delete_city" not in names  # disabled: never offered
        listed = await for_anthropic.tool_params(scout)
        assert "defer_loading" not in listed[0] and "kitchen__get_weather" not in {p["name"] for p in listed}
        create = next(p for p in deferred if p["name"] == "notes__create_note")
        assert create["input_schema"] == (await scout.tool_details("notes", "create_note")).input_schema
        assert create.get("description", "").startswith("Create a new note")

        search = for_anthropic.search_tool_param()
        conforms(ToolParam, search)
        assert "defer_loading" not in search
        hits = await scout.search("current weather in a city", limit=2)
        references = for_anthropic.tool_reference_blocks(hits)
        for block in references:
            conforms(ToolReferenceBlockParam, block)
        assert references[0] == {"type": "tool_reference", "tool_name": "kitchen__get_weather"}
        assert {block["tool_name"] for block in references} <= names  # each loads a tool the request has


async def test_an_anthropic_loop_searches_loads_and_runs_a_tool_through_the_gateway(tmp_path: Path) -> None:
    answers = scripted(
        [
            anthropic_tool_use(("toolu_1", "search_tools", {"query": "create a note"})),
            anthropic_tool_use(("toolu_2", "notes__create_note", {"title": "Groceries", "body": "milk"})),
            anthropic_message("Done: the note is saved."),
        ]
    )
    async with opened(tmp_path) as scout, callback_site(answers) as site:
        client = anthropic.AsyncAnthropic(base_url=site.base, api_key="test", max_retries=0)
        tools = [for_anthropic.search_tool_param(), *await for_anthropic.tool_params(scout, defer_loading=True)]
        messages: list[MessageParam] = [{"role": "user", "content": "Note that I need milk."}]
        stop_reasons: list[str | None] = []
        with anyio.fail_after(BOUND):
            for _ in range(3):
                response = await client.messages.create(
                    model="claude-test", max_tokens=256, messages=messages, tools=tools
                )
                stop_reasons.append(response.stop_reason)
                if response.stop_reason != "tool_use":
                    break
                results = await for_anthropic.tool_results(scout, response.content)
                for block in results:
                    conforms(ToolResultBlockParam, block)
                asked: MessageParam = {"role": "assistant", "content": response.content}
                answered: MessageParam = {"role": "user", "content": results}
                messages += [asked, answered]
        await client.close()

    assert stop_reasons == ["tool_use", "tool_use", "end_turn"]
    first = sent(site, 0)
    offered = {tool["name"]: tool for tool in first["tools"]}
    assert "defer_loading" not in offered["search_tools"]
    assert offered["notes__create_note"]["defer_loading"] is True
    # The search's answer loads create_note: a tool_reference to it, the best hit first.
    searched = sent(site, 1)["messages"][-1]["content"][0]
    assert searched["type"] == "tool_result" and searched["tool_use_id"] == "toolu_1"
    assert searched["content"][0] == {"type": "tool_reference", "tool_name": "notes__create_note"}
    # The call ran on the notes server, and its result went back to the model.
    ran = sent(site, 2)["messages"][-1]["content"][0]
    assert ran["tool_use_id"] == "toolu_2" and "is_error" not in ran
    assert json.loads(ran["content"][0]["text"])["title"] == "Groceries"
    assert stored_titles(tmp_path)[-1] == "Groceries"


async def test_anthropic_tool_results_carry_images_errors_and_refusals(tmp_path: Path) -> None:
    async with opened(tmp_path) as scout:
        chart = await for_anthropic.tool_result(
            scout, {"type": "tool_use", "id": "t1", "name": "kitchen__render_chart", "input": {"values": [1, 2]}}
        )
        conforms(ToolResultBlockParam, chart)
        content = plain(chart)["content"]
        assert [block["type"] for block in content] == ["text", "image", "text", "text", "text"]
        assert content[1]["source"]["media_type"] == "image/png"
        assert "audio of audio/wav" in content[2]["text"] and content[3]["text"].endswith("1,2,3")
        assert "data://chart.png" in content[4]["text"]

        failed = await for_anthropic.tool_result(
            scout, {"type": "tool_use", "id": "t2", "name": "kitchen__fail_politely", "input": {}}
        )
        assert plain(failed)["is_error"] is True and plain(failed)["content"][0]["text"] == "the oven is off"

        refusals = {
            "unknown": ("notes__create_nte", {"title": "x", "body": "y"}, "TOOL_NOT_FOUND"),
            "invalid": ("notes__create_note", {"title": 3}, "VALIDATION_ERROR"),
            "disabled": ("kitchen__delete_city", {"city": "Paris"}, "TOOL_DISABLED"),
        }
        for id_, (name, arguments, code) in refusals.items():
            refused = await for_anthropic.tool_result(
                scout, {"type": "tool_use", "id": id_, "name": name, "input": arguments}
            )
            conforms(ToolResultBlockParam, refused)
            text = plain(refused)["content"][0]["text"]
            assert plain(refused)["is_error"] is True and text.startswith(f"{code}: "), text
        assert "notes__create_note" in await text_of_refusal(scout, "notes__create_nte")
        # A hidden tool is called by name (the deferred helpers hand it to the model): suggested too.
        assert "kitchen__get_weather" in await text_of_refusal(scout, "kitchen__get_weathr")
        assert await for_anthropic.tool_named(scout, "kitchen__get_weather") == ("kitchen", "get_weather")

        wrong_search = await for_anthropic.tool_search_result(
            scout, {"type": "tool_use", "id": "s1", "name": "search_tools", "input": {"limit": 3}}
        )
        assert plain(wrong_search)["is_error"] is True
        nothing = await for_anthropic.tool_search_result(
            scout, {"type": "tool_use", "id": "s2", "name": "search_tools", "input": {"query": "zzqx"}}
        )
        assert "is_error" not in nothing and plain(nothing)["content"][0]["type"] == "text"
    assert not (tmp_path / "notes.json").exists()  # no refused call reached the notes server


async def test_tools_of_every_server_list_again_what_is_older_than_the_cache_ttl_as_one_server_does(
    tmp_path: Path,
) -> None:
    async with opened(tmp_path) as scout:
        scout.gateway.list_cache = ListCacheConfig(enabled=False)  # every list is out of date at once
        for server in (None, "notes"):
            before = {up.name: up.listed_at for up in scout.gateway.upstreams}
            await anyio.sleep(0.01)
            await scout.tools(server)
            relisted = [up.name for up in scout.gateway.upstreams if up.listed_at != before[up.name]]
            assert relisted == (["notes", "kitchen"] if server is None else ["notes"])


async def test_a_call_without_the_id_its_api_always_sends_is_the_programs_mistake_and_runs_nothing(
    tmp_path: Path,
) -> None:
    note = {"title": "x", "body": "y"}
    async with opened(tmp_path) as scout:
        mistakes: dict[str, tuple[Callable[[], Awaitable[object]], str]] = {
            "tool_use without id": (
                lambda: for_anthropic.tool_result(
                    scout, {"type": "tool_use", "name": "notes__create_note", "input": note}
                ),
                "`id`",
            ),
            "tool_use without name": (
                lambda: for_anthropic.tool_result(scout, {"type": "tool_use", "id": "t"}),
                "`name`",
            ),
            "search tool_use without id": (
                lambda: for_anthropic.tool_search_result(scout, {"name": "search_tools", "input": {"query": "x"}}),
                "`id`",
            ),
            "no content": (lambda: for_anthropic.tool_results(scout, cast(Any, None)), "`content`"),
            "content's tool_use without id": (
                lambda: for_anthropic.tool_results(scout, [{"type": "tool_use", "name": "notes__create_note"}]),
                "`id`",
            ),
            "function_call without call_id": (
                lambda: for_openai.function_call_output(
                    scout, {"type": "function_call", "name": "notes__create_note", "arguments": json.dumps(note)}
                ),
                "`call_id`",
            ),
            "no output": (lambda: for_openai.outputs(scout, cast(Any, None)), "`output`"),
            "chat tool call without function": (lambda: for_openai.chat_tool_message(scout, {"id": "c"}), "`function`"),
            "chat tool call without id": (
                lambda: for_openai.chat_tool_message(
                    scout, {"type": "function", "function": {"name": "notes__create_note", "arguments": "{}"}}
                ),
                "`id`",
            ),
        }
        for label, (call, field) in mistakes.items():
            with pytest.raises(InvalidArguments) as raised:
                await call()
            assert field in raised.value.message, label
        # What the model got wrong still goes back to it, as an error result.
        unknown = await for_anthropic.tool_result(scout, {"type": "tool_use", "id": "t", "name": "nope", "input": {}})
        assert plain(unknown)["is_error"] is True
        assert await for_anthropic.tool_results(scout, "plain text, no tool called") == []
    assert not (tmp_path / "notes.json").exists()  # nothing ran


async def test_the_helpers_of_a_closed_scout_raise_instead_of_answering_the_model(tmp_path: Path) -> None:
    async with opened(tmp_path) as scout:
        pass
    use = {"type": "tool_use", "id": "t", "name": "notes__create_note", "input": {"title": "x", "body": "y"}}
    search = {"type": "tool_use", "id": "s", "name": "search_tools", "input": {"query": "create a note"}}
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: for_anthropic.tool_result(scout, use),
        lambda: for_anthropic.tool_search_result(scout, search),
        lambda: for_openai.function_call_output(scout, function_call("c", "create_note", {}, "notes")),
        lambda: for_openai.tool_search_output(scout, tool_search_call("s", {"query": "create a note"})),
    ]
    for call in calls:
        with pytest.raises(GatewayNotOpen):
            await call()


def references(result: ToolResultBlockParam) -> set[str]:
    """The tools a search's result loads: the names its `tool_reference` blocks give."""
    return {block["tool_name"] for block in plain(result).get("content", []) if block["type"] == "tool_reference"}


async def test_an_anthropic_search_references_only_the_tools_the_request_sent(tmp_path: Path) -> None:
    def search(query: str) -> dict[str, Any]:
        return {"type": "tool_use", "id": "s", "name": "search_tools", "input": {"query": query, "limit": 5}}

    async with opened(tmp_path) as scout:
        notes_tools = await for_anthropic.tool_params(scout, server="notes", defer_loading=True)
        names = {param["name"] for param in notes_tools}
        everywhere = await for_anthropic.tool_search_result(scout, search("weather in a city"))
        assert "kitchen__get_weather" in references(everywhere)  # a search sees every server unless told
        [answer] = await for_anthropic.tool_results(scout, [search("create a note")], server="notes")
        assert references(answer) and references(answer) <= names  # the same server as tool_params
        [elsewhere] = await for_anthropic.tool_results(scout, [search("weather in a city")], server="notes")
        assert "kitchen__get_weather" not in references(elsewhere)

        # Given the request's tools, a hit among the others is left out (a server that connected since).
        sent = [for_anthropic.search_tool_param(), *notes_tools]
        weather = await for_anthropic.tool_search_result(scout, search("weather in a city"), tools=iter(sent))
        assert "kitchen__get_weather" not in references(weather) and references(weather) <= names
        [nothing] = await for_anthropic.tool_results(scout, [search("create a note")], tools=iter(sent[:1]))
        assert references(nothing) == set() and "No tool matches" in plain(nothing)["content"][0]["text"]


async def text_of_refusal(scout: Scout, name: str) -> str:
    """The did-you-mean a name no tool has gets."""
    try:
        await scout.tool_named(name)
    except Exception as exc:
        return str(exc)
    raise AssertionError(f"{name} named a tool")


# OpenAI's Responses API and Chat Completions


async def test_openai_namespaces_carry_each_server_with_its_description_and_conform(tmp_path: Path) -> None:
    async with opened(tmp_path) as scout:
        spaces = await for_openai.namespace_tool_params(scout)
        for space in spaces:
            conforms(NamespaceToolParam, space)
        by_name = {space["name"]: space for space in spaces}
        assert by_name["notes"]["description"] == "Notes."
        assert by_name["kitchen"]["description"]  # (none configured: said anyway, the API requires one)
        functions = {tool["name"]: tool for tool in by_name["notes"]["tools"]}
        assert functions["create_note"].get("defer_loading") is True
        assert "get_weather" in {tool["name"] for tool in by_name["kitchen"]["tools"]}  # hidden, yet searchable
        only_notes = await for_openai.namespace_tool_params(scout, server="notes")
        assert [space["name"] for space in only_notes] == ["notes"] and only_notes[0] == by_name["notes"]
        with pytest.raises(ServerNotFound, match="'notes'"):
            await for_openai.namespace_tool_params(scout, server="note")
        listed = {space["name"]: space for space in await for_openai.namespace_tool_params(scout, defer_loading=False)}
        assert "get_weather" not in {tool["name"] for tool in listed["kitchen"]["tools"]}
        assert "defer_loading" not in next(iter(listed["kitchen"]["tools"]))

        flat = await for_openai.function_tool_params(scout, server="notes")
        for function in flat:
            conforms(FunctionToolParam, function)
            assert VALID_NAME.match(function["name"])
        assert flat[0]["name"] == "notes__create_note" and flat[0]["strict"] is False
        for execution in ("server", "client"):
            conforms(ToolSearchToolParam, for_openai.tool_search_tool_param(execution))
        assert await for_openai.tool_named(scout, "create_note", "notes") == ("notes", "create_note")
        assert await for_openai.tool_named(scout, "notes__create_note") == ("notes", "create_note")


@OPENAI_CLIENT
async def test_an_openai_loop_runs_a_deferred_namespace_function_through_the_gateway(tmp_path: Path) -> None:
    answers = scripted(
        [
            responses_output(function_call("call_1", "create_note", {"title": "Trip", "body": "tickets"}, "notes")),
            responses_output(output_text("Saved.")),
        ]
    )
    async with opened(tmp_path) as scout, callback_site(answers) as site:
        client = openai.AsyncOpenAI(base_url=f"{site.base}/v1", api_key="test", max_retries=0)
        tools: list[Any] = [for_openai.tool_search_tool_param(), *await for_openai.namespace_tool_params(scout)]
        items: list[ResponseInputItemParam] = [{"role": "user", "content": "Remember the trip tickets."}]
        with anyio.fail_after(BOUND):
            response = await client.responses.create(model="gpt-test", input=items, tools=tools)
            answered = await for_openai.outputs(scout, response.output)
            for item in answered:
                conforms(FunctionCallOutput, item)
            items += [cast(ResponseInputItemParam, item.model_dump(exclude_none=True)) for item in response.output]
            items += answered
            final = await client.responses.create(model="gpt-test", input=items, tools=tools)
        await client.close()

    assert final.output_text == "Saved."
    assert site.received[0][0] == "/v1/responses"
    request = sent(site, 0)
    assert request["tools"][0] == {"type": "tool_search"}
    notes_space = next(tool for tool in request["tools"] if tool.get("name") == "notes")
    assert notes_space["type"] == "namespace" and notes_space["description"] == "Notes."
    output = sent(site, 1)["input"][-1]
    assert output["type"] == "function_call_output" and output["call_id"] == "call_1"
    assert json.loads(output["output"])["title"] == "Trip"
    assert stored_titles(tmp_path)[-1] == "Trip"


@OPENAI_CLIENT
async def test_an_openai_client_tool_search_loads_the_hits_namespaces(tmp_path: Path) -> None:
    answers = scripted(
        [
            responses_output(tool_search_call("call_s", {"query": "create a note", "limit": 2})),
            responses_output(function_call("call_c", "create_note", {"title": "Plan", "body": "steps"}, "notes")),
            responses_output(output_text("Noted.")),
        ]
    )
    async with opened(tmp_path) as scout, callback_site(answers) as site:
        client = openai.AsyncOpenAI(base_url=f"{site.base}/v1", api_key="test", max_retries=0)
        tools: list[Any] = [for_openai.tool_search_tool_param("client")]
        items: list[ResponseInputItemParam] = [{"role": "user", "content": "Plan the steps in a note."}]
        with anyio.fail_after(BOUND):
            for _ in range(3):
                response = await client.responses.create(model="gpt-test", input=items, tools=tools)
                answered = await for_openai.outputs(scout, response.output)
                if not answered:
                    break
                for item in answered:
                    kind = (
                        ResponseToolSearchOutputItemParamParam if plain(item)["type"] == "tool_search_output" else None
                    )
                    conforms(kind or FunctionCallOutput, item)
                items += [cast(ResponseInputItemParam, i.model_dump(exclude_none=True)) for i in response.output]
                items += answered
        await client.close()

    assert sent(site, 0)["tools"] == [for_openai.tool_search_tool_param("client")]
    loaded = sent(site, 1)["input"][-1]
    assert loaded["type"] == "tool_search_output" and loaded["call_id"] == "call_s"
    assert loaded["tools"][0]["name"] == "notes" and loaded["tools"][0]["description"] == "Notes."
    assert loaded["tools"][0]["tools"][0]["name"] == "create_note"
    assert sum(len(space["tools"]) for space in loaded["tools"]) == 2  # the search's limit
    assert json.loads(sent(site, 2)["input"][-1]["output"])["title"] == "Plan"
    assert stored_titles(tmp_path)[-1] == "Plan"


async def test_openai_function_outputs_carry_images_and_say_why_a_call_was_refused(tmp_path: Path) -> None:
    async with opened(tmp_path) as scout:
        chart = await for_openai.function_call_output(
            scout, {"type": "function_call", "call_id": "c1", "name": "render_chart", "namespace": "kitchen"}
        )
        conforms(FunctionCallOutput, chart)
        parts = cast(list[dict[str, Any]], chart["output"])
        assert [part["type"] for part in parts] == [
            "input_text",
            "input_image",
            "input_text",
            "input_text",
            "input_text",
        ]
        assert parts[1]["image_url"].startswith("data:image/png;base64,")

        refused = await for_openai.function_call_output(
            scout, {"type": "function_call", "call_id": "c2", "name": "create_note", "namespace": "note"}
        )
        conforms(FunctionCallOutput, refused)
        assert str(refused["output"]).startswith("TOOL_NOT_FOUND: ")
        bad_json = await for_openai.function_call_output(
            scout, {"type": "function_call", "call_id": "c3", "name": "notes__create_note", "arguments": "{title"}
        )
        assert str(bad_json["output"]).startswith("INVALID_ARGUMENTS: ")
        failed = await for_openai.function_call_output(
            scout, {"type": "function_call", "call_id": "c4", "name": "fail_politely", "namespace": "kitchen"}
        )
        assert failed["output"] == "The tool reported an error: the oven is off"


async def test_an_openai_client_search_asked_wrongly_is_told_apart_from_one_that_found_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    wrongly: dict[str, object] = {
        "not JSON": "not an object",
        "no query": {"limit": 3},
        "limit of a wrong type": {"query": "create a note", "limit": "3"},
    }
    async with opened(tmp_path) as scout:
        query = "weather, or a note"
        found = await for_openai.tool_search_output(scout, tool_search_call("s1", {"query": query}))
        ranked = [hit.server for hit in await scout.search(query, limit=DEFAULT_SEARCH_LIMIT)]
        nothing = await for_openai.tool_search_output(scout, tool_search_call("s2", {"query": "zzqx"}))
        answers = {
            label: await for_openai.tool_search_output(scout, {**tool_search_call("s3", {}), "arguments": arguments})
            for label, arguments in wrongly.items()
        }
    for output in (found, nothing, *answers.values()):
        conforms(ResponseToolSearchOutputItemParamParam, output)
    assert found.get("status") == "completed"
    # One namespace per server, in the order of each server's best hit.
    assert [plain(space)["name"] for space in found["tools"]] == list(dict.fromkeys(ranked)) and len(set(ranked)) == 2
    assert nothing.get("status") == "completed" and list(nothing["tools"]) == []
    for label, output in answers.items():
        assert output.get("status") == "incomplete" and list(output["tools"]) == [], label
    assert caplog.text.count("INVALID_ARGUMENTS") == len(wrongly)


@OPENAI_CLIENT
async def test_chat_completions_tools_and_tool_messages(tmp_path: Path) -> None:
    answers = scripted(
        [
            chat_tool_calls(("call_1", "notes__create_note", {"title": "Chat", "body": "hello"})),
            completion("Done."),
        ]
    )
    async with opened(tmp_path) as scout, callback_site(answers) as site:
        tools = await for_openai.chat_tool_params(scout)
        for tool in tools:
            conforms(ChatCompletionFunctionToolParam, tool)
        client = openai.AsyncOpenAI(base_url=f"{site.base}/v1", api_key="test", max_retries=0)
        with anyio.fail_after(BOUND):
            asked = await client.chat.completions.create(
                model="gpt-test", messages=[{"role": "user", "content": "Say hello in a note."}], tools=tools
            )
            calls = asked.choices[0].message.tool_calls or []
            replies = [await for_openai.chat_tool_message(scout, call) for call in calls]
            for reply in replies:
                conforms(ChatCompletionToolMessageParam, reply)
        await client.close()
    assert {tool["function"]["name"] for tool in sent(site, 0)["tools"]} >= {"notes__create_note"}
    assert replies[0]["tool_call_id"] == "call_1"
    assert json.loads(str(replies[0]["content"]))["title"] == "Chat"
    assert stored_titles(tmp_path)[-1] == "Chat"


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_helper_whose_package_is_missing_names_the_extra(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in sys.modules if name == provider or name.startswith(f"{provider}.")]:
        monkeypatch.setitem(sys.modules, name, None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, f"toolscout.api.{provider}")
    with pytest.raises(ImportError, match=re.escape(f"pip install 'toolscout[{provider}]'")):
        importlib.import_module(f"toolscout.api.{provider}")


def details(server: str, tool: str) -> ToolDetails:
    """A tool's details, as the scout gives them, for a tool named anyhow."""
    definition = types.Tool(name=tool, input_schema={"type": "object"})
    return ToolDetails(server, tool, f"{server}__{tool}", "", {"type": "object"}, None, None, None, (), definition)


def test_namespaces_and_functions_are_valid_names_unique_and_lead_back() -> None:
    tools = [details("a.b", "get item"), details("a_b", "get item"), details("a_b", "get_item"), details("c", "x" * 80)]
    names = for_openai.Namespaces(tools)
    spaces = {names.namespace[t.server] for t in tools}
    functions = {(names.namespace[t.server], names.function(t.server, t.tool)) for t in tools}
    assert len(spaces) == 3 and len(functions) == 4  # servers "a.b" and "a_b" clash once cleaned: one is hashed
    assert all(VALID_NAME.match(name) for pair in functions for name in pair)
    for tool in tools:
        assert names.route(names.namespace[tool.server], names.function(tool.server, tool.tool)) == (
            tool.server,
            tool.tool,
        )
    assert names.route("c", "x") is None


def test_result_parts_give_structured_content_alone_as_json_and_say_what_a_model_cannot_read() -> None:
    structured = types.CallToolResult(content=[], structured_content={"celsius": 21.5})
    assert result_parts(structured, image_types=for_anthropic.IMAGE_TYPES) == ['{"celsius": 21.5}']
    assert result_parts(types.CallToolResult(content=[]), image_types=for_anthropic.IMAGE_TYPES) == []
    blob = types.BlobResourceContents(uri="file:///a.bin", blob="AAAA", mime_type="application/octet-stream")
    svg = types.ImageContent(data="PHN2Zz4=", mime_type="image/svg+xml")
    parts = result_parts(
        types.CallToolResult(content=[types.EmbeddedResource(resource=blob), svg]),
        image_types=for_anthropic.IMAGE_TYPES,
    )
    assert parts == [
        "[resource file:///a.bin: application/octet-stream, 3 bytes, not shown]",
        "[image of image/svg+xml, 5 bytes, not shown]",
    ]
