"""Text for the model to read: the meta-tools' results, listings, and what they cost in tokens.

The meta-tools' results go out as `structuredContent` too; many clients show the model only the
text, so the text must be complete enough to act on, yet short.

A listing is TOON when it costs fewer tokens than compact JSON, compact JSON otherwise. TOON
(`toon-format`) writes a list of uniform rows once as a header and then one line per row, which is
where it wins; for nested or irregular data it can cost more than JSON. So the choice is made by
counting both with the model's tokenizer, never by guessing from the shape.

Tokens are counted with a real tokenizer (o200k_base), which is also how what tool definitions
cost an agent is measured.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol, cast

import quicktok  # pyright: ignore[reportMissingTypeStubs]
import toon_format

from toolscout.render.signatures import description_cut

if TYPE_CHECKING:
    import mcp_types as types

STALE_NOTE = " (cached: the server is not connected)"
INSTRUCTIONS_LIMIT = 300
"""How much of a server's own instructions a listing of servers shows."""


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """Return a count with its noun in the right number: `1 server`, `3 servers`."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def cut_text(text: str | None, limit: int) -> str | None:
    """Return `text` on one line, cut to `limit` characters with `...`; None when empty."""
    if not text:
        return None
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def servers_text(data: Mapping[str, Any]) -> str:
    servers = cast(Sequence[Mapping[str, Any]], data["servers"])
    enabled = counted(data["enabledTools"], "tool")
    lines = [f"{counted(len(servers), 'server')}, {enabled} enabled of {data['totalTools']}."]
    for s in servers:
        head = f"- {s['name']} [{s['status']}]"
        cached = s.get("catalog") == "cached"
        if s["status"] == "connected" or cached:
            disabled = s["toolCount"] - s["enabledCount"]
            head += f" {s['enabledCount']} tools" + (f" (+{disabled} disabled)" if disabled else "")
            if s.get("hiddenCount"):
                head += f", {s['hiddenCount']} of them found by search_tools only"
            head += " (cached)" if cached else ""
        if s.get("description"):
            head += f": {s['description']}"
        if s.get("error"):
            head += f" — {s['error']}"
        if "retryInSeconds" in s:
            head += f" (trying again in {s['retryInSeconds']:g}s)"
        lines.append(head)
        if s.get("instructions"):
            lines.append(f"  instructions: {s['instructions']}")
    return "\n".join(lines)


ECHO_WORDS = 6
"""How many words of a long query or step an answer repeats: enough to say which one, since the agent
has the whole text already."""


def _shortened(text: str) -> str:
    words = text.split()
    return text if len(words) <= ECHO_WORDS else " ".join(words[:ECHO_WORDS]) + "…"


def _echo(text: str) -> str:
    return repr(_shortened(text))


def search_text(data: Mapping[str, Any]) -> str:
    """A search answer: each hit under its server's name (said once for hits of one server in a row),
    as its call signature, relevance and summary; one tool that several servers offer alike is one
    hit under all their names; long queries and steps are repeated cut short."""
    results = cast(Sequence[Mapping[str, Any]], data["results"])
    pending = cast(Sequence[str], data.get("connecting", []))
    note = f" Still connecting: {', '.join(pending)}." if pending else ""
    if data.get("rankedByWords"):
        note += " Ranked by words alone while the tools' meanings load: search again soon for a closer match."
    query: Any = data["query"]
    asked = _echo(query) if isinstance(query, str) else " + ".join(_echo(q) for q in cast(list[str], query))
    hint = f" {data['hint']}" if data.get("hint") else ""
    if not results:
        closest = cast(Mapping[str, Any] | None, data.get("closest"))
        if closest is not None:
            return (
                f"No tools match {asked} above relevance {data['minRelevance']}; the closest is "
                f"{closest['server']} / {closest['tool']} ({closest['relevance']:.3f}), and minRelevance: 0 "
                f"lists the weaker matches.{note} Or try other words, or list_tools(server).{hint}"
            )
        return f"No tools match {asked}.{note} Try other words, or list_tools(server).{hint}"
    lines = [f"{counted(len(results), 'tool')} for {asked}:"]
    if data.get("nothingFits"):
        lines[0] = (
            f"Nothing fits {asked} well: the task may need a tool no server offers, or other words. "
            f"The closest {counted(len(results), 'tool')}:"
        )
    # A tool that several servers offer alike (the same server configured twice, one per team or
    # region) is one line under all their names, at its first place and its best relevance.
    hits: dict[str, tuple[list[str], str]] = {}
    for r in results:
        tags = f" [{', '.join(r['tags'])}]" if r["tags"] else ""
        # A tool from the stored catalog, and one the rules disable (found with includeDisabled).
        marks = (", cached" if r.get("stale") else "") + (", disabled" if r.get("enabled") is False else "")
        steps = cast(Sequence[int], r.get("steps", ()))
        step = f", step {'+'.join(str(n) for n in steps)}" if steps else ""
        # The call signature starts with the tool's name: it stands in for the name, said once.
        called = r.get("signature") or r["tool"]
        same = f"{called}{step}{marks}{tags}: {r['summary']}"
        if same in hits:
            hits[same][0].append(str(r["server"]))
        else:
            hits[same] = ([str(r["server"])], f"- {called} ({r['relevance']:.2f}{step}{marks}){tags}: {r['summary']}")
    server: str | None = None
    for servers, line in hits.values():
        if len(servers) > 1:
            server = None
            lines.append(f"servers {', '.join(servers)} (the same tool on each):")
        elif servers[0] != server:
            server = servers[0]
            lines.append(f"server {server}:")
        lines.append(line)
    parts = cast(Sequence[str], data.get("steps", ()))
    if parts:
        lines.append("Steps read: " + "; ".join(f"{n}. {_shortened(part)}" for n, part in enumerate(parts, 1)))
    lines.append("Next: get_tool_details(server, tool), then execute_tool." + note + hint)
    return "\n".join(lines)


def tools_text(data: Mapping[str, Any]) -> str:
    tools = cast(Sequence[Mapping[str, Any]], data["tools"])
    lines = [f"{data['server']}: {counted(len(tools), 'tool')}" + (STALE_NOTE if data.get("stale") else "")]
    for t in tools:
        flag = f" (unusable: {t['unusable']})" if t.get("unusable") else "" if t["enabled"] else " (disabled)"
        tags = f" [{', '.join(t['tags'])}]" if t["tags"] else ""
        lines.append(f"- {t['name']}{flag}{tags}: {t['summary']}")
    if data.get("hiddenCount"):
        lines.append(f"(+{counted(data['hiddenCount'], 'hidden tool')}: found by search_tools only)")
    return "\n".join(lines)


def details_text(data: Mapping[str, Any], *, include_schema: bool) -> str:
    title = f" ({data['title']})" if data.get("title") else ""
    lines = [f"{data['server']} / {data['tool']}{title}" + (STALE_NOTE if data.get("stale") else "")]
    if data.get("description"):
        lines.append(str(data["description"]).strip())
    if data.get("signature"):
        lines.append(f"Call: {data['signature']}")
    params = cast(Sequence[Mapping[str, Any]], data["parameters"])
    if params and not include_schema and data.get("signature"):
        # A flat schema's call line already gives every parameter's type, whether it is required,
        # its default and its description cut short: only the descriptions it cut are added.
        cut = [p for p in params if description_cut(p.get("description"))]
        if cut:
            lines.append("In full:")
            lines += [f"- {p['name']}: {p['description']}" for p in cut]
    elif params:
        lines.append("Parameters:")
        for p in params:
            need = "required" if p["required"] else "optional"
            default = f", default {compact_json(p['default'])}" if "default" in p else ""
            desc = f": {p['description']}" if p.get("description") else ""
            lines.append(f"- {p['name']} ({p['type']}, {need}{default}){desc}")
    else:
        lines.append("Parameters: none (pass arguments: {}).")
    if include_schema:
        lines.append(f"Input schema: {compact_json(data['inputSchema'])}")
    # One example in the text, the first that passes any argument (the structured answer has them all):
    # a model copies one call's shape, and each further example costs tokens on every lookup.
    examples = cast(Sequence[Mapping[str, Any]], data.get("examples") or ())
    shown = next((e for e in examples if e["arguments"]), None)
    if shown is not None and params:
        lines.append(f"Example ({shown['description'].lower()}): {compact_json(shown['arguments'])}")
    flags = hint_labels(cast(Mapping[str, Any], data.get("annotations") or {}))
    if flags:
        lines.append("Hints: " + ", ".join(flags))
    if data.get("outputSchema"):
        lines.append("Returns structured content.")
    return "\n".join(lines)


_HINTS = (
    ("readOnlyHint", "read-only"),
    ("destructiveHint", "destructive"),
    ("idempotentHint", "idempotent"),
    ("openWorldHint", "open-world"),
)


def hint_labels(annotations: Mapping[str, Any]) -> list[str]:
    """The tool annotation hints that are set, as words: `read-only`, `destructive`, ..."""
    return [label for key, label in _HINTS if annotations.get(key)]


def error_text(error: Mapping[str, Any]) -> str:
    return f"Error {error['code']}: {error['message']}"


def compact_json(data: Any) -> str:
    """JSON without spaces, non-ASCII kept as is."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def model_text(data: Any) -> str:
    """Return `data` as TOON or compact JSON, whichever is fewer o200k_base tokens (JSON on a tie)."""
    as_json = compact_json(data)
    try:
        as_toon = toon_format.encode(data)
    except (TypeError, ValueError):  # a value TOON cannot write; JSON can, or it would have failed above
        return as_json
    return as_toon if count_tokens(as_toon) < count_tokens(as_json) else as_json


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def tabular(data: Any) -> Any:
    """Return `data` with every list of objects made into a table TOON can write as one header and rows.

    TOON writes a list of objects as a table only when every row has the same keys and only
    scalar values. Listings are nearly that: a key some rows lack becomes null in those rows,
    and a list of scalars (tags) becomes one comma-separated string. Nothing else changes.
    """
    if isinstance(data, dict):
        return {k: tabular(v) for k, v in cast(dict[str, Any], data).items()}
    if not isinstance(data, list):
        return data
    items = cast(list[Any], data)
    if not items or not all(isinstance(item, dict) for item in items):
        return [tabular(item) for item in items]
    rows = [cast(dict[str, Any], item) for item in items]
    keys = list(dict.fromkeys(key for row in rows for key in row))
    table: list[dict[str, Any]] = []
    for row in rows:
        cells: dict[str, Any] = {}
        for key in keys:
            value = row.get(key)
            if isinstance(value, list) and all(_is_scalar(v) for v in cast(list[Any], value)):
                value = ", ".join("" if v is None else str(v) for v in cast(list[Any], value))
            cells[key] = tabular(value)
        table.append(cells)
    return table


def listing_text(data: Any) -> str:
    """A listing for the model: its rows as a table, in TOON or compact JSON, whichever is fewer tokens."""
    return model_text(tabular(data))


ENCODING = "o200k_base"


class _Encoding(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


@cache
def _encoding() -> _Encoding:
    return cast(_Encoding, quicktok.get_encoding(ENCODING))  # pyright: ignore[reportUnknownMemberType]


def count_tokens(text: str) -> int:
    """Tokens of `text` under o200k_base; special-token lookalikes count as plain text."""
    return len(_encoding().encode_ordinary(text))


def tool_definitions_json(tools: Sequence[types.Tool]) -> str:
    """The tools as a client receives them in `tools/list`."""
    return json.dumps(
        [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools],
        ensure_ascii=False,
        separators=(",", ":"),
    )


def tool_tokens(tools: Sequence[types.Tool]) -> int:
    """What exposing `tools` directly costs in every request."""
    return count_tokens(tool_definitions_json(tools)) if tools else 0
