"""How often the tool-poisoning check flags real tools (false positives) and catches written attacks.

    python -m benchmarks poisoning [--eval-dir ../shared/eval] [--train-dir ../shared/train]

Runs `toolscout.gateway.poisoning.instructions_in` on every tool of the catalogs in `../shared/eval`
(LiveMCPBench's real `tools/list` payloads and MetaTool's plugin descriptions) and on every distinct
tool of `../shared/train`'s retrieval pairs (BFCL, ToolBench, Seal-Tools, SGD and the others: real
API descriptions with their schemas), none of which is poisoned: each flag there is a false
positive unless reading it shows otherwise, so every flagged tool is printed with its reasons. Then
the attack descriptions of `benchmarks/poisoned_tools.py` (written for the tests, modelled on
published ones) for the detection rate, with each missed one printed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import mcp_types

from benchmarks import harness
from benchmarks.poisoned_tools import ATTACKS, UNSEEN
from benchmarks.search import DEFAULT_EVAL_DIR
from benchmarks.train_data import DEFAULT_TRAIN_DIR
from toolscout.gateway.poisoning import instructions_in


def _tool(row: dict[str, Any]) -> mcp_types.Tool:
    schema = row.get("input_schema")
    description = row.get("description")
    return mcp_types.Tool(
        name=str(row["name"]),
        description=description if isinstance(description, str) else None,
        input_schema=cast(dict[str, Any], schema) if isinstance(schema, dict) else {"type": "object"},
    )


def eval_tools(eval_dir: Path) -> Iterator[tuple[str, str, mcp_types.Tool]]:
    """(corpus, server, tool) for every line of every `catalog_*.jsonl` of the eval directory."""
    for path in sorted(eval_dir.glob("catalog_*.jsonl")):
        corpus = path.stem.removeprefix("catalog_")
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                row = cast(dict[str, Any], json.loads(line))
                yield corpus, str(row["server"]), _tool(row)


def train_tools(train_dir: Path) -> Iterator[tuple[str, str, mcp_types.Tool]]:
    """(corpus, server, tool) for each distinct `tool_id` of the training pairs, first definition kept."""
    seen: set[str] = set()
    path = train_dir / "retrieval_pairs.jsonl.gz"
    if not path.is_file():
        return
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            row = cast(dict[str, Any], json.loads(line))
            tool_id = str(row["tool_id"])
            if tool_id in seen:
                continue
            seen.add(tool_id)
            tool = cast(dict[str, Any], row["tool"])
            yield "train", str(tool.get("server") or row["source"]), _tool(tool)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    parser.add_argument("--train-dir", type=Path, default=DEFAULT_TRAIN_DIR)
    args = parser.parse_args()
    machine = platform.processor() or platform.machine()
    print(
        f"tool poisoning check, {harness.today()}, {machine}, {harness.cores()} cores, "
        f"Python {platform.python_version()}"
    )
    totals: dict[str, list[int]] = {}
    flagged: list[tuple[str, str, str, tuple[str, ...]]] = []
    every = [*eval_tools(args.eval_dir), *train_tools(args.train_dir)]
    checked = 0
    started = time.perf_counter()
    for corpus, server, tool in every:
        reasons = instructions_in(tool)
        counts = totals.setdefault(corpus, [0, 0])
        counts[0] += 1
        checked += 1
        if reasons:
            counts[1] += 1
            flagged.append((corpus, server, tool.name, reasons))
    per_tool = (time.perf_counter() - started) / max(checked, 1)
    print("\n| corpus | tools | flagged | rate |")
    print("|---|---|---|---|")
    for corpus, (tools, hits) in totals.items():
        print(f"| {corpus} | {tools:,} | {hits} | {hits / tools:.2%} |")
    all_tools = sum(t for t, _ in totals.values())
    all_hits = sum(h for _, h in totals.values())
    print(f"| all | {all_tools:,} | {all_hits} | {all_hits / max(all_tools, 1):.2%} |")
    print(f"\n{per_tool * 1e6:.0f} µs per tool on average")
    print("\nflagged real tools:")
    for corpus, server, name, reasons in flagged:
        print(f"- {corpus} {server}/{name}: {'; '.join(reasons)}")
    caught = [(label, word, instructions_in(tool)) for label, tool, word in ATTACKS]
    hits = sum(1 for _, _, reasons in caught if reasons)
    named = sum(1 for _, word, reasons in caught if any(word.lower() in r.lower() for r in reasons))
    print(f"\nattacks flagged: {hits}/{len(caught)} ({hits / len(caught):.0%}), with the expected reason: {named}")
    for label, _, reasons in caught:
        print(f"- {label}: {'; '.join(reasons) if reasons else 'MISSED'}")
    unseen = [(label, instructions_in(tool)) for label, tool in UNSEEN]
    hits = sum(1 for _, reasons in unseen if reasons)
    print(f"\nattacks written after the patterns were settled: {hits}/{len(unseen)} ({hits / len(unseen):.0%})")
    for label, reasons in unseen:
        print(f"- {label}: {'; '.join(reasons) if reasons else 'MISSED'}")
