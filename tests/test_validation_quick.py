"""The quick argument check (validation.py) never lets through what jsonschema would refuse.

Random instances (fixed seed) against schemas of every shape the check judges, and some it must
leave to jsonschema; every instance the gateway accepts, jsonschema accepts, and every one it
refuses lists the same violations jsonschema finds.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from jsonschema import Draft4Validator, Draft7Validator, Draft202012Validator

from toolscout.errors import ArgumentValidationError
from toolscout.gateway.validation import ArgumentValidator

SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"path": {"type": "string"}, "tail": {"type": "integer"}}, "required": ["path"]},
    {
        "type": "object",
        "properties": {
            "units": {"enum": ["metric", "imperial", 1]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "limit": {"type": ["integer", "null"]},
        },
        "additionalProperties": False,
    },
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"query": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}},
        "additionalProperties": {"type": "number"},
    },
    {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"nested": {"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]}},
    },
    # Keywords the quick check does not judge: everything goes to jsonschema.
    {"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}, "s": {"pattern": "^a"}}},
    {"type": "object", "patternProperties": {"^x": {"type": "string"}}, "additionalProperties": False},
    {"type": "object", "properties": {"c": {"const": "x"}, "o": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}},
    {
        "$schema": "http://json-schema.org/draft-07/schema#",  # tuple `items` is not 2020-12
        "type": "object",
        "properties": {"items": {"type": "array", "items": [{"type": "string"}]}},
    },
]
VALUES: list[Any] = [
    "a", "abc", "", "metric", "imperial", 0, 1, 1.0, 2.5, 5, -1, True, False, None, [], ["a"], ["a", 1],
    [1, 2], {}, {"a": True}, {"a": 1}, {"a": "x"},
]  # fmt: skip
KEYS = ["path", "tail", "units", "tags", "limit", "query", "nested", "n", "s", "c", "o", "items", "x1", "other"]


def _instances(rng: random.Random, count: int) -> list[dict[str, Any]]:
    return [{k: rng.choice(VALUES) for k in rng.sample(KEYS, rng.randint(0, 4))} for _ in range(count)]


def _reference(schema: dict[str, Any]) -> Any:
    draft = schema.get("$schema", "")
    cls = Draft4Validator if "draft-04" in draft else Draft7Validator if "draft-07" in draft else Draft202012Validator
    return cls(schema)


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_accepts_exactly_what_jsonschema_accepts(index: int) -> None:
    schema = SCHEMAS[index]
    reference = _reference(schema)
    validator = ArgumentValidator()
    rng = random.Random(index)
    accepted = 0
    for instance in _instances(rng, 3000):
        expected = sorted(e.message for e in reference.iter_errors(instance))
        refused: ArgumentValidationError | None = None
        try:
            validator.validate(schema, instance, server="s", tool="t")
        except ArgumentValidationError as exc:
            refused = exc
        if refused is None:
            assert not expected, f"accepted what jsonschema refuses: {instance!r}: {expected}"
            accepted += 1
        else:
            assert expected, f"refused what jsonschema accepts: {instance!r}: {refused.message}"
            found = sorted(v["message"] for v in refused.details["violations"])
            assert len(found) == len(expected), (instance, found, expected)
    assert accepted > 0  # the seed reaches both sides of every schema


def test_a_violation_quotes_a_huge_value_only_in_part() -> None:
    # jsonschema writes the value into its message: a 10 MB argument must not come back whole.
    schema = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 10}}}
    huge = "w " * 5_000_000
    with pytest.raises(ArgumentValidationError) as refused:
        ArgumentValidator().validate(schema, {"text": huge}, server="text", tool="word_count")
    (violation,) = refused.value.details["violations"]
    assert violation["path"] == "$.text"
    assert violation["message"].startswith("'w w w") and violation["message"].endswith("is too long")
    assert len(str(refused.value)) < 1_000
