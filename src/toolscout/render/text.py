"""Compact text renderings of meta-tool results, for the model to read.

The same data goes out as `structuredContent`; many clients show the model only
the text, so the text must be complete enough to act on, yet short.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

STALE_NOTE = " (cached: the server is not connected)"
INSTRUCTIONS_LIMIT = 300
"""How much of a server's own instructions a listing of servers shows."""


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 server`, `3 servers`: a count with its noun in the right number."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def cut_text(text: str | None, limit: int) -> str | None:
    """`text` on one line, cut to `limit` characters with `...`; None when empty."""
    if not text:
        return None
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _j(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


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


def search_text(data: Mapping[str, Any]) -> str:
    results = cast(Sequence[Mapping[str, Any]], data["results"])
    pending = cast(Sequence[str], data.get("connecting", []))
    note = f" Still connecting: {', '.join(pending)}." if pending else ""
    query: Any = data["query"]
    asked = repr(query) if isinstance(query, str) else " + ".join(repr(q) for q in cast(list[str], query))
    if not results:
        closest = cast(Mapping[str, Any] | None, data.get("closest"))
        if closest is not None:
            return (
                f"No tools match {asked} above relevance {data['minRelevance']}; the closest is "
                f"{closest['server']} / {closest['tool']} ({closest['relevance']:.3f}), and minRelevance: 0 "
                f"lists the weaker matches.{note} Or try other words, or list_tools(server)."
            )
        return f"No tools match {asked}.{note} Try other words, or list_tools(server)."
    lines = [f"{counted(len(results), 'tool')} for {asked}:"]
    for r in results:
        tags = f" [{', '.join(r['tags'])}]" if r["tags"] else ""
        stale = ", cached" if r.get("stale") else ""
        steps = cast(Sequence[int], r.get("steps", ()))
        step = f", step {'+'.join(str(n) for n in steps)}" if steps else ""
        lines.append(f"- {r['server']} / {r['tool']} ({r['relevance']:.2f}{step}{stale}){tags}: {r['summary']}")
        if r.get("signature"):
            lines.append(f"  {r['signature']}")
    lines.append("Next: get_tool_details(server, tool), then execute_tool." + note)
    return "\n".join(lines)


def tools_text(data: Mapping[str, Any]) -> str:
    tools = cast(Sequence[Mapping[str, Any]], data["tools"])
    lines = [f"{data['server']}: {counted(len(tools), 'tool')}" + (STALE_NOTE if data.get("stale") else "")]
    for t in tools:
        flag = f" (unusable: {t['unusable']})" if t.get("unusable") else "" if t["enabled"] else " (disabled)"
        tags = f" [{', '.join(t['tags'])}]" if t["tags"] else ""
        lines.append(f"- {t['name']}{flag}{tags}: {t['summary']}")
    return "\n".join(lines)


def details_text(data: Mapping[str, Any], *, include_schema: bool) -> str:
    title = f" ({data['title']})" if data.get("title") else ""
    lines = [f"{data['server']} / {data['tool']}{title}" + (STALE_NOTE if data.get("stale") else "")]
    if data.get("description"):
        lines.append(str(data["description"]).strip())
    if data.get("signature"):
        lines.append(f"Call: {data['signature']}")
    params = cast(Sequence[Mapping[str, Any]], data["parameters"])
    if params:
        lines.append("Parameters:")
        for p in params:
            need = "required" if p["required"] else "optional"
            default = f", default {_j(p['default'])}" if "default" in p else ""
            desc = f": {p['description']}" if p.get("description") else ""
            lines.append(f"- {p['name']} ({p['type']}, {need}{default}){desc}")
    else:
        lines.append("Parameters: none (pass arguments: {}).")
    if include_schema:
        lines.append(f"Input schema: {_j(data['inputSchema'])}")
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
