"""What the Activity page shows: the audit log's last executions with filters, what was appended
since the page last asked (its live tail), per-tool call counts, error rates and latency, and what
the catalog costs a client's context in each mode.

The log is read through `toolscout.gateway.audit_reader` (the reader `toolscout audit tail` uses),
in a worker thread, and every read is bounded: the table shows at most `MAX_ROWS` records, the
statistics are taken over the last `STATS_WINDOW` executions, and one poll of the tail returns at
most `audit_reader.MAX_READ_BYTES` of new lines. The page's script (`activity.js`) asks for the
tail with the position the last answer gave (`Position`), so the server keeps no state per viewer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

import anyio

from toolscout.gateway.audit_reader import (
    FILTER_KEYS,
    Position,
    Record,
    end_position,
    last_records,
    matches,
    open_log,
    read_since,
)
from toolscout.modes.costs import ModeCost

MAX_ROWS = 200
"""The most executions the page's table shows (and one poll of the tail returns)."""
STATS_WINDOW = 2_000
"""How many of the last executions the per-tool statistics are computed over: they are read on every
load of the page, so the window is what one read parses quickly, not the whole log."""
MAX_FILTER_CHARS = 200

Filters = dict[str, str]


def filters_from(query: Mapping[str, str]) -> Filters:
    """The page's filters from its query string: `label`, `namespace`, `server`, `tool`, `outcome`
    (each matched exactly; absent or empty ones match anything)."""
    return {key: value[:MAX_FILTER_CHARS] for key in FILTER_KEYS if (value := query.get(key, "").strip())}


NOBODY = "\0"
"""A filter value no record has: what a principal without a label is limited to."""


def scoped_filters(filters: Filters, *, admin: bool, label: str | None, namespace: str | None) -> Filters:
    """`filters` limited to what the principal may read: an admin reads every execution; anyone else
    only those made under its own label (and namespace), whatever it asked for, so that no key reads
    another's arguments."""
    if admin:
        return filters
    limited = {**filters, "label": label or NOBODY}
    if namespace is not None:
        limited["namespace"] = namespace
    return limited


def _executions(record: Mapping[str, Any]) -> bool:
    """Whether `record` is an execution (not a `tool_changed` event of the pins)."""
    return "event" not in record


async def recent(path: Path, filters: Filters, count: int = MAX_ROWS) -> tuple[list[Record], Position]:
    """The last `count` executions matching `filters` (oldest first), and the position the tail goes on from."""

    def read() -> tuple[list[Record], Position]:
        handle = open_log(path)
        if handle is None:
            return [], Position(0, 0)
        with handle:
            found = last_records(handle, path, count, filters=filters)
            return [r for r in found if _executions(r)], end_position(path)

    return await anyio.to_thread.run_sync(read)


async def tail(path: Path, since: Position, filters: Filters) -> tuple[list[Record], Position]:
    """The executions matching `filters` appended after `since` (at most `MAX_ROWS`, the last), and the new position."""

    def read() -> tuple[list[Record], Position]:
        found, position = read_since(path, since)
        return [r for r in found if _executions(r) and matches(r, filters)][-MAX_ROWS:], position

    return await anyio.to_thread.run_sync(read)


@dataclass(frozen=True, slots=True)
class ToolStats:
    """One tool's executions in the window: how many, how many failed (`isError` or refused), and their latency."""

    server: str
    tool: str
    calls: int
    errors: int
    p50_ms: float | None
    p95_ms: float | None

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "tool": self.tool,
            "calls": self.calls,
            "errors": self.errors,
            "errorRate": self.error_rate,
            "p50Ms": self.p50_ms,
            "p95Ms": self.p95_ms,
        }


def tool_stats(records: Sequence[Mapping[str, Any]]) -> list[ToolStats]:
    """Per-tool statistics of `records`, the most called first. Latency counts the calls that reached
    the server (a refusal before it, with duration 0, would only pull the figures down)."""
    calls: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for record in records:
        if _executions(record):
            calls.setdefault((str(record.get("server", "?")), str(record.get("tool", "?"))), []).append(record)
    found: list[ToolStats] = []
    for (server, tool), group in calls.items():
        errors = sum(1 for r in group if r.get("outcome") != "ok")
        durations = sorted(
            float(d)
            for r in group
            if r.get("outcome") in ("ok", "isError")
            and isinstance(d := r.get("durationMs"), int | float)
            and not isinstance(d, bool)
            and math.isfinite(d)
        )
        found.append(
            ToolStats(server, tool, len(group), errors, _percentile(durations, 0.5), _percentile(durations, 0.95))
        )
    return sorted(found, key=lambda s: (-s.calls, s.server, s.tool))


def _percentile(values: Sequence[float], share: float) -> float | None:
    """The nearest-rank percentile of sorted `values` (None for none)."""
    if not values:
        return None
    return values[max(0, math.ceil(share * len(values)) - 1)]


async def window_stats(path: Path, filters: Filters) -> list[ToolStats]:
    """`tool_stats` over the last `STATS_WINDOW` executions matching `filters`."""
    records, _ = await recent(path, filters, STATS_WINDOW)
    return tool_stats(records)


# HTML


def row_cells(record: Mapping[str, Any]) -> list[str]:
    """One execution's cells under `ROW_HEADINGS`, as text (the tail sends these; the script sets them as text)."""
    outcome = str(record.get("outcome") or "?")
    shown = str(record.get("code") or outcome) if outcome == "error" else outcome
    duration = record.get("durationMs")
    return [
        str(record.get("time") or "?").replace("T", " ").removesuffix("Z"),
        str(record.get("label") or record.get("client") or "-"),
        str(record.get("namespace") or ""),
        f"{record.get('server', '?')}.{record.get('tool', '?')}",
        shown,
        f"{duration:.0f}" if isinstance(duration, int | float) else "?",
        json.dumps(record.get("arguments"), ensure_ascii=False)[:300],
    ]


def record_row(record: Mapping[str, Any]) -> str:
    """One execution as a table row (the script builds the same row from the tail's `row_cells`)."""
    outcome = str(record.get("outcome") or "?")
    tds = "".join(f"<td>{escape(cell)}</td>" for cell in row_cells(record))
    return f'<tr class="outcome-{escape(outcome)}">{tds}</tr>'


ROW_HEADINGS = ("time (UTC)", "who", "namespace", "tool", "outcome", "ms", "arguments")


def records_table(
    records: Sequence[Mapping[str, Any]], position: Position, filters: Filters, tail_url: str = ""
) -> str:
    """The executions as a table whose body the live tail extends: the script asks `tail_url` for
    what came after `data-position`, with `data-filters`."""
    head = "".join(f"<th>{escape(h)}</th>" for h in ROW_HEADINGS)
    rows = "\n".join(record_row(r) for r in records)
    return (
        f'<table id="audit" class="audit" data-tail="{escape(tail_url)}" data-position="{escape(str(position))}" '
        f'data-filters="{escape(json.dumps(filters))}" data-max-rows="{MAX_ROWS}">'
        f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
        + ("" if records else '<p class="note" id="audit-empty">No executions recorded yet.</p>')
    )


OUTCOMES = ("ok", "isError", "error")


def filter_form(filters: Filters, action: str) -> str:
    """The filter form (a GET: it changes nothing, so it carries no CSRF token)."""
    fields = [
        f'<label class="grow">{escape(key)} <input type="text" name="{key}" value="{escape(filters.get(key, ""))}">'
        "</label>"
        for key in FILTER_KEYS
        if key != "outcome"
    ]
    chosen = filters.get("outcome", "")
    options = "".join(
        f'<option value="{o}"{" selected" if o == chosen else ""}>{o or "any"}</option>' for o in ("", *OUTCOMES)
    )
    fields.append(f'<label>outcome <select name="outcome">{options}</select></label>')
    button = '<button type="submit">Filter</button>'
    return f'<form class="filters row" method="get" action="{escape(action)}">{"".join(fields)}{button}</form>'


def stats_table(stats: Sequence[ToolStats]) -> str:
    if not stats:
        return '<p class="note">No executions to count yet.</p>'
    rows = "".join(
        f"<tr><td>{escape(s.server)}.{escape(s.tool)}</td><td>{s.calls}</td><td>{s.errors}</td>"
        f"<td>{s.error_rate:.0%}</td><td>{_ms(s.p50_ms)}</td><td>{_ms(s.p95_ms)}</td></tr>"
        for s in stats
    )
    head = "<tr><th>tool</th><th>calls</th><th>errors</th><th>error rate</th><th>p50 ms</th><th>p95 ms</th></tr>"
    return f'<table class="stats" id="tool-stats"><thead>{head}</thead><tbody>{rows}</tbody></table>'


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def mode_costs_table(costs: Sequence[ModeCost], configured: str) -> str:
    """What `tools/list` costs a new client in each mode (as `toolscout tokens` measures it), the
    configured one marked."""
    rows = "".join(
        f'<tr class="current"><td>{escape(c.mode)} (configured)</td><td>{c.tools}</td><td>{c.tokens:,}</td></tr>'
        if c.mode == configured
        else f"<tr><td>{escape(c.mode)}</td><td>{c.tools}</td><td>{c.tokens:,}</td></tr>"
        for c in costs
    )
    head = "<tr><th>mode</th><th>tools listed</th><th>tokens</th></tr>"
    return f'<table class="costs" id="mode-costs"><thead>{head}</thead><tbody>{rows}</tbody></table>'
