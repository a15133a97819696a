"""The Activity page's reading of the audit log, and the playground's labelled queries that `toolscout eval` reads."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from tests.helpers.cli_sandbox import Sandbox
from toolscout.config.scopes import Scope, scoped
from toolscout.gateway.audit import AuditLog, Outcome
from toolscout.gateway.audit_reader import Position, end_position
from toolscout.serve.dashboard.audit_view import (
    NOBODY,
    filters_from,
    recent,
    records_table,
    scoped_filters,
    tail,
    tool_stats,
)
from toolscout.serve.dashboard.playground import Label, PlaygroundHit, hits_table, parse_expected, record_label


async def _write(
    log: AuditLog, tool: str, outcome: Outcome = "ok", *, label: str | None = None, namespace: str | None = None
) -> None:
    with scoped(Scope(namespace=namespace, label=label)):
        await log.record(server="units", tool=tool, arguments={"x": 1}, duration_ms=10.0, outcome=outcome)


@pytest.mark.anyio
async def test_recent_records_filter_by_label_tool_and_outcome(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    async with AuditLog(path) as log:
        await _write(log, "convert", label="ci", namespace="run-1")
        await _write(log, "calculate", "isError")
        await _write(log, "convert", "error", label="ci", namespace="run-2")
    everything, position = await recent(path, {})
    assert [r["tool"] for r in everything] == ["convert", "calculate", "convert"]
    assert position == end_position(path)
    ci, _ = await recent(path, filters_from({"label": "ci", "outcome": " error ", "tool": ""}))
    assert [(r["namespace"], r["outcome"]) for r in ci] == [("run-2", "error")]
    assert (await recent(tmp_path / "missing.jsonl", {}))[0] == []


@pytest.mark.anyio
async def test_the_tail_gives_what_was_appended_since_across_a_rotation(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    async with AuditLog(path, max_bytes=400, backups=5) as log:
        await _write(log, "first")
        _, position = await recent(path, {})
        assert await tail(path, position, {}) == ([], position)
        for index in range(3):  # each record is about 170 bytes: the file rotates on the way
            await _write(log, f"later{index}")
        new, moved = await tail(path, position, {})
        assert [r["tool"] for r in new] == ["later0", "later1", "later2"]
        assert path.with_name("audit.jsonl.1").exists()
        assert Position.parse(str(moved)) == moved
        await _write(log, "last", "isError")
        assert [r["tool"] for r in (await tail(path, moved, {"outcome": "isError"}))[0]] == ["last"]
    assert Position.parse("1-x") is None and Position.parse("9" * 70 + "-1") is None


@pytest.mark.anyio
async def test_a_half_written_line_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_bytes(b'{"server": "a", "tool": "b", "outcome": "ok"}\n{"server": "a", "to')
    found, position = await tail(path, Position(0, 0), {})
    assert [r["tool"] for r in found] == ["b"]
    with path.open("ab") as handle:
        handle.write(b'ol": "c", "outcome": "ok"}\nnot json\n')
    found, _ = await tail(path, position, {})
    assert [r["tool"] for r in found] == ["c"]


def test_tool_stats_count_calls_errors_and_latency() -> None:
    records = [{"server": "u", "tool": "a", "outcome": "ok", "durationMs": float(ms)} for ms in range(1, 21)] + [
        {"server": "u", "tool": "a", "outcome": "isError", "durationMs": 100.0},
        {"server": "u", "tool": "b", "outcome": "error", "code": "VALIDATION_ERROR", "durationMs": 0.0},
        {"event": "tool_changed", "server": "u", "tool": "a", "outcome": "quarantined"},
    ]
    a, b = tool_stats(records)
    assert (a.tool, a.calls, a.errors, a.p50_ms, a.p95_ms) == ("a", 21, 1, 11.0, 20.0)
    assert round(a.error_rate, 4) == round(1 / 21, 4)
    assert (b.tool, b.calls, b.errors, b.error_rate, b.p50_ms) == ("b", 1, 1, 1.0, None)


def test_the_table_escapes_what_clients_and_upstreams_wrote() -> None:
    record = {
        "server": "<s>",
        "tool": "t",
        "outcome": "ok",
        "arguments": {"q": "<script>x()</script>"},
        "durationMs": 2,
    }
    text = records_table([record], Position(1, 2), {"tool": '"><b>'})
    assert "<script>" not in text and "&lt;script&gt;" in text and "&lt;s&gt;.t" in text
    assert 'data-position="1-2"' in text and "&quot;&gt;&lt;b&gt;" in text


# Labelled queries


@pytest.mark.anyio
async def test_labels_are_appended_once_as_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "state" / "labelled.jsonl"
    label = Label("turn miles into km", "units", "convert_units")
    assert await record_label(label, path) == (path, True)
    assert await record_label(label, path) == (path, False)
    with path.open("ab") as handle:
        handle.write(b'{"query": "cut sh')  # a line cut short by hand
    await record_label(Label("count words", "text", "word_count"), path)
    lines = path.read_bytes().splitlines()
    assert json.loads(lines[0]) == {"query": "turn miles into km", "relevant": [["units", "convert_units"]]}
    assert json.loads(lines[-1]) == {"query": "count words", "relevant": [["text", "word_count"]]}
    with pytest.raises(Exception, match="The query is empty"):
        await record_label(Label(" ", "a", "b"), path)
    assert parse_expected('["units", "convert_units"]') == ("units", "convert_units")
    with pytest.raises(Exception, match="Pick the tool"):
        parse_expected('["units"]')


def test_toolscout_eval_measures_search_on_the_recorded_labels(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path)
    sandbox.cwd.mkdir(parents=True)
    config = tmp_path / "toolscout.json"
    config.write_text(
        json.dumps({"mcpServers": {"units": {"command": sys.executable, "args": ["-m", "toolscout.demo.units"]}}})
    )
    labels = tmp_path / "labels.jsonl"
    anyio.run(record_label, Label("convert 3 miles to kilometres", "units", "convert_units"), labels)
    anyio.run(record_label, Label("work out 2 + 2", "units", "calculate"), labels)
    done = sandbox.run("eval", "--catalog", "live", "--queries", str(labels), "--config", str(config), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["queries"] == 2 and report["hit_5"] == 1.0


def test_hits_show_contributions_when_the_gateway_explains_them() -> None:
    plain = hits_table([PlaygroundHit("units", "convert_units", 0.8, "Convert <units>")])
    assert "Per-ranker contributions are not available" in plain and "Convert &lt;units&gt;" in plain
    explained = hits_table(
        [PlaygroundHit("units", "convert_units", 0.8, contributions={"fusion": 0.8, "lexical": 0.5, "zeta": 0.1})],
        run_link="/dashboard/run",
    )
    head = explained.split("</thead>")[0]
    assert head.index("lexical") < head.index("fusion") < head.index("zeta")
    assert "0.500" in explained and 'href="/dashboard/run?server=units&amp;tool=convert_units"' in explained


def test_a_key_that_is_not_an_admins_reads_only_its_own_executions() -> None:
    asked = {"label": "someone-else", "tool": "convert"}
    assert scoped_filters(asked, admin=True, label=None, namespace=None) == asked
    assert scoped_filters(asked, admin=False, label="ci", namespace="run-1") == {
        "label": "ci",
        "namespace": "run-1",
        "tool": "convert",
    }
    assert scoped_filters({}, admin=False, label=None, namespace=None) == {"label": NOBODY}
