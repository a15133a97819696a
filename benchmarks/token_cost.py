"""What a catalog costs an agent exposed directly, versus toolscout's five meta-tools (o200k_base tokens).

    python -m benchmarks token_cost [--eval-dir ../shared/eval]

Uses the real `tools/list` payloads captured in the LiveMCPBench catalog (527 tools, 70 servers).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks import harness
from benchmarks.search import DEFAULT_EVAL_DIR
from toolscout.catalog import least_permissive
from toolscout.modes.discovery import META_TOOLS
from toolscout.render.text import ENCODING, tool_tokens
from toolscout.search.evaluation import load_catalog


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    args = parser.parse_args()
    catalog = load_catalog(args.eval_dir / "catalog_livemcpbench.jsonl")
    tools = [entry.tool for entry in catalog.tools()]
    per_server = sorted(
        (
            (server, tool_tokens([t.tool for t in catalog.tools(server)]))
            for server in {t.server for t in catalog.tools()}
        ),
        key=lambda pair: -pair[1],
    )
    # execute_tool is annotated as the riskiest tool it reaches (modes/hints.py), as a client receives it.
    reach = least_permissive(catalog.tools())
    meta = tool_tokens(
        [
            t.definition().model_copy(update={"annotations": reach}) if t.runs_tools else t.definition()
            for t in META_TOOLS
        ]
    )
    direct = tool_tokens(tools)
    print(f"token cost, {harness.today()}, {ENCODING}")
    print("| exposed | tools | tokens |")
    print("|---|---|---|")
    print(f"| all {len(per_server)} LiveMCPBench servers | {len(tools)} | {direct} |")
    print(f"| largest server ({per_server[0][0]}) | {len(catalog.tools(per_server[0][0]))} | {per_server[0][1]} |")
    print(f"| median server | - | {per_server[len(per_server) // 2][1]} |")
    print(f"| toolscout meta-tools | {len(META_TOOLS)} | {meta} |")
    print(f"\nmeta-tools cost {meta / direct:.1%} of exposing every tool ({direct / meta:.0f}x less).")
