"""Smart mode end to end without an LLM: a real SDK client calls
`smart_tool_discovery` on the gateway's face, which picks a tool among the demo servers (units, text,
files), a `vault` with a destructive tool, or server-everything, reads the arguments from the
request, asks for confirmation when the tool may destroy data, and runs it.

The search and the extractor are deterministic, so the chosen tools and arguments are asserted
exactly; confidences only by their order and their place against the threshold."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.helpers.gateway_client import ERAS, META_TOOL_NAMES, structured, text
from tests.helpers.scoped_gateway import client_with, scoped_http, two_namespaces
from tests.helpers.smart_gateway import SMART, everything_gateway, smart_client, smart_gateway
from toolscout.config import ToolRule
from toolscout.config.models import SmartConfig
from toolscout.smart.memory import SmartMemory

pytestmark = pytest.mark.anyio

SPEC_ARGUMENTS = {
    "request",
    "context",
    "preferred_tools",
    "confidence_threshold",
    "max_suggestions",
    "include_reasoning",
    "include_error_details",
    "tool",
    "arguments",
    "confirm",
    "confirmation_id",
    "max_output_chars",
}
MILES = "convert 5 miles to km"
MILES_ARGUMENTS = {"value": 5, "from_unit": "miles", "to_unit": "km"}
PURGE = "purge the notes in folder 'archive'"
NONSENSE = "zebra migration patterns"
DEMO_TOOLS = 14  # units 3, text 5, files 4, vault 2
HYBRID = re.compile(r"^Hybrid\(Semantic: \d\.\d{3}, Rule: \d\.\d{3} → Search: \d\.\d{3}\) = (\d\.\d{3})$")


def protocol_of(era: str) -> str:
    return "2025-11-25" if era == "legacy" else "2026-07-28"


async def ask(client: Client, **arguments: Any) -> types.CallToolResult:
    """One `smart_tool_discovery` call, bounded."""
    with anyio.fail_after(30):
        return await client.call_tool(SMART, arguments)


def first_line(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def audit_lines(path: Path) -> list[dict[str, Any]]:
    """The audit log's records (none when it was never written)."""
    if not path.exists():
        return []
    return [cast(dict[str, Any], json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]


def names_of(suggestions: Any) -> list[str]:
    return [str(s["tool_name"]) for s in cast(list[dict[str, Any]], suggestions)]


class Confirmer:
    """An elicitation callback that answers every question with `answer` and keeps the questions."""

    def __init__(self, action: str, content: Mapping[str, Any] | None = None) -> None:
        self.action = action
        self.content = dict(content) if content is not None else None
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        if self.action == "accept":
            return types.ElicitResult(action="accept", content=self.content)
        return types.ElicitResult(action="decline" if self.action == "decline" else "cancel")


# The tool list


@pytest.mark.parametrize("era", ERAS)
async def test_smart_mode_lists_only_smart_tool_discovery_the_same_for_every_client(era: str) -> None:
    async with (
        smart_gateway() as gateway,
        smart_client(gateway, era) as first,
        smart_client(gateway, "legacy" if era == "auto" else "auto") as second,
    ):
        assert first.protocol_version == protocol_of(era)
        with anyio.fail_after(30):
            listed = (await first.list_tools()).tools
            other = (await second.list_tools()).tools
        assert [tool.name for tool in listed] == [SMART]
        schema = listed[0].input_schema
        assert set(schema["properties"]) == SPEC_ARGUMENTS
        assert schema["required"] == ["request"]
        assert schema["properties"]["request"]["type"] == "string"
        assert schema["properties"]["arguments"]["type"] == "object"
        # 2026-07-28: tools/list must not vary per connection.
        assert [t.model_dump() for t in other] == [t.model_dump() for t in listed]


@pytest.mark.parametrize("era", ERAS)
async def test_discovery_mode_with_smart_tool_adds_it_beside_the_five_meta_tools(era: str) -> None:
    async with (
        smart_gateway() as gateway,
        smart_client(gateway, era, mode="discovery", smart_tool=True) as client,
        smart_client(gateway, era, mode="discovery", smart_tool=True) as other,
        smart_client(gateway, era, mode="discovery") as plain,
    ):
        with anyio.fail_after(30):
            listed = (await client.list_tools()).tools
            again = (await other.list_tools()).tools
            without = (await plain.list_tools()).tools
        assert [tool.name for tool in listed] == [*META_TOOL_NAMES, SMART]
        assert [t.model_dump() for t in again] == [t.model_dump() for t in listed]
        assert [tool.name for tool in without] == META_TOOL_NAMES
        ran = await ask(client, request=MILES)
        assert not ran.is_error, text(ran)
        assert structured(ran)["tool_name"] == "units/convert_units"


# Running the tool a request means


@pytest.mark.parametrize("era", ERAS)
async def test_a_plain_request_runs_the_tool_with_the_arguments_read_from_it(era: str) -> None:
    async with smart_gateway() as gateway, smart_client(gateway, era) as client:
        result = await ask(client, request=MILES)
        direct = await gateway.execute("units", "convert_units", MILES_ARGUMENTS)

    assert not result.is_error, text(result)
    data = structured(result)
    assert data["success"] is True
    assert data["tool_name"] == "units/convert_units"
    assert data["parameters"] == MILES_ARGUMENTS
    reasoning = HYBRID.match(data["discovery_reasoning"])
    assert reasoning is not None, data["discovery_reasoning"]
    assert 0.5 <= data["confidence_score"] <= 1.0
    assert float(reasoning.group(1)) == pytest.approx(data["confidence_score"], abs=0.001)
    assert data["method"] == "hybrid"
    execution = data["execution_result"]
    assert execution["isError"] is False
    assert execution["structuredContent"]["result"] == pytest.approx(8.04672)
    assert execution["structuredContent"] == direct.structured_content
    assert execution["content"] == [b.model_dump(by_alias=True, exclude_none=True) for b in direct.content]
    extraction = data["parameter_extraction"]
    assert extraction["status"] == "success"
    assert extraction["extracted_parameters"] == MILES_ARGUMENTS
    assert extraction["validation_results"] == dict.fromkeys(MILES_ARGUMENTS, "valid")
    assert extraction["missing_required"] == []
    # The model reads one short line, then the upstream's own content as it sent it.
    line = first_line(result)
    assert "\n" not in line and len(line) < 200
    assert line.startswith("Ran units/convert_units(") and "hybrid" in line
    assert result.content[1:] == direct.content


@pytest.mark.parametrize("era", ERAS)
async def test_include_reasoning_false_leaves_the_reasoning_out(era: str) -> None:
    async with smart_gateway() as gateway, smart_client(gateway, era) as client:
        with_reasoning = structured(await ask(client, request=MILES))
        result = await ask(client, request=MILES, include_reasoning=False)
    assert not result.is_error, text(result)
    data = structured(result)
    assert "discovery_reasoning" in with_reasoning
    assert "discovery_reasoning" not in data
    assert data["confidence_score"] == with_reasoning["confidence_score"]
    assert data["tool_name"] == "units/convert_units" and data["parameters"] == MILES_ARGUMENTS


@pytest.mark.parametrize("era", ERAS)
async def test_max_suggestions_ranks_tools_and_runs_none(era: str, tmp_path: Path) -> None:
    purged: list[dict[str, Any]] = []
    audit = tmp_path / "audit.jsonl"
    async with smart_gateway(purged=purged, audit_path=audit) as gateway, smart_client(gateway, era) as client:
        result = await ask(client, request=PURGE, max_suggestions=3)
        miles = structured(await ask(client, request=MILES, max_suggestions=3))

    assert not result.is_error, text(result)
    assert purged == [] and audit_lines(audit) == []  # the destructive tool, and anything else: not run
    data = structured(result)
    assert data["success"] is True and "execution_result" not in data
    suggestions = cast(list[dict[str, Any]], data["suggestions"])
    assert len(suggestions) == 3
    for suggestion in suggestions:
        assert {"tool_name", "confidence_score", "reasoning", "signature", "arguments"} <= set(suggestion)
        assert suggestion["reasoning"].startswith("Hybrid(")
    confidences = [s["confidence_score"] for s in suggestions]
    assert confidences == sorted(confidences, reverse=True)
    best = suggestions[0]
    assert best["tool_name"] == "vault/purge_notes"
    assert best["arguments"] == {"folder": "archive"}
    assert best["signature"].startswith("purge_notes(")
    assert "none run" in first_line(result)
    assert miles["suggestions"][0]["tool_name"] == "units/convert_units"
    assert miles["suggestions"][0]["arguments"] == MILES_ARGUMENTS


# Nothing good enough


@pytest.mark.parametrize("era", ERAS)
async def test_a_request_no_tool_fits_is_tool_not_found_with_the_closest_ones(era: str) -> None:
    async with smart_gateway() as gateway, smart_client(gateway, era) as client:
        result = await ask(client, request=NONSENSE)
        detailed = await ask(client, request=NONSENSE, include_error_details=True)
        anything = await ask(client, request=NONSENSE, confidence_threshold=0.0)
        strict = await ask(client, request=MILES, confidence_threshold=0.99)

    assert result.is_error
    data = structured(result)
    assert data["success"] is False
    error = data["error"]
    assert error["code"] == "TOOL_NOT_FOUND"
    details = error["details"]
    assert set(details) == {"search_method", "searched_tools", "highest_confidence", "threshold"}
    assert details["search_method"] == "hybrid"
    assert details["searched_tools"] == DEMO_TOOLS
    assert details["threshold"] == 0.5
    options = cast(list[dict[str, Any]], error["fallback_options"])
    assert 1 <= len(options) <= 3
    assert details["highest_confidence"] == options[0]["confidence"] < 0.5
    assert all({"tool_name", "confidence", "reasoning"} <= set(option) for option in options)
    assert error["suggestions"] and all(isinstance(hint, str) for hint in error["suggestions"])
    assert "TOOL_NOT_FOUND" in first_line(result) and "Nothing was run" in first_line(result)

    # include_error_details: each closest tool's score by method.
    scores = structured(detailed)["error"]["details"]["scores"]
    assert list(scores) == [option["tool_name"] for option in options]
    assert all({"rule", "semantic"} <= set(score) for score in scores.values())

    # A threshold of 0: the closest tool is the choice (here it lacks an argument, so nothing runs).
    chosen = structured(anything)
    assert "error" not in chosen
    assert chosen["tool_name"] == options[0]["tool_name"]
    assert chosen["confidence_score"] == pytest.approx(options[0]["confidence"])

    # A threshold above the best match: even a good match is not run.
    assert strict.is_error
    assert structured(strict)["error"]["code"] == "TOOL_NOT_FOUND"
    assert structured(strict)["error"]["details"]["threshold"] == 0.99


# Arguments missing or wrong


@pytest.mark.parametrize("era", ERAS)
async def test_a_missing_required_value_is_never_invented_and_nothing_runs(era: str, tmp_path: Path) -> None:
    purged: list[dict[str, Any]] = []
    audit = tmp_path / "audit.jsonl"
    async with smart_gateway(purged=purged, audit_path=audit) as gateway, smart_client(gateway, era) as client:
        purge = await ask(client, request="purge the notes")
        convert = await ask(client, request="convert miles to km")

    assert purge.is_error and convert.is_error
    assert purged == [] and audit_lines(audit) == []
    data = structured(purge)
    assert data["tool_name"] == "vault/purge_notes"
    assert data["parameter_extraction"]["missing_required"] == ["folder"]
    assert data["parameter_extraction"]["status"] == "failed"
    assert "execution_result" not in data
    assert "missing folder" in first_line(purge)
    units = structured(convert)
    assert units["tool_name"] == "units/convert_units"
    extraction = units["parameter_extraction"]
    assert "value" in extraction["missing_required"]
    assert "value" not in extraction["extracted_parameters"]
    assert extraction["status"] == "partial_success"
    assert any("value" in hint for hint in extraction["suggestions"])


@pytest.mark.parametrize("era", ERAS)
async def test_invalid_explicit_arguments_are_refused_and_audited(era: str, tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    arguments = {"value": "five", "from_unit": "mi", "to_unit": "km"}
    async with smart_gateway(audit_path=audit) as gateway, smart_client(gateway, era) as client:
        result = await ask(client, request="convert five miles", tool="units/convert_units", arguments=arguments)

    assert result.is_error
    data = structured(result)
    assert "execution_result" not in data
    extraction = data["parameter_extraction"]
    assert extraction["validation_results"]["value"].startswith("invalid - ")
    assert extraction["validation_results"]["from_unit"] == "valid"
    assert extraction["extracted_parameters"] == arguments
    assert extraction["suggestions"]
    (line,) = audit_lines(audit)
    assert (line["server"], line["tool"], line["outcome"], line["code"]) == (
        "units",
        "convert_units",
        "error",
        "VALIDATION_ERROR",
    )
    assert line["arguments"] == arguments
    assert line["smart"] == {"method": "explicit", "confidence": 1.0, "request": line["smart"]["request"]}


# The explicit second round


@pytest.mark.parametrize("era", ERAS)
async def test_tool_and_arguments_run_that_tool_directly(era: str) -> None:
    arguments = {"value": 5, "from_unit": "mi", "to_unit": "km"}
    async with smart_gateway() as gateway, smart_client(gateway, era) as client:
        named = await ask(client, request="convert", tool="units/convert_units", arguments=arguments)
        bare = await ask(client, request="convert", tool="convert_units", arguments=arguments)
        underscored = await ask(client, request="convert", tool="units__convert_units", arguments=arguments)
        colon = await ask(client, request="convert", tool="units:convert_units", arguments=arguments)
        unknown = await ask(client, request="convert", tool="nope/nothing", arguments={})
        unknown_bare = await ask(client, request="convert", tool="teleport", arguments={})
        no_such_tool = await ask(client, request="convert", tool="units/teleport", arguments={})

    for result in (named, bare, underscored, colon):
        assert not result.is_error, text(result)
        data = structured(result)
        assert data["tool_name"] == "units/convert_units"
        assert (data["method"], data["confidence_score"]) == ("explicit", 1.0)
        assert data["discovery_reasoning"] == "Explicit(units/convert_units)"
        assert data["parameters"] == arguments
        assert data["parameter_extraction"]["source"] == "given"
        assert data["execution_result"]["structuredContent"]["result"] == pytest.approx(8.04672)
    for result, name in ((unknown, "nope/nothing"), (unknown_bare, "teleport")):
        assert result.is_error
        error = structured(result)["error"]
        assert error["code"] == "INVALID_ARGUMENTS"
        assert f"No tool {name!r}" in error["message"] and "server/tool" in error["message"]
    assert no_such_tool.is_error
    assert structured(no_such_tool)["error"]["code"] == "TOOL_NOT_FOUND"
    assert "'teleport'" in structured(no_such_tool)["error"]["message"]
    # The next step is worded for an agent whose one tool is smart_tool_discovery, not the meta-tools.
    assert "smart_tool_discovery" in text(no_such_tool) and "search_tools" not in text(no_such_tool)


# Destructive tools


@pytest.mark.parametrize("era", ERAS)
async def test_a_destructive_tool_runs_when_the_user_confirms_through_elicitation(era: str, tmp_path: Path) -> None:
    purged: list[dict[str, Any]] = []
    audit = tmp_path / "audit.jsonl"
    user = Confirmer("accept", {"confirm": True})
    async with (
        smart_gateway(purged=purged, audit_path=audit) as gateway,
        smart_client(gateway, era, elicitation_callback=user) as client,
    ):
        result = await ask(client, request=PURGE)

    assert not result.is_error, text(result)
    assert purged == [{"folder": "archive"}]
    data = structured(result)
    assert data["tool_name"] == "vault/purge_notes" and data["parameters"] == {"folder": "archive"}
    (question,) = user.asked
    assert isinstance(question, types.ElicitRequestFormParams)
    assert "vault/purge_notes" in question.message and "archive" in question.message
    assert question.requested_schema["required"] == ["confirm"]
    (line,) = audit_lines(audit)
    assert (line["tool"], line["outcome"]) == ("purge_notes", "ok")


@pytest.mark.parametrize(
    ("action", "content"),
    [("decline", None), ("cancel", None), ("accept", {"confirm": False})],
    ids=["decline", "cancel", "accept-without-confirm"],
)
@pytest.mark.parametrize("era", ERAS)
async def test_a_destructive_tool_the_user_does_not_confirm_is_not_run(
    era: str, action: str, content: dict[str, Any] | None
) -> None:
    user = Confirmer(action, content)
    purged: list[dict[str, Any]] = []
    async with (
        smart_gateway(purged=purged) as gateway,
        smart_client(gateway, era, elicitation_callback=user) as client,
    ):
        result = await ask(client, request=PURGE)

    assert purged == []
    assert len(user.asked) == 1
    data = structured(result)
    assert data["status"] == "declined" and data["success"] is False
    assert "declined" in first_line(result) and "nothing was run" in first_line(result)


@pytest.mark.parametrize("era", ERAS)
async def test_without_elicitation_a_destructive_tool_waits_for_its_proposed_confirmation(era: str) -> None:
    purged: list[dict[str, Any]] = []
    async with smart_gateway(purged=purged) as gateway, smart_client(gateway, era) as client:
        first = await ask(client, request=PURGE)
        assert purged == []
        data = structured(first)
        assert data["status"] == "confirmation_required"
        planned = data["planned_call"]
        assert planned["confirmation_id"].startswith("cf1_")
        assert planned == {
            "tool": "vault/purge_notes",
            "arguments": {"folder": "archive"},
            "confirm": True,
            "confirmation_id": planned["confirmation_id"],
        }
        assert "confirm=true" in first_line(first) and planned["confirmation_id"] in first_line(first)

        # confirm with plain words only: the request may not mean what the agent thinks, so not run.
        words_only = await ask(client, request=PURGE, confirm=True)
        assert structured(words_only)["status"] == "confirmation_required"
        # the planned call without confirm: still asks.
        unconfirmed = await ask(client, request=PURGE, tool=planned["tool"], arguments=planned["arguments"])
        assert structured(unconfirmed)["status"] == "confirmation_required"
        assert purged == []

        again = await ask(client, request=PURGE, **planned)
        assert not again.is_error, text(again)
        assert purged == [{"folder": "archive"}]
        assert structured(again)["method"] == "explicit"


@pytest.mark.parametrize("era", ERAS)
async def test_confirm_with_only_a_request_still_asks_the_user(era: str) -> None:
    purged: list[dict[str, Any]] = []
    user = Confirmer("decline")
    async with (
        smart_gateway(purged=purged) as gateway,
        smart_client(gateway, era, elicitation_callback=user) as client,
    ):
        result = await ask(client, request=PURGE, confirm=True)
    assert len(user.asked) == 1
    assert structured(result)["status"] == "declined"
    assert purged == []


# Rules and scopes


@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_disabled_by_the_rules_is_never_chosen_nor_run(era: str) -> None:
    purged: list[dict[str, Any]] = []
    rules = [ToolRule(pattern=["purge_notes"], enabled=False)]
    async with smart_gateway() as open_gateway, smart_client(open_gateway, era) as open_client:
        unruled = structured(await ask(open_client, request=PURGE, max_suggestions=10))
    assert "vault/purge_notes" in names_of(unruled["suggestions"])

    async with smart_gateway(rules=rules, purged=purged) as gateway, smart_client(gateway, era) as client:
        ranked = structured(await ask(client, request=PURGE, max_suggestions=10))
        plain = await ask(client, request=PURGE)
        named = await ask(client, request=PURGE, tool="vault/purge_notes", arguments={"folder": "a"}, confirm=True)
        bare = await ask(client, request=PURGE, tool="purge_notes", arguments={"folder": "a"}, confirm=True)

    assert "vault/purge_notes" not in names_of(ranked["suggestions"])
    assert structured(plain).get("tool_name") != "vault/purge_notes"
    assert named.is_error and structured(named)["error"]["code"] == "TOOL_DISABLED"
    assert "disabled" in structured(named)["error"]["message"]
    # By its bare name too: the tool exists, and the answer says it is disabled (not that it is unknown).
    assert bare.is_error and structured(bare)["error"]["code"] == "TOOL_DISABLED"
    assert purged == []


@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_tagged_dangerous_by_the_rules_needs_confirmation(era: str) -> None:
    request = "list the notes in folder 'archive'"
    rules = [ToolRule(pattern=["list_notes"], tags=["dangerous"])]
    async with smart_gateway() as open_gateway, smart_client(open_gateway, era) as open_client:
        untagged = await ask(open_client, request=request)
    assert not untagged.is_error, text(untagged)
    assert structured(untagged)["tool_name"] == "vault/list_notes"
    assert "status" not in structured(untagged)

    user = Confirmer("accept", {"confirm": True})
    async with (
        smart_gateway(rules=rules) as gateway,
        smart_client(gateway, era) as client,
        smart_client(gateway, era, elicitation_callback=user) as asking,
    ):
        held = await ask(client, request=request)
        confirmed = await ask(asking, request=request)
    data = structured(held)
    assert data["status"] == "confirmation_required"
    assert data["planned_call"]["tool"] == "vault/list_notes"
    assert "execution_result" not in data
    assert len(user.asked) == 1
    assert (
        not confirmed.is_error and structured(confirmed)["execution_result"]["content"][0]["text"] == "note-1, note-2"
    )


@pytest.mark.parametrize("era", ERAS)
async def test_smart_mode_stays_inside_the_callers_scope(era: str) -> None:
    """Over HTTP with scoped principals (tests/helpers/scoped_gateway.py): alpha sees `alpha.books` and
    `kitchen` without `delete_*`; beta sees only `beta.films`."""
    async with (
        two_namespaces() as gateway,
        scoped_http(gateway, "smart") as url,
        client_with(url, "alpha-token", era) as alpha,
        client_with(url, None, era) as admin,
    ):
        everything = structured(await ask(admin, request="delete the city 'Paris'", max_suggestions=10))
        ranked = structured(await ask(alpha, request="delete the city 'Paris'", max_suggestions=10))
        prompts = structured(await ask(alpha, request="add a prompt named 'x'", max_suggestions=10))
        other_namespace = await ask(alpha, request="x", tool="beta.films/add_prompt", arguments={"name": "x"})
        hidden = await ask(alpha, request="x", tool="kitchen/delete_city", arguments={"city": "Paris"}, confirm=True)
        own = await ask(alpha, request="x", tool="add_prompt", arguments={"name": "x"})

    assert names_of(everything["suggestions"])[0] == "kitchen/delete_city"  # unscoped, it is the one
    assert "kitchen/delete_city" not in names_of(ranked["suggestions"])
    assert names_of(prompts["suggestions"])[0] == "alpha.books/add_prompt"
    assert not any(name.startswith("beta.") for name in names_of(prompts["suggestions"]))
    assert other_namespace.is_error and structured(other_namespace)["error"]["code"] == "INVALID_ARGUMENTS"
    assert hidden.is_error and structured(hidden)["error"]["code"] == "TOOL_NOT_FOUND"
    assert not own.is_error, text(own)
    assert structured(own)["tool_name"] == "alpha.books/add_prompt"


# The audit log


@pytest.mark.parametrize("era", ERAS)
async def test_the_audit_line_of_a_smart_execution_says_how_the_tool_was_chosen(era: str, tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    explicit = {"value": 1, "from_unit": "km", "to_unit": "m"}
    async with (
        smart_gateway(audit_path=audit) as gateway,
        smart_client(gateway, era, mode="discovery", smart_tool=True) as client,
    ):
        chosen = structured(await ask(client, request=MILES))
        await ask(client, request="one km in metres", tool="units/convert_units", arguments=explicit)
        with anyio.fail_after(30):
            meta = await client.call_tool(
                "execute_tool", {"server": "units", "tool": "convert_units", "arguments": explicit}
            )
        assert not meta.is_error, text(meta)

    smart_line, explicit_line, meta_line = audit_lines(audit)
    assert (smart_line["server"], smart_line["tool"], smart_line["outcome"]) == ("units", "convert_units", "ok")
    assert smart_line["arguments"] == MILES_ARGUMENTS
    assert smart_line["smart"] == {"method": "hybrid", "confidence": chosen["confidence_score"], "request": MILES}
    assert explicit_line["smart"] == {"method": "explicit", "confidence": 1.0, "request": "one km in metres"}
    assert "smart" not in meta_line  # execute_tool's own line: nothing chose the tool


# Learning


async def test_learning_remembers_what_ran_and_prefers_it_until_forgotten(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    learning = SmartConfig(enable_learning=True)
    taught = {"text": "zebra migration patterns", "pattern": "zebra"}

    async with smart_gateway() as gateway:
        async with smart_client(gateway, "auto", memory_path=path) as forgetful:  # learning off: no file
            assert not (await ask(forgetful, request=MILES)).is_error
        assert not path.exists()

        async with smart_client(gateway, "auto", smart=learning, memory_path=path) as client:
            before = cast(
                list[dict[str, Any]], structured(await ask(client, request=NONSENSE, max_suggestions=3))["suggestions"]
            )
            assert not (await ask(client, request=MILES)).is_error
            assert path.exists()
            # The agent runs another tool for the same words: that is learnt, and the cached match is stale.
            ran = await ask(client, request=NONSENSE, tool="text/find_matches", arguments=taught)
            assert not ran.is_error, text(ran)
            after = structured(await ask(client, request=NONSENSE, max_suggestions=3))["suggestions"]

    # Without learning the request's closest tool is another, close enough for a learnt nudge to pass it.
    assert names_of(before)[0] != "text/find_matches"
    assert "text/find_matches" in names_of(before)
    assert after[0]["tool_name"] == "text/find_matches" and "Learned" in after[0]["reasoning"]

    saved = json.loads(path.read_text(encoding="utf-8"))
    remembered = cast(dict[str, dict[str, int]], saved["requests"])
    assert any("convert" in words and "mile" in words for words in remembered)
    assert {"units/convert_units", "text/find_matches"} <= {tool for tools in remembered.values() for tool in tools}
    assert SmartMemory(path).similar(MILES) == {("units", "convert_units"): 1.0}
    assert SmartMemory(path).similar("convert 7 miles to km")[("units", "convert_units")] >= 0.5

    # A new gateway with the same file prefers what was learnt.
    async with smart_gateway() as gateway, smart_client(gateway, "legacy", smart=learning, memory_path=path) as client:
        miles = structured(await ask(client, request=MILES))
        nonsense = structured(await ask(client, request=NONSENSE, max_suggestions=3))
    assert miles["tool_name"] == "units/convert_units" and "Learned" in miles["discovery_reasoning"]
    assert nonsense["suggestions"][0]["tool_name"] == "text/find_matches"

    assert SmartMemory(path).forget() == 2
    assert not path.exists()
    assert SmartMemory(path).similar(MILES) == {}
    async with smart_gateway() as gateway, smart_client(gateway, "auto", smart=learning, memory_path=path) as client:
        miles = structured(await ask(client, request=MILES))
        nonsense = structured(await ask(client, request=NONSENSE, max_suggestions=3))
    assert "Learned" not in miles["discovery_reasoning"]
    assert names_of(nonsense["suggestions"]) == names_of(before)


# The tool-match cache


async def test_the_same_request_gives_the_same_answer_until_the_catalog_changes() -> None:
    async with smart_gateway() as gateway, smart_client(gateway, "auto") as client:
        ranked = await ask(client, request=MILES, max_suggestions=3)
        ranked_again = await ask(client, request=MILES, max_suggestions=3)
        ran = await ask(client, request=MILES)
        ran_again = await ask(client, request=MILES)
        assert structured(ranked_again) == structured(ranked)
        assert structured(ran_again) == structured(ran)
        assert ran_again.content == ran.content

        with anyio.fail_after(30):
            await gateway.set_servers([u.spec for u in gateway.upstreams if u.name != "units"], owner="config")
        gone = await ask(client, request=MILES, max_suggestions=3)
        not_run = await ask(client, request=MILES)

    assert structured(ranked)["suggestions"][0]["tool_name"] == "units/convert_units"
    # No candidate left: suggestions are TOOL_NOT_FOUND too, never an empty success.
    gone_data = structured(gone)
    remaining = names_of(gone_data["suggestions"]) if "suggestions" in gone_data else []
    assert not any(name.startswith("units/") for name in remaining)
    assert remaining or gone_data["error"]["code"] == "TOOL_NOT_FOUND"
    assert not_run.is_error
    assert structured(not_run)["error"]["code"] == "TOOL_NOT_FOUND"
    assert structured(not_run)["error"]["details"]["searched_tools"] == DEMO_TOOLS - 3


# Selection modes


@pytest.mark.parametrize(
    ("mode", "method", "reasoning"),
    [
        ("rule_based", "rule", r"^Rule\(\d\.\d{3}\)$"),
        ("semantic_based", "semantic", r"^Semantic\(\d\.\d{3}\)$"),
        ("hybrid", "hybrid", HYBRID.pattern),
        # Graceful degradation: without an LLM, llm_based decides as hybrid, and says so.
        ("llm_based", "hybrid", HYBRID.pattern),
    ],
)
async def test_each_selection_mode_decides_and_says_how(mode: Any, method: str, reasoning: str) -> None:
    async with (
        smart_gateway() as gateway,
        smart_client(gateway, "auto", smart=SmartConfig(tool_selection_mode=mode)) as client,
    ):
        result = await ask(client, request=MILES)
    assert not result.is_error, text(result)
    data = structured(result)
    assert data["tool_name"] == "units/convert_units" and data["parameters"] == MILES_ARGUMENTS
    assert data["method"] == method
    assert re.match(reasoning, data["discovery_reasoning"]), data["discovery_reasoning"]
    assert f"[{method}," in first_line(result)


@pytest.mark.parametrize("era", ERAS)
async def test_preferred_tools_and_context_nudge_the_choice(era: str) -> None:
    async with smart_gateway() as gateway, smart_client(gateway, era) as client:
        plain = structured(await ask(client, request=NONSENSE, max_suggestions=3))["suggestions"]
        preferred = structured(
            await ask(client, request=NONSENSE, max_suggestions=3, preferred_tools=["text/find_matches"])
        )["suggestions"]
    assert plain[0]["tool_name"] != "text/find_matches"
    assert preferred[0]["tool_name"] == "text/find_matches"
    assert "Preferred" in preferred[0]["reasoning"]


@pytest.mark.parametrize("era", ERAS)
async def test_max_output_chars_caps_what_the_chosen_tool_returns(era: str) -> None:
    arguments = {"path": "recipes/pancakes.md"}
    async with smart_gateway() as gateway, smart_client(gateway, era) as client:
        whole = await ask(client, request="open and read the text file recipes/pancakes.md")
        capped = await ask(client, request="open and read the text file recipes/pancakes.md", max_output_chars=200)
    assert not whole.is_error and not capped.is_error, text(capped)
    assert structured(whole)["tool_name"] == "files/read_file"
    assert structured(whole)["parameters"] == arguments == structured(capped)["parameters"]
    assert len(text(capped)) < len(text(whole))
    assert "[toolscout: output cut to 200 of" in text(capped)
    assert "Fluffy pancakes" in text(whole)


# A public server


@pytest.mark.parametrize("era", ERAS)
async def test_smart_mode_runs_server_everythings_echo(era: str) -> None:
    async with everything_gateway() as gateway, smart_client(gateway, era) as client:
        assert client.protocol_version == protocol_of(era)
        result = await ask(client, request="echo the message 'hello'")
    assert not result.is_error, text(result)
    data = structured(result)
    assert data["tool_name"] == "everything/echo"
    assert data["parameters"] == {"message": "hello"}
    assert data["execution_result"]["content"] == [{"type": "text", "text": "Echo: hello"}]
    assert result.content[1:] == [types.TextContent(text="Echo: hello")]
