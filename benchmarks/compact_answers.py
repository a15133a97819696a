"""Tokens of compact mode's answers in each `compactFormat`, against what the model read before them.

    python -m benchmarks compact_answers

The four demo servers (notes, units, text, files) behind the gateway in process, to an `mcp.Client`
over the in-memory transport. For `inspect` of each whole server it counts, with o200k_base, the text
in `compactFormat: toon` (TOON, schemas as TypeScript) and `smallest`, against the previous text: the
same data as TOON or compact JSON, whichever was fewer tokens, schemas as JSON Schema. For `exec` of
a few demo tools it counts the text in each format against the server's own text (pretty JSON), which
the previous compact mode passed as is, and the value as compact JSON. Prints two Markdown tables.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, get_args

import anyio
import mcp_types as types
from mcp import Client

from benchmarks import harness
from toolscout.config.models import CompactFormat
from toolscout.demo import files, notes, text, units
from toolscout.gateway.core import Gateway
from toolscout.modes.base import SurfaceOptions
from toolscout.render.text import ENCODING, compact_json, count_tokens, model_text
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

SERVERS = ("notes", "units", "text", "files")
CALLS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("notes", "list_notes", {}),
    ("notes", "search_notes", {"text": "gateway"}),
    ("units", "list_units", {}),
    ("units", "convert_units", {"value": 3, "from_unit": "km", "to_unit": "mi"}),
    ("text", "word_count", {"text": "The quick brown fox jumps over the lazy dog. It barks."}),
    ("files", "list_directory", {}),
)
FORMATS: tuple[CompactFormat, ...] = get_args(CompactFormat)


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


@asynccontextmanager
async def demo_gateway() -> AsyncGenerator[Gateway]:
    built = {"notes": notes.build_server(), "units": units.build_server(), "text": text.build_server()}
    built["files"] = files.build_server()
    specs = [UpstreamSpec(name, InProcessUpstream(built[name])) for name in SERVERS]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(60):
            await gateway.settle()
        yield gateway


async def measure() -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    inspected: dict[str, dict[str, int]] = {name: {} for name in SERVERS}
    executed: dict[str, dict[str, int]] = {f"{server}.{tool}": {} for server, tool, _ in CALLS}
    async with demo_gateway() as gateway:
        for server, tool, arguments in CALLS:
            own = await gateway.execute(server, tool, arguments)
            executed[f"{server}.{tool}"]["before"] = count_tokens(_text(own))
            executed[f"{server}.{tool}"]["json"] = count_tokens(compact_json(own.structured_content))
        for form in FORMATS:
            face = build_server(gateway, "compact", SurfaceOptions(compact_format=form))
            async with Client(face, mode="legacy") as client:
                for name in SERVERS:
                    result = await client.call_tool("inspect", {"server_name": name})
                    inspected[name][form] = count_tokens(_text(result))
                    inspected[name]["before"] = count_tokens(model_text(result.structured_content))
                for server, tool, arguments in CALLS:
                    request = {"server_name": server, "tool_name": tool, "arguments": arguments}
                    result = await client.call_tool("exec", request)
                    if result.is_error:
                        raise SystemExit(f"{server}.{tool} failed: {_text(result)}")
                    executed[f"{server}.{tool}"][form] = count_tokens(_text(result))
    return inspected, executed


def _table(title: str, before: str, rows: dict[str, dict[str, int]], extra: str | None = None) -> None:
    head = f"| {title} | {before} | `toon` | `smallest` |" + (f" {extra} |" if extra else "")
    print(head)
    print("|---" * head.count(" | ") + "|---|")
    totals: dict[str, int] = {}
    for label, counts in rows.items():
        for key, value in counts.items():
            totals[key] = totals.get(key, 0) + value
        cells = [counts["before"], counts["toon"], counts["smallest"], *([counts["json"]] if extra else [])]
        print(f"| {label} | " + " | ".join(str(c) for c in cells) + " |")
    cells = [totals["before"], totals["toon"], totals["smallest"], *([totals["json"]] if extra else [])]
    print("| **all** | " + " | ".join(f"**{c}**" for c in cells) + " |")
    harness.record(title, totals)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.parse_args()
    inspected, executed = anyio.run(measure)
    print(f"## Compact mode's answers — {harness.today()}, {ENCODING}, the four demo servers")
    print()
    _table("inspect(server)", "before (TOON or JSON, JSON Schema)", inspected)
    print()
    _table("exec", "before (the server's text)", executed, extra="value as compact JSON")


if __name__ == "__main__":
    main()
