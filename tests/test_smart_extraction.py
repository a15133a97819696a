"""`smart` mode's deterministic parameter mapper: plain words to arguments, never an invented value."""

from __future__ import annotations

from typing import Any

import pytest

from toolscout.smart.extraction import extract_arguments, search_text


def schema(required: list[str] | None = None, **properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required or []}


STRING: dict[str, Any] = {"type": "string"}


def test_the_specs_examples_map_to_their_parameters() -> None:
    ping = extract_arguments(
        "ping google.com 5 times",
        schema(["host"], host=STRING, count={"type": "integer", "description": "Number of pings"}),
    )
    assert ping.arguments == {"host": "google.com", "count": 5}
    assert ping.missing_required == []
    read = extract_arguments("read the config.yaml file", schema(["path"], path=STRING))
    assert read.arguments == {"path": "config.yaml"}
    assert read.evidence["path"].kind == "path"
    convert = extract_arguments(
        "convert 5 miles to km",
        schema(["value", "from_unit", "to_unit"], value={"type": "number"}, from_unit=STRING, to_unit=STRING),
    )
    assert convert.arguments == {"value": 5, "from_unit": "miles", "to_unit": "km"}


def test_a_required_value_the_request_does_not_state_is_reported_missing_not_invented() -> None:
    found = extract_arguments(
        "send an email to bob@example.com with subject 'Quarterly report'",
        schema(["to", "subject", "body"], to=STRING, subject=STRING, body=STRING),
    )
    assert found.arguments == {"to": "bob@example.com", "subject": "Quarterly report"}
    assert found.missing_required == ["body"]
    nothing = extract_arguments("what's the weather like", schema(["city"], city=STRING))
    assert nothing.arguments == {}
    assert nothing.missing_required == ["city"]


def test_key_value_pairs_are_read_as_the_parameters_types() -> None:
    found = extract_arguments(
        "fetch https://example.com/a?b=1 with max_length=500, raw: true and format=Markdown",
        schema(
            ["url"],
            url={"type": "string", "format": "uri"},
            max_length={"type": "integer"},
            raw={"type": "boolean"},
            format={"type": "string", "enum": ["markdown", "html"]},
        ),
    )
    # The URL is one value: its host and its query string are not read again as arguments.
    assert found.arguments == {"url": "https://example.com/a?b=1", "max_length": 500, "raw": True, "format": "markdown"}
    assert found.evidence["max_length"].score == 1.0


def test_a_number_goes_only_to_a_parameter_of_its_type() -> None:
    found = extract_arguments("show the last 2.5 results", schema([], limit={"type": "integer"}))
    assert found.arguments == {}
    found = extract_arguments("timeout 30 seconds please", schema([], timeout={"type": "number"}, name=STRING))
    assert found.arguments == {"timeout": 30}
    # A number that counts something else is not the lone number of another parameter.
    found = extract_arguments("an apartment with 3 baths", schema([], number_of_beds={"type": "integer"}))
    assert found.arguments == {}


def test_enum_values_named_in_the_text_and_the_longest_wins() -> None:
    found = extract_arguments(
        "a one way flight in premium economy class",
        schema([], seating_class={"type": "string", "enum": ["Economy", "Premium Economy", "Business"]}),
    )
    assert found.arguments == {"seating_class": "Premium Economy"}
    # A digit of a decimal or a time is not the enum value "2".
    found = extract_arguments(
        "a rating of 4.2 at 2:45 pm", schema([], adults={"type": "string", "enum": ["1", "2", "3"]})
    )
    assert found.arguments == {}


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        ("book it for the 6th of March", "6th of March"),
        ("on 2026-12-01 please", "2026-12-01"),
        ("Saturday this week", "Saturday this week"),
        ("leaving tomorrow", "tomorrow"),
    ],
)
def test_dates_are_copied_as_written(request_text: str, expected: str) -> None:
    found = extract_arguments(request_text, schema(["date"], date={"type": "string", "description": "The date"}))
    assert found.arguments == {"date": expected}


def test_names_after_called_and_prepositions_go_to_the_parameter_they_name() -> None:
    found = extract_arguments(
        "I like songs by Kesha from an album called Rainbow", schema([], artist=STRING, album=STRING)
    )
    assert found.arguments == {"album": "Rainbow"}
    movie = extract_arguments("movies directed by Cameron Crowe", schema([], directed_by=STRING))
    assert movie.arguments == {"directed_by": "Cameron Crowe"}
    # A verb after "to" is not a destination.
    place = extract_arguments("I need a house to stay", schema([], where_to=STRING))
    assert place.arguments == {}


def test_every_value_is_a_span_of_the_request_or_a_named_enum_value() -> None:
    request = "copy ./data/in.csv to /tmp/out.csv, notify ops@example.org at 9:30 am and keep 3 copies"
    found = extract_arguments(
        request,
        schema(
            ["source", "destination", "email"],
            source={"type": "string", "description": "Source file path"},
            destination={"type": "string", "description": "Destination file path"},
            email=STRING,
            time=STRING,
            copies={"type": "integer"},
        ),
    )
    assert found.arguments["email"] == "ops@example.org"
    assert found.arguments["time"] == "9:30 am"
    assert found.arguments["copies"] == 3
    assert {found.arguments["source"], found.arguments["destination"]} == {"./data/in.csv", "/tmp/out.csv"}
    assert all(str(value) in request for value in found.arguments.values())


def test_no_schema_or_no_properties_gives_nothing_and_misses_nothing() -> None:
    assert extract_arguments("anything at all", None).arguments == {}
    assert extract_arguments("anything", {"type": "object"}).missing_required == []


def test_spans_stop_where_their_value_does() -> None:
    # A year inside a date and the minutes of a time are not numbers of their own.
    found = extract_arguments(
        "a table on the 14th of March 2023 at 13:30 for 4 people",
        schema([], date=STRING, time=STRING, party_size={"type": "integer", "description": "Number of people"}),
    )
    assert found.arguments == {"date": "14th of March 2023", "time": "13:30", "party_size": 4}
    # A name ends with its sentence, and "I" is not part of a place.
    movie = extract_arguments(
        "Something directed by Simon Curtis. It should be a drama.", schema([], directed_by=STRING)
    )
    assert movie.arguments == {"directed_by": "Simon Curtis"}
    place = extract_arguments("I am travelling to Delhi, I need a house.", schema([], where_to=STRING))
    assert place.arguments == {"where_to": "Delhi"}
    # "time.will" is two words run together, not a host.
    salon = extract_arguments("not for a long time.will you find a salon", schema(["host"], host=STRING))
    assert salon.arguments == {}


def test_an_array_written_after_its_name_is_read_as_a_list() -> None:
    found = extract_arguments(
        "compare sample1: [22,33,42] and sample2: [23, 45, 44]",
        schema(["sample1", "sample2"], sample1={"type": "array"}, sample2={"type": "array"}),
    )
    assert found.arguments == {"sample1": [22, 33, 42], "sample2": [23, 45, 44]}


def test_a_bare_number_names_an_enum_value_only_beside_the_parameters_words() -> None:
    stars = {"type": "string", "enum": ["1", "2", "3", "4", "5"], "description": "Star rating of the hotel"}
    assert extract_arguments("find me 3 rooms in Paris", schema([], star_rating=stars)).arguments == {}
    found = extract_arguments("a hotel in Paris with a star rating of 4", schema([], star_rating=stars))
    assert found.arguments == {"star_rating": "4"}


def test_a_tool_search_reads_what_a_value_is_not_its_words() -> None:
    assert search_text("move /srv/app/log.txt to /srv/app/old-log.txt") == "move file to file"
    assert search_text("fetch https://example.com/logs?day=1 and mail bob@example.com") == (
        "fetch url and mail email address"
    )
    assert search_text("list the directory /srv/app").strip() == "list the directory"


def test_a_tool_search_reads_the_kinds_of_value_a_request_carries() -> None:
    # Two units of one dimension are a conversion: the dimension is what a converter's description names.
    assert search_text("turn 37 celsius into fahrenheit") == "turn 37 celsius into fahrenheit temperature units"
    assert search_text("convert 5 km to miles") == "convert 5 km to miles length units"
    assert search_text("show the first 200 bytes of notes.md") == "show the first 200 bytes of file"  # a limit
    assert search_text("the hour and minute hands at 6:30") == "the hour and minute hands at 6:30"  # no quantity
    assert search_text("convert 150 euros to dollars") == "convert 150 euros to dollars currency"  # money
    assert search_text("what's the time in Asia/Tokyo") == "what's the time in Asia/Tokyo timezone"
    assert search_text("what's the time in Tokyo") == "what's the time in Tokyo"  # a city is not a zone's name
    assert search_text("what is (3 + 4) * 12") == "what is (3 + 4) * 12 arithmetic expression"
    assert search_text("evaluate 144 / 12 - 3").endswith("arithmetic expression")
    assert search_text("what does sqrt(2) come to").endswith("arithmetic expression")
    # A destructive request is read by the word the destructive tool's description uses.
    assert search_text("get rid of note 42") == "delete note 42"
    assert search_text("please throw away the old drafts") == "please delete the old drafts"
    # Dates and ranges are not formulas.
    assert search_text("meetings on 2026-11-28 or 11/29") == "meetings on 2026-11-28 or 11/29"
    assert search_text("pages 3-4 of the report") == "pages 3-4 of the report"


def test_as_many_quoted_texts_as_required_strings_go_in_order() -> None:
    diff = schema(["before", "after"], before=STRING, after=STRING, context_lines={"type": "integer"})
    found = extract_arguments('what changed between "red green blue" and "red yellow blue"', diff)
    assert found.arguments == {"before": "red green blue", "after": "red yellow blue"}
    # Not when another string parameter could take one of them: no order decides then.
    other = schema(["before", "after"], before=STRING, after=STRING, label=STRING)
    assert extract_arguments('diff "apples" against "oranges"', other).arguments == {}
    # Nor when the counts differ.
    assert extract_arguments('diff "apples" against pears', diff).missing_required == ["before", "after"]
