"""Input schemas that cannot be validated: refused when they arrive, and a budget on what validation
there is.

A real `toolscout serve --transport http` child fronts a real stdio upstream (tests/servers/
schema_bomb.py) whose tools/list carries a 2^40 anyOf bomb and a `$ref` cycle beside normal tools;
registrations go through the real HTTP API; the budget is tested on the gateway's own validator in
a worker thread, as `Gateway.execute` runs it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import mcp_types as types
import pytest
from benchmarks.processes import served_gateway, status_of, structured, until, write_config
from benchmarks.search import DEFAULT_EVAL_DIR
from mcp import Client

from tests.helpers.paths import PYTHON, ROOT
from tests.servers.schema_bomb import CYCLE_SCHEMA, DEFS_CYCLE_SCHEMA, TREE_SCHEMA, bomb_schema
from toolscout.errors import ValidationTooCostly
from toolscout.gateway.validation import ArgumentValidator, Budget
from toolscout.schemas import MAX_EVALUATIONS, measure, schema_problem

pytestmark = pytest.mark.anyio

HOSTILE = [PYTHON, str(ROOT / "tests" / "servers" / "schema_bomb.py")]
CALL_SECONDS = 30
"""A bound on a call that must answer at once (on main the bomb's call never answers)."""


async def stepped(done: Callable[[], bool]) -> None:
    """Until `done()` says yes about a worker thread's state (no event crosses from it), looked at
    every 10 ms; the caller bounds the wait."""
    while True:
        if done():
            return
        await anyio.sleep(0.01)


def execute(server: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"server": server, "tool": tool, "arguments": arguments}


def failure(result: types.CallToolResult) -> dict[str, Any]:
    assert result.is_error, result.content
    content = cast(dict[str, Any], result.structured_content)
    return cast(dict[str, Any], content["error"])


async def test_a_hostile_upstreams_unvalidatable_tools_are_unusable_and_its_other_tools_work(tmp_path: Path) -> None:
    config = write_config(tmp_path, mcpServers={"hostile": {"command": HOSTILE[0], "args": HOSTILE[1:]}})
    async with served_gateway(config) as gateway, Client(gateway.mcp_url) as client:
        await until(client, lambda found: status_of("hostile")(found) == "connected")

        listed = structured(await client.call_tool("list_tools", {"server": "hostile"}))["tools"]
        by_name = {t["name"]: t for t in listed}
        assert set(by_name) == {"bomb", "cycle", "echo", "tree"}
        assert not by_name["bomb"]["enabled"] and f"more than {MAX_EVALUATIONS:,}" in by_name["bomb"]["unusable"]
        assert not by_name["cycle"]["enabled"] and "$ref cycle" in by_name["cycle"]["unusable"]
        assert by_name["echo"]["enabled"] and "unusable" not in by_name["echo"]
        assert by_name["tree"]["enabled"] and "unusable" not in by_name["tree"]

        hits = structured(await client.call_tool("search_tools", {"query": "classify a number nested alternatives"}))
        assert all(h["tool"] not in ("bomb", "cycle") for h in hits["results"]), hits

        details = failure(await client.call_tool("get_tool_details", {"server": "hostile", "tool": "cycle"}))
        assert details["code"] == "TOOL_UNUSABLE" and "$ref cycle" in details["message"]

        health: list[int] = []
        answers: dict[str, types.CallToolResult] = {}

        async def healthz() -> None:
            async with httpx2.AsyncClient(timeout=CALL_SECONDS) as http:
                health.append((await http.get(gateway.base_url + "/healthz")).status_code)

        with anyio.fail_after(CALL_SECONDS):
            async with anyio.create_task_group() as group:
                group.start_soon(healthz)
                answers["bomb"] = await client.call_tool("execute_tool", execute("hostile", "bomb", {"a": "x"}))
                answers["cycle"] = await client.call_tool("execute_tool", execute("hostile", "cycle", {"a": 1}))
        assert health == [200]
        refused = failure(answers["bomb"])
        assert refused["code"] == "TOOL_UNUSABLE"
        assert f"more than {MAX_EVALUATIONS:,}" in refused["message"] and "other tools" in refused["message"]
        assert failure(answers["cycle"])["code"] == "TOOL_UNUSABLE"

        echo = await client.call_tool("execute_tool", execute("hostile", "echo", {"text": "hi"}))
        assert not echo.is_error and '"text": "hi"' in str(echo.content)
        tree = {"root": {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}}
        ran = await client.call_tool("execute_tool", execute("hostile", "tree", tree))
        assert not ran.is_error, ran.content
        bad = {"root": {"name": "a", "children": [{"name": "b", "children": [{"name": 3}]}]}}
        invalid = failure(await client.call_tool("execute_tool", execute("hostile", "tree", bad)))
        assert invalid["code"] == "VALIDATION_ERROR" and "children[0].children[0].name" in invalid["message"]
    assert not any("Traceback" in line for line in gateway.process.stderr), "\n".join(gateway.process.stderr)


async def test_a_registration_whose_schema_cannot_be_validated_is_400_naming_the_limit(tmp_path: Path) -> None:
    def body(name: str, schema: dict[str, Any]) -> dict[str, Any]:
        url = "http://127.0.0.1:9/never-called"
        return {"namespace": "run-1", "name": name, "description": "A tool.", "inputSchema": schema, "callbackUrl": url}

    async with served_gateway(write_config(tmp_path)) as gateway, Client(gateway.mcp_url) as client:
        refused = {
            "bomb": await gateway.api("POST", "/registry/tools", body("bomb", bomb_schema())),
            "cycle": await gateway.api("POST", "/registry/tools", body("cycle", CYCLE_SCHEMA)),
            "defs_cycle": await gateway.api("POST", "/registry/tools", body("defs_cycle", DEFS_CYCLE_SCHEMA)),
        }
        for name, answer in refused.items():
            assert answer.status_code == 400, (name, answer.text)
        assert f"more than {MAX_EVALUATIONS:,}" in refused["bomb"].text
        assert "$ref cycle" in refused["cycle"].text and "#/properties/a" in refused["cycle"].text
        assert "#/$defs/x -> #/$defs/y -> #/$defs/x" in refused["defs_cycle"].text

        created = await gateway.api("POST", "/registry/tools", body("tree", TREE_SCHEMA))
        assert created.status_code == 201, created.text
        await until(client, lambda found: status_of("run-1.tree")(found) == "connected")
        bad = {"root": {"name": "a", "children": [{"name": 3}]}}
        invalid = failure(await client.call_tool("execute_tool", execute("run-1.tree", "tree", bad)))
        assert invalid["code"] == "VALIDATION_ERROR", invalid
    assert not any("Traceback" in line for line in gateway.process.stderr), "\n".join(gateway.process.stderr)


async def test_the_budget_stops_a_costly_validation_in_a_worker_thread() -> None:
    validator = ArgumentValidator()  # handed the bomb directly: nothing vetted it
    with anyio.fail_after(CALL_SECONDS), pytest.raises(ValidationTooCostly) as raised:
        await validator.check(bomb_schema(), {"a": "x"}, server="hostile", tool="bomb")
    assert raised.value.code == "VALIDATION_TOO_COSTLY"
    assert "validation budget" in raised.value.message and "Send smaller or simpler arguments" in raised.value.message


async def test_a_validation_stops_when_its_caller_is_cancelled() -> None:
    validator = ArgumentValidator()
    budget = Budget(max_steps=10**15, seconds=10**6)  # only the cancellation can stop it

    async def validate() -> None:
        await validator.check(bomb_schema(), {"a": "x"}, server="hostile", tool="bomb", budget=budget)

    with anyio.fail_after(CALL_SECONDS):
        async with anyio.create_task_group() as group:
            group.start_soon(validate)
            await stepped(lambda: budget.steps > 0)  # running in its worker thread
            group.cancel_scope.cancel()
        await stepped(lambda: budget.stopped is not None)  # the thread sees the cancellation at its next look
    assert budget.stopped == "cancelled"


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        (bomb_schema(), f"more than {MAX_EVALUATIONS:,}"),
        (bomb_schema(12), f"more than {MAX_EVALUATIONS:,}"),
        (CYCLE_SCHEMA, "$ref cycle"),
        (DEFS_CYCLE_SCHEMA, "$ref cycle"),
        ({"$ref": "#"}, "$ref cycle"),
        ({"anyOf": [{"type": "string"}, {"$ref": "#"}]}, "$ref cycle"),
        ({"$defs": {"a": {"$anchor": "again", "allOf": [{"$ref": "#again"}]}}, "$ref": "#/$defs/a"}, "$ref cycle"),
        ({"not": {"$ref": "#/not"}}, "$ref cycle"),
    ],
    ids=["bomb", "bomb-12", "self", "defs", "root", "anyOf-root", "anchor", "not"],
)
def test_the_vetting_refuses_explosions_and_cycles_that_stay_in_place(schema: dict[str, Any], words: str) -> None:
    problem = schema_problem(schema)
    assert problem is not None and words in problem


def test_the_vetting_refuses_schemas_too_deep_or_too_large() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(5_000):  # far deeper than the stack would allow a recursive reader
        deep = {"type": "object", "properties": {"x": deep}}
    assert "nests deeper than" in (schema_problem(deep) or "")
    wide = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(30_000)}}
    assert "JSON values" in (schema_problem(wide) or "")


@pytest.mark.parametrize(
    "schema",
    [
        TREE_SCHEMA,
        {"type": "object", "properties": {"next": {"$ref": "#"}, "value": {"type": "integer"}}},
        {"$defs": {"n": {"$anchor": "node", "type": "array", "items": {"$ref": "#node"}}}, "$ref": "#/$defs/n"},
        bomb_schema(7),  # 509 evaluations at one place: costly, still within the limit
        {"type": "object", "dependentSchemas": {"a": {"required": ["b"]}}, "if": {"required": ["a"]}, "then": {}},
    ],
    ids=["tree", "linked-list", "anchor-tree", "bomb-8", "conditional"],
)
def test_the_vetting_accepts_recursion_that_descends_and_bounded_combinations(schema: dict[str, Any]) -> None:
    assert schema_problem(schema) is None


def test_every_real_input_schema_of_the_eval_catalogs_passes_the_vetting() -> None:
    path = DEFAULT_EVAL_DIR / "catalog_livemcpbench.jsonl"
    if not path.is_file():
        # The public eval data is not part of the repository; TOOLSCOUT_EVAL_DIR points at it.
        pytest.skip(f"no eval data at {path}; set TOOLSCOUT_EVAL_DIR")
    schemas = [json.loads(line)["input_schema"] for line in path.read_text(encoding="utf-8").splitlines()]
    costs = [measure(schema) for schema in schemas if schema is not None]
    assert len(costs) > 500
    assert [c.problem for c in costs if c.problem] == []
    # Far from every limit: the defaults leave room for schemas much larger than any seen.
    assert max(c.evaluations for c in costs) * 10 < MAX_EVALUATIONS
