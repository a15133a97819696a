"""The public request set (benchmarks/data/smart_requests.jsonl) is sound: its shape, and every
expected call checked against the real servers' own tools and input schemas."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from benchmarks.smart_requests import DATA, MUST_NOT_RUN, RecordingGateway, load_rows, upstream_specs, write_root

from tests.helpers.paths import npm_tool
from toolscout.errors import ArgumentValidationError, ToolscoutError

pytestmark = pytest.mark.anyio

KINDS = ("run", *MUST_NOT_RUN)


def raw_rows() -> list[dict[str, Any]]:
    return [cast(dict[str, Any], json.loads(line)) for line in DATA.read_text(encoding="utf-8").splitlines()]


def test_the_set_is_large_enough_and_has_no_duplicates() -> None:
    rows = raw_rows()
    kinds = Counter(str(r["expect"]) for r in rows)
    assert set(kinds) <= set(KINDS), kinds
    assert len(rows) >= 150
    assert sum(kinds[k] for k in MUST_NOT_RUN) >= 20, kinds
    requests = Counter(" ".join(str(r["request"]).lower().split()) for r in rows)
    assert [r for r, n in requests.items() if n > 1] == []
    ids = Counter(str(r["id"]) for r in rows)
    assert [i for i, n in ids.items() if n > 1] == []
    for row in rows:
        has_tool = bool(row.get("server")) and bool(row.get("tool"))
        assert has_tool == (row["expect"] in ("run", "confirm", "missing")), row
        assert "\n" not in str(row["request"]), row  # the scripted LLM reads the request from one prompt line
        assert (row["expect"] == "missing") == bool(row.get("missing")), row


def test_the_set_says_its_licence() -> None:
    readme = (DATA.parent / "README.md").read_text(encoding="utf-8")
    assert "smart_requests.jsonl" in readme and "MIT" in readme


async def test_every_expected_call_fits_the_real_servers_schemas(tmp_path: Path) -> None:
    npm_tool("mcp-server-everything")  # a clear failure when tools/npm is not installed
    root = tmp_path / "root"
    write_root(root)
    rows = load_rows(DATA, str(root))
    gateway = RecordingGateway(upstream_specs(root, tmp_path))
    problems: list[str] = []
    async with gateway:
        with anyio.fail_after(120):
            await gateway.settle()
        assert [u.name for u in gateway.upstreams if u.status.value != "connected"] == []
        for row in rows:
            for call in row.calls:
                try:
                    entry = await gateway.tool(call.server, call.tool)
                except ToolscoutError as exc:
                    problems.append(f"{row.id}: {call.qualified}: {exc.message}")
                    continue
                schema = dict(entry.input_schema)
                annotations = entry.tool.annotations
                destructive = annotations is not None and annotations.destructive_hint is True
                if destructive != (row.expect == "confirm"):
                    problems.append(f"{row.id}: {call.qualified} destructive={destructive} for {row.expect}")
                raw = next(r for r in raw_rows() if r["id"] == row.id)
                if row.expect == "missing":
                    required = [str(n) for n in cast(list[Any], schema.get("required") or [])]
                    missing = [str(n) for n in cast(list[Any], raw["missing"])]
                    if not set(missing) <= set(required) or set(missing) & set(call.arguments):
                        problems.append(f"{row.id}: {missing} are not required values left out")
                    schema["required"] = [n for n in required if n not in missing]
                variants = [dict(call.arguments)]
                variants += [{**call.arguments, key: value} for key, values in call.accept.items() for value in values]
                for arguments in variants:
                    try:
                        await gateway.validator.check(schema, arguments, server=call.server, tool=call.tool)
                    except ArgumentValidationError as exc:
                        problems.append(f"{row.id}: {call.qualified}({arguments}): {exc.message}")
    assert problems == []
