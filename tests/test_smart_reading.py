"""Smart mode reads values from plain words without an LLM, grounded in real tools' input schemas.

Each family (units, record ids, search terms, titles and bodies, arithmetic, places as time zones,
dates and times, enum words) is a table of requests over the bundled demo servers' tools and
`mcp-server-time`'s, their schemas listed from the real servers in process. Negative rows hold the
rule the extractor keeps: a value the words do not give is reported missing, never invented. The
last test runs requests through the real smart engine, with the demo servers over the memory
transport, and checks the tools ran with the right arguments."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from datetime import date
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server import MCPServer
from mcp_server_time.server import create_server as time_server

from tests.helpers.gateway_client import structured, text
from tests.helpers.smart_gateway import SMART, smart_client
from toolscout.demo import files, notes, units
from toolscout.demo import text as text_demo
from toolscout.gateway.core import Gateway
from toolscout.smart import places
from toolscout.smart.extraction import extract_arguments
from toolscout.upstream import InProcessUpstream, UpstreamSpec

TODAY = date(2026, 3, 2)  # a Monday


def servers() -> dict[str, MCPServer[Any]]:
    return {
        "units": units.build_server(),
        "text": text_demo.build_server(),
        "files": files.build_server(),
        "notes": notes.build_server(),
        "time": time_server("UTC"),
    }


async def _schemas() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for server in servers().values():
        async with Client(server) as client:
            with anyio.fail_after(20):
                listed = await client.list_tools()
            found.update({tool.name: dict(tool.input_schema) for tool in listed.tools})
    return found


@pytest.fixture(scope="module")
def schemas() -> dict[str, dict[str, Any]]:
    """Every demo tool's and `mcp-server-time`'s input schema, as their servers list them."""
    return anyio.run(_schemas)


def read(schemas: dict[str, dict[str, Any]], tool: str, request: str) -> tuple[dict[str, Any], list[str]]:
    found = extract_arguments(request, schemas[tool], today=TODAY)
    return found.arguments, found.missing_required


UNITS = [
    ("convert 5 miles to kilometers", {"value": 5, "from_unit": "miles", "to_unit": "kilometers"}),
    ("convert 5 miles to km", {"value": 5, "from_unit": "miles", "to_unit": "km"}),
    ("convert 100 F into Celsius", {"value": 100, "from_unit": "F", "to_unit": "Celsius"}),
    ("5 kg in pounds", {"value": 5, "from_unit": "kg", "to_unit": "pounds"}),
    ("how many km is 26.2 miles", {"value": 26.2, "from_unit": "miles", "to_unit": "km"}),
]


@pytest.mark.parametrize(("request_text", "expected"), UNITS)
def test_units_are_read_by_their_words_in_either_direction(
    schemas: dict[str, dict[str, Any]], request_text: str, expected: dict[str, Any]
) -> None:
    assert read(schemas, "convert_units", request_text) == (expected, [])


def test_a_unit_enum_gets_its_own_spelling_and_a_foreign_unit_gets_none() -> None:
    schema = {
        "type": "object",
        "properties": {"unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}, "city": {"type": "string"}},
        "required": ["unit"],
    }
    assert extract_arguments("weather in Paris in °F", schema).arguments["unit"] == "fahrenheit"
    assert extract_arguments("weather in Paris in C", schema).arguments["unit"] == "celsius"
    # Kelvin is no value of this enum: nothing is made up for it.
    assert extract_arguments("weather in Paris in kelvin", schema).missing_required == ["unit"]


IDS = [
    ("get_note", "show me note 1", {"id": "1"}),
    ("get_note", "open note #42", {"id": "42"}),
    ("delete_note", "delete the second note", {"id": "2"}),
    ("get_note", "what does note number 7 say", {"id": "7"}),
]


@pytest.mark.parametrize(("tool", "request_text", "expected"), IDS)
def test_record_ids_are_read_after_their_noun_or_as_an_ordinal(
    schemas: dict[str, dict[str, Any]], tool: str, request_text: str, expected: dict[str, Any]
) -> None:
    assert read(schemas, tool, request_text) == (expected, [])


def test_an_integer_id_is_read_as_an_integer() -> None:
    schema = {
        "type": "object",
        "properties": {"item_id": {"type": "integer", "description": "The item's id"}},
        "required": ["item_id"],
    }
    assert extract_arguments("show item #42", schema).arguments == {"item_id": 42}
    assert extract_arguments("show the third item", schema).arguments == {"item_id": 3}


SEARCHES = [
    ("search_notes", "search my notes for eggs", {"text": "eggs"}),
    ("search_notes", "find notes about pancakes", {"text": "pancakes"}),
    ("search_notes", "search for eggs in my notes", {"text": "eggs"}),
    ("search_notes", "look for 'olive oil' in my notes", {"text": "olive oil"}),
    ("search_notes", "which notes mention pancakes", {"text": "pancakes"}),
    ("list_notes", "list notes tagged work", {"tag": "work"}),
]


@pytest.mark.parametrize(("tool", "request_text", "expected"), SEARCHES)
def test_search_terms_are_read_after_the_search_verb(
    schemas: dict[str, dict[str, Any]], tool: str, request_text: str, expected: dict[str, Any]
) -> None:
    assert read(schemas, tool, request_text) == (expected, [])


TITLES = [
    ('add a note titled "groceries" with body "milk and eggs"', {"title": "groceries", "body": "milk and eggs"}),
    ("add a note titled groceries with body milk and eggs", {"title": "groceries", "body": "milk and eggs"}),
    (
        "create a note called Packing list saying passport and charger",
        {"title": "Packing list", "body": "passport and charger"},
    ),
]


@pytest.mark.parametrize(("request_text", "expected"), TITLES)
def test_titles_and_bodies_are_read_quoted_or_unquoted(
    schemas: dict[str, dict[str, Any]], request_text: str, expected: dict[str, Any]
) -> None:
    assert read(schemas, "create_note", request_text) == (expected, [])


EXPRESSIONS = [
    ("calculate 2+3*4", "2+3*4"),
    ("what is 12 * (3 + 4)?", "12 * (3 + 4)"),
    ("what's 2 plus 3 times 4", "2 + 3 * 4"),
    ("compute sqrt(2) * pi", "sqrt(2) * pi"),
    ("what is 2 to the power of 10", "2 ** 10"),  # the description asks for Python syntax
    ("evaluate (1+2)/3", "(1+2)/3"),
    ("what is 15% of 80", "15 / 100 * 80"),
]


@pytest.mark.parametrize(("request_text", "expected"), EXPRESSIONS)
def test_arithmetic_is_read_as_an_expression(
    schemas: dict[str, dict[str, Any]], request_text: str, expected: str
) -> None:
    assert read(schemas, "calculate", request_text) == ({"expression": expected}, [])


ZONES = [
    ("what time is it in Tokyo", "Asia/Tokyo"),
    ("what time is it in Asia/Tokyo", "Asia/Tokyo"),
    ("what time is it in new york", "America/New_York"),
    ("current time in San Francisco", "America/Los_Angeles"),
    ("what's the time in Japan", "Asia/Tokyo"),
    ("time in UTC please", "UTC"),
]


@pytest.mark.parametrize(("request_text", "zone"), ZONES)
def test_places_are_read_as_iana_time_zones(schemas: dict[str, dict[str, Any]], request_text: str, zone: str) -> None:
    assert zone in places.zones()
    assert read(schemas, "get_current_time", request_text) == ({"timezone": zone}, [])


def test_two_zones_and_a_time_in_the_form_the_schema_asks_for(schemas: dict[str, dict[str, Any]]) -> None:
    both = {"source_timezone": "America/New_York", "target_timezone": "Europe/London", "time": "15:00"}
    assert read(schemas, "convert_time", "convert 3pm from New York to London") == (both, [])
    # "to" names the target even when it comes first.
    flipped = {"source_timezone": "Europe/Paris", "target_timezone": "Asia/Tokyo", "time": "09:30"}
    assert read(schemas, "convert_time", "what is 9:30 am to Tokyo time from Paris") == (flipped, [])


DATES: list[tuple[dict[str, Any], str, Any]] = [
    ({"type": "string", "format": "date"}, "book it for March 6th", "2026-03-06"),
    ({"type": "string", "format": "date"}, "book it for the 6th of March 2027", "2027-03-06"),
    ({"type": "string", "format": "date"}, "book it for tomorrow", "2026-03-03"),
    ({"type": "string", "format": "date"}, "book it for next Friday", "2026-03-06"),
    ({"type": "string", "description": "Day as MM/DD/YYYY"}, "book it for 2026-04-01", "04/01/2026"),
    ({"type": "string", "format": "time"}, "wake me at 7:15 pm", "19:15:00"),
    ({"type": "string", "format": "date-time"}, "remind me on April 2 at noon", "2026-04-02T12:00:00"),
]


@pytest.mark.parametrize(("spec", "request_text", "expected"), DATES)
def test_dates_and_times_are_written_in_the_schemas_format(
    spec: dict[str, Any], request_text: str, expected: Any
) -> None:
    schema = {"type": "object", "properties": {"when": spec}, "required": ["when"]}
    assert extract_arguments(request_text, schema, today=TODAY).arguments == {"when": expected}


ENUMS = [
    ("change_case", "uppercase the text hello", {"style": "upper", "text": "hello"}),
    ("change_case", "make 'Hello There' lowercase", {"style": "lower", "text": "Hello There"}),
    ("change_case", "put 'make it so' in camelCase", {"style": "camel", "text": "make it so"}),
    ("list_units", "list the temperature units", {"dimension": "temperature"}),
]


@pytest.mark.parametrize(("tool", "request_text", "expected"), ENUMS)
def test_enum_values_are_read_by_their_words(
    schemas: dict[str, dict[str, Any]], tool: str, request_text: str, expected: dict[str, Any]
) -> None:
    assert read(schemas, tool, request_text)[0] == expected


NOTHING_TO_READ = [
    ("convert_units", "convert 5 miles", ["to_unit"]),  # no target unit said
    ("convert_units", "convert miles", ["value", "from_unit", "to_unit"]),  # no number, no direction
    ("get_note", "show me my latest note", ["id"]),  # "latest" is no id
    ("get_current_time", "what time is it", ["timezone"]),  # no place: the server's default is not ours to pick
    ("get_current_time", "what time is it in the US", ["timezone"]),  # a country of many zones
    ("get_current_time", "what time is it in Atlantis", ["timezone"]),
    ("calculate", "calculate my taxes", ["expression"]),
    ("calculate", "calculate 42", ["expression"]),  # a number alone is no arithmetic
    ("search_notes", "search my notes", ["text"]),
    ("create_note", "add a note", ["title", "body"]),
    ("convert_time", "convert the time to London", ["source_timezone", "time"]),
]


@pytest.mark.parametrize(("tool", "request_text", "missing"), NOTHING_TO_READ)
def test_nothing_is_invented_when_the_words_do_not_say(
    schemas: dict[str, dict[str, Any]], tool: str, request_text: str, missing: list[str]
) -> None:
    arguments, reported = read(schemas, tool, request_text)
    assert reported == missing
    assert not set(missing) & set(arguments)


def test_a_date_time_without_a_time_is_not_completed_with_midnight() -> None:
    schema = {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}, "required": ["at"]}
    assert extract_arguments("remind me tomorrow", schema, today=TODAY).missing_required == ["at"]


@asynccontextmanager
async def demo_gateway() -> AsyncGenerator[Gateway]:
    """A gateway over the demo units, text and notes servers and `mcp-server-time`, in process."""
    chosen = {name: server for name, server in servers().items() if name != "files"}
    specs = [UpstreamSpec(name, InProcessUpstream(server)) for name, server in chosen.items()]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(20):
            await gateway.settle()
        yield gateway


RUNS = [
    (
        "convert 5 miles to kilometers",
        "units/convert_units",
        {"value": 5, "from_unit": "miles", "to_unit": "kilometers"},
    ),
    ("show me note 1", "notes/get_note", {"id": "1"}),
    ("calculate 2+3*4", "units/calculate", {"expression": "2+3*4"}),
    ("search my notes for eggs", "notes/search_notes", {"text": "eggs"}),
    ("what time is it in Tokyo", "time/get_current_time", {"timezone": "Asia/Tokyo"}),
    (
        "convert 3pm from New York to London",
        "time/convert_time",
        {"source_timezone": "America/New_York", "target_timezone": "Europe/London", "time": "15:00"},
    ),
]


@pytest.mark.anyio
async def test_plain_requests_run_through_smart_mode_with_the_arguments_read_from_them() -> None:
    async with demo_gateway() as gateway, smart_client(gateway, "auto") as client:
        for request, tool, arguments in RUNS:
            with anyio.fail_after(30):
                result = await client.call_tool(SMART, {"request": request})
            assert not result.is_error, text(result)
            data = structured(result)
            assert (data["tool_name"], data["parameters"]) == (tool, arguments), request
            assert data["success"] is True, data
        with anyio.fail_after(30):
            note = structured(await client.call_tool(SMART, {"request": "show me note 1"}))
    assert "Groceries" in str(note["execution_result"])


def test_operands_go_in_order_only_when_each_has_its_number() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "number", "description": "First number"},
            "b": {"type": "number", "description": "Second number"},
        },
        "required": ["a", "b"],
    }
    assert extract_arguments("add 3 and 4", schema).arguments == {"a": 3, "b": 4}
    one = extract_arguments("add 3 to something", schema)
    assert (one.arguments, one.missing_required) == ({}, ["a", "b"])
