"""The search playground's content: a query's ranked tools with their relevance and, where the
gateway explains its ranking, each ranker's contribution; and "this should have been found",
which records the query with the tool the user expected to a local file of labelled queries.

That file is in the format `toolscout eval` reads (`{"query", "relevant": [[server, tool]]}` per
line), in the per-user state directory (`labelled_queries_path`), so that
`toolscout eval --catalog live --queries <file>` measures search on the user's own catalog with the
user's own queries. Each label is appended as one line with one `os.write` on an `O_APPEND`
descriptor, as the audit log is: a crash never leaves half a line, and two writers never
interleave inside one.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from toolscout.config.locations import user_log_dir
from toolscout.errors import InvalidArguments, ToolscoutError
from toolscout.gateway.explain import ExplainedHit

if TYPE_CHECKING:
    from toolscout.gateway.core import Gateway

LABELS_FILE = "labelled_queries.jsonl"
MAX_LABELS_BYTES = 16 * 1024 * 1024
"""The largest labels file read when looking for a label already recorded (larger: appended regardless)."""
CONTRIBUTIONS = ("lexical", "names", "embeddings", "ranker", "fusion")
"""The rankers whose contributions the playground shows, in this order (others follow, sorted)."""


def labelled_queries_path() -> Path:
    """Where "this should have been found" records labelled queries: the per-user state directory
    (`$TOOLSCOUT_STATE_DIR` replaces it), beside the audit log."""
    return user_log_dir() / LABELS_FILE


@dataclass(frozen=True, slots=True)
class PlaygroundHit:
    """One ranked tool as the playground shows it. `contributions` (by ranker) and `smart` (smart
    mode's methods' scores) are None when the gateway did not explain its ranking."""

    server: str
    tool: str
    relevance: float
    description: str = ""
    contributions: Mapping[str, float] | None = None
    smart: Mapping[str, float] | None = field(default=None)


def from_explained(
    hits: Sequence[ExplainedHit], descriptions: Mapping[tuple[str, str], str] = {}
) -> list[PlaygroundHit]:
    """The playground's hits from `Gateway.explain_search`, with each ranker's contribution."""
    return [
        PlaygroundHit(
            h.server,
            h.tool,
            h.relevance,
            descriptions.get((h.server, h.tool), ""),
            dict(h.contributions),
            None if h.smart is None else dict(h.smart),
        )
        for h in hits
    ]


async def ranked(gateway: Gateway, query: str, *, server: str | None = None, limit: int = 10) -> list[PlaygroundHit]:
    """The playground's ranking of `query`: every hit down to relevance 0, so that what the
    configured `minRelevance` leaves out is seen too, each with what each ranker added to it
    (`Gateway.explain_search`) and the tool's description.

    As `search_tools`, it first waits for the servers still on their first attempt to connect, so
    a search just after the gateway starts is not missing their tools."""
    await gateway.settle_startup()
    explained = await gateway.explain_search(query, server=server, limit=limit, min_relevance=0.0)
    descriptions: dict[tuple[str, str], str] = {}
    for hit in explained:
        with contextlib.suppress(ToolscoutError):  # gone since it was ranked: shown without one
            tool = await gateway.tool(hit.server, hit.tool)
            descriptions[(hit.server, hit.tool)] = (tool.tool.description or "")[:300]
    return from_explained(explained, descriptions)


# Labels


@dataclass(frozen=True, slots=True)
class Label:
    """A query and the tool that should have been found for it."""

    query: str
    server: str
    tool: str

    def line(self) -> bytes:
        row = {"query": self.query, "relevant": [[self.server, self.tool]]}
        return (json.dumps(row, ensure_ascii=False) + "\n").encode()


async def record_label(label: Label, path: Path | None = None) -> tuple[Path, bool]:
    """Append `label` to the labelled queries (`labelled_queries_path()` by default); returns the
    file and whether a line was written (False: that exact label was recorded already)."""
    if not label.query.strip():
        raise InvalidArguments("The query is empty: search for something first, then pick the tool it should find.")
    target = path or labelled_queries_path()
    return target, await anyio.to_thread.run_sync(_append_once, target, label.line())


def _append_once(path: Path, line: bytes) -> bool:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        size = os.fstat(fd).st_size
        if size and size <= MAX_LABELS_BYTES:
            with path.open("rb") as existing:
                if line in existing.read().splitlines(keepends=True):
                    return False
        data = line
        if size and not _ends_with_newline(path):
            data = b"\n" + line  # a line cut short by hand before: ours starts on a line of its own
        written = os.write(fd, data)
        if written != len(data):  # a full disk: do not leave the half line for `eval` to trip on
            raise OSError(f"only {written} of {len(data)} bytes written to {path}")
        return True
    finally:
        os.close(fd)


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


# HTML


def query_form(query: str, action: str, server: str = "") -> str:
    """The query box (a GET: searching changes nothing)."""
    return (
        f'<form class="search row" method="get" action="{escape(action)}" role="search">'
        f'<label class="grow">Query <input type="text" name="q" value="{escape(query)}" '
        'placeholder="What should the agent do?" autofocus></label>'
        f'<label>Server <input type="text" name="server" value="{escape(server)}" placeholder="any"></label>'
        '<button type="submit">Search</button></form>'
    )


def hits_table(hits: Sequence[PlaygroundHit], *, run_link: str | None = None) -> str:
    """The ranked hits: rank, tool, relevance, and a column per ranker when any hit has contributions."""
    if not hits:
        return '<p class="note">No tool reached the minimum relevance for this query.</p>'
    rankers = _rankers(hits)
    head = "<tr><th>#</th><th>tool</th><th>relevance</th>" + "".join(f"<th>{escape(r)}</th>" for r in rankers)
    has_smart = any(h.smart for h in hits)
    head += ("<th>smart methods</th>" if has_smart else "") + "</tr>"
    rows: list[str] = []
    for rank, hit in enumerate(hits, 1):
        name = f"{hit.server}.{hit.tool}"
        shown = escape(name)
        if run_link is not None:
            shown = f'<a href="{escape(run_link)}?server={_q(hit.server)}&amp;tool={_q(hit.tool)}">{shown}</a>'
        description = f'<br><span class="description">{escape(hit.description)}</span>' if hit.description else ""
        cells = [f"<td>{rank}</td>", f"<td>{shown}{description}</td>", f"<td>{_bar(hit.relevance)}</td>"]
        for ranker in rankers:
            value = (hit.contributions or {}).get(ranker)
            cells.append(f"<td>{'-' if value is None else f'{value:.3f}'}</td>")
        if has_smart:
            smart = ", ".join(f"{escape(k)} {v:.2f}" for k, v in sorted((hit.smart or {}).items()))
            cells.append(f"<td>{smart or '-'}</td>")
        rows.append(f'<tr data-tool="{escape(name)}">{"".join(cells)}</tr>')
    note = (
        ""
        if rankers
        else '<p class="note">Per-ranker contributions are not available from this gateway; relevance only.</p>'
    )
    return f'<table class="hits" id="hits"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>{note}'


def _rankers(hits: Sequence[PlaygroundHit]) -> list[str]:
    seen = {k for h in hits for k in (h.contributions or {})}
    return [r for r in CONTRIBUTIONS if r in seen] + sorted(seen.difference(CONTRIBUTIONS))


def _bar(relevance: float) -> str:
    share = max(0.0, min(1.0, relevance))
    return f'<meter min="0" max="1" value="{share:.3f}"></meter> {relevance:.3f}'


def _q(text: str) -> str:
    from urllib.parse import quote

    return escape(quote(text, safe=""))


def label_form(query: str, tools: Sequence[tuple[str, str]], action: str, hidden: Mapping[str, str], path: Path) -> str:
    """ "This should have been found": pick the tool the query should have found (a POST, with the CSRF token)."""
    options = "".join(
        f'<option value="{escape(json.dumps([s, t]))}">{escape(s)}.{escape(t)}</option>' for s, t in tools
    )
    inputs = "".join(f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in hidden.items())
    return (
        f'<form class="label" method="post" action="{escape(action)}">{inputs}'
        f'<input type="hidden" name="q" value="{escape(query)}">'
        f'<label>This should have been found: <select name="expected" id="expected">{options}</select></label> '
        f'<button type="submit">Record</button>'
        f'<p class="note">Recorded to <code>{escape(str(path))}</code>; measure search on them with '
        f"<code>toolscout eval --catalog live --queries {escape(str(path))}</code></p></form>"
    )


def parse_expected(value: str) -> tuple[str, str]:
    """The `[server, tool]` the label form sends, or `InvalidArguments`."""
    try:
        pair = json.loads(value)
    except ValueError:
        pair = None
    if isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) and p for p in pair):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        return str(pair[0]), str(pair[1])  # pyright: ignore[reportUnknownArgumentType]
    raise InvalidArguments("Pick the tool that should have been found from the list.")
