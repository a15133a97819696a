"""The training pairs of `../shared/train`, split the one way every training script and benchmark uses.

* Only the MIT and Apache-2.0 sources are read: whatever is fitted on them may ship in the wheel.
  The Schema-Guided Dialogue rows (`sgd`, `sgd_x_v*`, CC-BY-SA-4.0) never are.
* One group of sources is held out (`HELD_OUT`): nothing shipped is fitted on it, so its score is
  the check that what was learned carries over to tools and queries of another origin.
* Of the rest, one query in ten (by a hash of its `qid`) is the validation split: early stopping
  and settings are chosen on it, never on the dev files of `../shared/eval`.
* Rows that share a `qid` are one query with several gold tools.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import mcp_types as types

from toolscout.catalog import Catalog, CatalogTool
from toolscout.search.evaluation import LabelledQuery

DEFAULT_TRAIN_DIR = Path(
    os.environ.get("TOOLSCOUT_TRAIN_DIR") or Path(__file__).resolve().parents[2] / "shared" / "train"
)
# Groups of sources (by `source` prefix), MIT or Apache-2.0 only (see the corpus README).
GROUPS: dict[str, tuple[str, ...]] = {
    "api_bank": ("api_bank",),
    "tooltalk": ("tooltalk",),
    "toolalpaca": ("toolalpaca",),
    "nestful": ("nestful_",),
    "bfcl": ("bfcl_",),
    "seal_tools": ("seal_tools",),
    "stabletoolbench": ("stabletoolbench", "toolbench_example"),
    "gorilla_apibench": ("gorilla_apibench",),
}
# Each group's licence, as the corpus README gives it for its repository: what is fitted on them may ship.
LICENCES: dict[str, str] = {
    "api_bank": "Apache-2.0",
    "tooltalk": "MIT",
    "toolalpaca": "Apache-2.0",
    "nestful": "Apache-2.0",
    "bfcl": "Apache-2.0",
    "seal_tools": "Apache-2.0",
    "stabletoolbench": "Apache-2.0",
    "gorilla_apibench": "Apache-2.0",
}
HELD_OUT = "toolalpaca"
"""The group no shipped model or weight is fitted on (ToolAlpaca: 86 real web APIs, 207 queries)."""


@dataclass(frozen=True)
class Pair:
    """One training row: a query and one of its gold tools."""

    qid: str
    query: str
    group: str
    tool_id: str
    tool: CatalogTool


def group_of(source: str) -> str | None:
    """The group a row's `source` belongs to; None for sources that may not be used (CC-BY-SA)."""
    for group, prefixes in GROUPS.items():
        if source.startswith(prefixes):
            return group
    return None


def is_validation(qid: str) -> bool:
    """One query in ten, stable across runs and machines."""
    return hashlib.sha256(qid.encode("utf-8")).digest()[0] % 10 == 0


def _tool(row: dict[str, Any], group: str) -> CatalogTool:
    tool = cast(dict[str, Any], row["tool"])
    schema = tool.get("input_schema")
    catalog = Catalog()
    server = str(tool.get("server") or group)
    catalog.set_server_tools(
        server,
        [
            types.Tool(
                name=str(tool["name"]),
                description=tool.get("description"),
                input_schema=cast(dict[str, Any], schema) if isinstance(schema, dict) else {"type": "object"},
            )
        ],
    )
    return catalog.tools(include_disabled=True)[0]


def load_pairs(train_dir: Path = DEFAULT_TRAIN_DIR, groups: Iterable[str] | None = None) -> list[Pair]:
    """Every usable pair (of `groups`, default all), in file order."""
    wanted = set(GROUPS if groups is None else groups)
    pairs: list[Pair] = []
    tools: dict[str, CatalogTool] = {}
    with gzip.open(train_dir / "retrieval_pairs.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            row = cast(dict[str, Any], json.loads(line))
            group = group_of(str(row["source"]))
            if group is None or group not in wanted:
                continue
            tool_id = str(row["tool_id"])
            if tool_id not in tools:
                tools[tool_id] = _tool(row, group)
            pairs.append(Pair(str(row["qid"]), str(row["query"]), group, tool_id, tools[tool_id]))
    return pairs


def split(pairs: Sequence[Pair]) -> tuple[list[Pair], list[Pair], list[Pair]]:
    """(train, validation, held out): the held-out group whole, then one query in ten of the rest."""
    train: list[Pair] = []
    validation: list[Pair] = []
    held: list[Pair] = []
    for pair in pairs:
        if pair.group == HELD_OUT:
            held.append(pair)
        elif is_validation(pair.qid):
            validation.append(pair)
        else:
            train.append(pair)
    return train, validation, held


def catalog_and_queries(
    pairs: Sequence[Pair], catalog_pairs: Sequence[Pair] | None = None, max_queries: int | None = None
) -> tuple[list[CatalogTool], list[LabelledQuery]]:
    """A catalog of the distinct tools of `catalog_pairs` (default: `pairs`) and `pairs` as labelled queries.

    Two tools with one (server, name) keep the first one's definition, as a gateway would show one.
    Queries are shuffled with a fixed seed and cut to `max_queries`.
    """
    seen: dict[tuple[str, str], CatalogTool] = {}
    for pair in catalog_pairs if catalog_pairs is not None else pairs:
        seen.setdefault((pair.tool.server, pair.tool.name), pair.tool)
    gold: dict[str, set[tuple[str, str]]] = defaultdict(set)
    text: dict[str, str] = {}
    for pair in pairs:
        gold[pair.qid].add((pair.tool.server, pair.tool.name))
        text[pair.qid] = pair.query
    queries = [LabelledQuery(text[q], frozenset(tools)) for q, tools in gold.items()]
    random.Random(0).shuffle(queries)
    return list(seen.values()), queries if max_queries is None else queries[:max_queries]
