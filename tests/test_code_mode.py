"""Code mode end to end: a real SDK client, the gateway's face in code mode (or discovery and dynamic with
`codeTool`), and real in-process upstreams (the kitchen-sink server, the demo notes server). A program's
tool calls go the way execute_tool's do: scope, rules, validation, the audit log, the user's confirmation
of a destructive tool. The sandbox's escapes and limits are tests/test_code_sandbox.py's."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
from pydantic import ValidationError

from tests.helpers.code_gateway import audit_lines, code_client, code_gateway, error_of, run, text_of
from tests.helpers.gateway_client import ERAS, META_TOOL_NAMES
from toolscout.config import GatewayConfig, ToolRule
from toolscout.config.code import CodeConfig
from toolscout.config.scopes import Scope, scoped
from toolscout.errors import ProgramFailed
from toolscout.modes.base import SurfaceOptions
from toolscout.modes.code import CodeTool, python_names

# Every program runs in a Monty worker process of its own (started by Monty's Rust pool, so the
# tiers' audit hook cannot see it): these tests start child processes.
pytestmark = [pytest.mark.anyio, pytest.mark.processes]


class Confirmer:
    """An elicitation callback that answers every question with `action` (and `confirm` when accepting)."""

    def __init__(self, action: str, confirm: bool = True) -> None:
        self.action = action
        self.confirm = confirm
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        if self.action == "accept":
            return types.ElicitResult(action="accept", content={"confirm": self.confirm})
        return types.ElicitResult(action=cast(Any, self.action))


# The tools an agent sees


@pytest.mark.parametrize("era", ERAS)
async def test_code_mode_lists_search_details_and_run_code_annotated_as_the_riskiest_tool(era: str) -> None:
    async with code_gateway() as gateway, code_client(gateway, era) as client:
        tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == ["search_tools", "get_tool_details", "run_code"]
    run_code = tools[-1]
    assert set(run_code.input_schema["properties"]) == {"code", "timeout"}
    # notes.delete_note is destructive, kitchen's tools reach an open world: run_code promises no less.
    assert run_code.annotations is not None
    assert run_code.annotations.read_only_hint is False
    assert run_code.annotations.destructive_hint is True
    assert run_code.annotations.open_world_hint is True


async def test_search_tools_and_get_tool_details_write_each_tool_as_a_programs_call() -> None:
    async with code_gateway() as gateway, code_client(gateway) as client:
        with anyio.fail_after(60):
            found = await client.call_tool("search_tools", {"query": "create a note", "limit": 3})
            details = await client.call_tool("get_tool_details", {"server": "notes", "tool": "create_note"})
    hits = cast(dict[str, Any], found.structured_content)["results"]
    create = next(h for h in hits if h["tool"] == "create_note")
    assert create["signature"].startswith("await notes.create_note(title: str, body: str")
    assert "await notes.create_note(" in text_of(found) and "run_code" in text_of(found)
    data = cast(dict[str, Any], details.structured_content)
    assert data["signature"].startswith("await notes.create_note(title: str, body: str")
    assert f"Call: {data['signature']}" in text_of(details)
    assert "Parameters:" in text_of(details)  # with each parameter's description


# Programs


@pytest.mark.parametrize("era", ERAS)
async def test_a_program_chains_tools_and_only_what_it_prints_comes_back(era: str, tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    program = """
note = await notes.create_note(title="Groceries", body="milk, eggs", tags=["home"])
again = await notes.get_note(id=note["id"])
weather = await kitchen.get_weather(city="Paris")
print(again["title"], len(again["body"]), weather["city"])
{"id": note["id"], "celsius": weather["celsius"]}
"""
    async with code_gateway(audit_path=audit) as gateway, code_client(gateway, era) as client:
        result = await run(client, program)
    assert not result.is_error, text_of(result)
    data = cast(dict[str, Any], result.structured_content)
    assert data["output"] == "Groceries 10 Paris\n"
    assert data["toolCalls"] == 3
    assert isinstance(data["result"]["celsius"], float | int)  # the structuredContent get_weather sent
    assert text_of(result).startswith("Groceries 10 Paris\n{")
    # One audit line per call the program made, as execute_tool's.
    assert [(line["server"], line["tool"], line["outcome"]) for line in audit_lines(audit)] == [
        ("notes", "create_note", "ok"),
        ("notes", "get_note", "ok"),
        ("kitchen", "get_weather", "ok"),
    ]


async def test_a_text_result_comes_back_as_the_json_it_holds_else_as_text() -> None:
    program = """
parsed = await probe.echo_json(value={"a": [1, 2]})
plain = await probe.blob(size=5)
[parsed, plain]
"""
    async with code_gateway() as gateway, code_client(gateway) as client:
        result = await run(client, program)
    assert cast(dict[str, Any], result.structured_content)["result"] == [{"value": {"a": [1, 2]}}, "xxxxx"]


async def test_a_tools_failure_raises_tool_error_the_program_can_catch() -> None:
    program = """
try:
    await kitchen.fail_politely()
except ToolError as e:
    print("caught:", e)
await kitchen.fail_politely()
"""
    async with code_gateway() as gateway, code_client(gateway) as client:
        result = await run(client, program)
    error = error_of(result)
    assert error["code"] == "CODE_ERROR" and error["line"] == 6
    assert "kitchen/fail_politely" in error["message"] and "TOOL_EXECUTION_ERROR" in error["message"]
    assert "caught: kitchen/fail_politely" in error["message"]  # what it printed before failing
    assert "Traceback" not in text_of(result) and "toolscout/" not in text_of(result)


async def test_arguments_are_validated_and_a_disabled_tool_is_refused_inside_a_program(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    program = """
for call in ("weather", "delete", "typo", "positional"):
    try:
        if call == "weather":
            await kitchen.get_weather(city=3)
        elif call == "delete":
            await kitchen.delete_city(city="Paris")
        elif call == "typo":
            await kitchen.get_wether(city="Paris")
        else:
            await kitchen.get_weather("Paris")
    except ToolError as e:
        print(e)
"""
    rules = [ToolRule(pattern=["delete_*"], enabled=False)]
    async with code_gateway(rules=rules, audit_path=audit) as gateway, code_client(gateway) as client:
        result = await run(client, program)
    assert not result.is_error, text_of(result)
    printed = cast(dict[str, Any], result.structured_content)["output"].splitlines()
    assert "(VALIDATION_ERROR)" in printed[0]
    assert printed[1].startswith("kitchen/delete_city") and "(TOOL_DISABLED)" in printed[1]
    assert "(TOOL_NOT_FOUND)" in printed[2] and "get_weather" in printed[2]  # with the closest name
    assert "by name" in printed[3] and "(INVALID_ARGUMENTS)" in printed[3]
    assert [(line["tool"], line["code"]) for line in audit_lines(audit)] == [
        ("get_weather", "VALIDATION_ERROR"),
        ("delete_city", "TOOL_DISABLED"),
        ("get_wether", "TOOL_NOT_FOUND"),
        ("get_weather", "INVALID_ARGUMENTS"),  # refused before execute: audited all the same
    ]


async def test_calls_gathered_together_run_at_the_same_time() -> None:
    # rendezvous answers only once two calls are in flight together: run one after the other, they would wait.
    program = """
import asyncio
a, b = await asyncio.gather(kitchen.rendezvous(parties=2), kitchen.rendezvous(parties=2))
print(a, b)
"""
    async with code_gateway() as gateway, code_client(gateway) as client:
        result = await run(client, program, timeout=20)
    assert not result.is_error, text_of(result)


async def test_search_tools_inside_a_program_finds_tools_with_their_calls() -> None:
    program = """
hits = await search_tools("weather for a city", limit=3)
best = hits[0]
print(best["server"], best["tool"], best["signature"])
sorted(hits[0].keys())
"""
    async with code_gateway() as gateway, code_client(gateway) as client:
        result = await run(client, program)
    assert not result.is_error, text_of(result)
    data = cast(dict[str, Any], result.structured_content)
    assert data["output"].startswith("kitchen get_weather await kitchen.get_weather(city: str")
    assert data["result"] == ["server", "signature", "summary", "tool"]


async def test_call_tool_reaches_a_tool_by_its_exact_names() -> None:
    async with code_gateway() as gateway, code_client(gateway) as client:
        result = await run(client, 'r = await call_tool("kitchen", "get_weather", {"city": "Oslo"})\nr["city"]')
    assert cast(dict[str, Any], result.structured_content)["result"] == "Oslo"


# Scope


async def test_a_scope_that_does_not_see_a_server_cannot_call_it() -> None:
    # In process the face serves unscoped: the scope a token gives is set as the face sets it.
    only_weather = Scope.of(servers=["kitchen"], tools=["get_weather"], label="weather-only")
    async with code_gateway() as gateway:
        tool = CodeTool(gateway, CodeConfig())
        with scoped(only_weather):
            definition = tool.definition()
            with pytest.raises(ProgramFailed) as unseen_server:
                await tool.call({"code": "await notes.list_notes()"})
            exact = await tool.call(
                {"code": 'try:\n  await call_tool("notes", "list_notes")\nexcept ToolError as e:\n  print(e)'}
            )
            with pytest.raises(ProgramFailed) as unseen_tool:
                await tool.call({"code": "await kitchen.render_chart(values=[1])"})
            seen = await tool.call({"code": 'w = await kitchen.get_weather(city="Oslo")\nw["city"]'})
        unscoped = tool.definition()
    # Only get_weather, read-only: for this scope run_code is annotated read-only; unscoped, it is not.
    assert definition.annotations is not None and definition.annotations.read_only_hint is True
    assert definition.annotations.destructive_hint is False
    assert unscoped.annotations is not None and unscoped.annotations.destructive_hint is True
    assert "NameError" in unseen_server.value.message and "notes" in unseen_server.value.message
    assert "SERVER_NOT_FOUND" in text_of(exact)
    assert "TOOL_NOT_FOUND" in unseen_tool.value.message and "render_chart" in unseen_tool.value.message
    assert cast(dict[str, Any], seen.structured_content)["result"] == "Oslo"


async def test_run_codes_annotations_follow_the_catalog() -> None:
    # A scope that sees get_weather (read-only) and whatever trick_* the kitchen learns (no annotations).
    scope = Scope.of(servers=["kitchen"], tools=["get_weather", "trick_*"], label="tricks")
    async with code_gateway() as gateway:
        tool = CodeTool(gateway, CodeConfig())
        with scoped(scope):
            before = tool.definition()
        await gateway.execute("kitchen", "learn_trick", {"name": "trick_fire"})
        with anyio.fail_after(10):
            while gateway.visibility.get(scope, "kitchen", "trick_fire") is None:
                await gateway.catalog.changes.wait()
        with scoped(scope):
            after = tool.definition()
    assert before.annotations is not None and before.annotations.read_only_hint is True
    assert after.annotations is not None and after.annotations.read_only_hint is False
    assert after.annotations.destructive_hint is True  # a tool that says nothing may destroy


# Destructive tools


@pytest.mark.parametrize("era", ERAS)
async def test_a_destructive_call_runs_when_the_user_confirms_it(era: str) -> None:
    user = Confirmer("accept")
    program = """
note = await notes.create_note(title="Old", body="x")
gone = await notes.delete_note(id=note["id"])
left = await notes.list_notes()
print(gone["title"], note["id"] in [n["id"] for n in left["notes"]])
"""
    async with code_gateway() as gateway, code_client(gateway, era, elicitation_callback=user) as client:
        result = await run(client, program)
    assert not result.is_error, text_of(result)
    assert cast(dict[str, Any], result.structured_content)["output"].endswith("False\n")
    (question,) = user.asked
    assert isinstance(question, types.ElicitRequestFormParams)
    assert "notes/delete_note" in question.message


@pytest.mark.parametrize(("action", "confirm"), [("decline", True), ("cancel", True), ("accept", False)])
async def test_a_destructive_call_the_user_does_not_confirm_raises_and_runs_nothing(
    action: str, confirm: bool, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.jsonl"
    user = Confirmer(action, confirm)
    program = """
note = await notes.create_note(title="Keep", body="x")
try:
    await notes.delete_note(id=note["id"])
except ToolError as e:
    print(e)
left = await notes.list_notes()
print(note["id"] in [n["id"] for n in left["notes"]])
"""
    async with (
        code_gateway(audit_path=audit) as gateway,
        code_client(gateway, elicitation_callback=user) as client,
    ):
        result = await run(client, program)
    printed = cast(dict[str, Any], result.structured_content)["output"].splitlines()
    assert "(DECLINED)" in printed[0] and printed[1] == "True"
    assert [(line["tool"], line["outcome"], line["code"]) for line in audit_lines(audit)] == [
        ("create_note", "ok", None),
        ("delete_note", "error", "DECLINED"),
        ("list_notes", "ok", None),
    ]


async def test_without_elicitation_a_destructive_call_raises_unless_the_config_allows_it() -> None:
    program = """
note = await notes.create_note(title="Old", body="x")
await notes.delete_note(id=note["id"])
print("deleted")
"""
    async with code_gateway() as gateway:
        async with code_client(gateway) as client:
            refused = await run(client, program)
        async with code_client(gateway, code=CodeConfig(allow_destructive=True)) as client:
            allowed = await run(client, program)
    assert "CONFIRMATION_REQUIRED" in error_of(refused)["message"]
    assert "code.allowDestructive" in error_of(refused)["message"]
    assert not allowed.is_error and text_of(allowed) == "deleted\n"


# codeTool


@pytest.mark.parametrize("mode", ["discovery", "dynamic"])
async def test_code_tool_adds_run_code_beside_the_meta_tools(mode: Any) -> None:
    async with code_gateway() as gateway, code_client(gateway, mode=mode, code_tool=True) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        result = await run(client, 'w = await kitchen.get_weather(city="Rome")\nw["city"]')
        executed = await client.call_tool(
            "execute_tool", {"server": "kitchen", "tool": "get_weather", "arguments": {"city": "Oslo"}}
        )
    assert names[: len(META_TOOL_NAMES)] == META_TOOL_NAMES and "run_code" in names
    assert cast(dict[str, Any], result.structured_content)["result"] == "Rome"
    assert not executed.is_error


# The configuration


def test_the_code_section_reads_camel_case_keys_and_refuses_a_timeout_over_its_maximum() -> None:
    config = GatewayConfig.model_validate(
        {"mode": "code", "codeTool": True, "code": {"timeout": 10, "maxTimeout": 20, "maxToolCalls": 7}}
    )
    assert (config.mode, config.code_tool, config.code.max_tool_calls) == ("code", True, 7)
    assert SurfaceOptions.from_config(config).code == config.code
    with pytest.raises(ValidationError, match=r"code.timeout \(30\) is over code.maxTimeout \(20\)"):
        GatewayConfig.model_validate({"code": {"maxTimeout": 20}})


def test_servers_and_tools_get_names_a_program_can_write() -> None:
    names = ["notes", "my-notes", "my_notes", "json", "print", "search_tools", "1x", "class", "__init__"]
    assert python_names(names) == {
        "notes": "notes",
        "my-notes": "my_notes",
        "my_notes": "my_notes_2",  # the second to want a name gets a number
        "json": "json_",  # an importable module
        "print": "print_",  # a builtin
        "search_tools": "search_tools_",  # the program's own function
        "1x": "_1x",
        "class": "class_",
        "__init__": "_init__",  # a program may not write a leading double underscore
    }
