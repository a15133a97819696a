"""Measuring search quality: labelled queries against a catalog, with the metrics of the eval README.

R@k is the share of a query's relevant tools found in the top k (averaged over queries), Hit@k
whether any of them is, nDCG@10 uses binary gains, MRR the rank of the first relevant tool in the
whole ranking. Latency is the wall time of one `search` call, in milliseconds.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, cast

import mcp_types as types
import numpy as np

from toolscout.catalog import Catalog, CatalogTool
from toolscout.errors import ConfigurationError
from toolscout.search.base import SearchBackend, server_context


@dataclass(frozen=True)
class LabelledQuery:
    """A query and the `(server, tool)` pairs that answer it."""

    text: str
    relevant: frozenset[tuple[str, str]]


@dataclass(frozen=True)
class Report:
    """The metrics of one run; `asdict` gives the JSON form."""

    tools: int
    queries: int
    recall_1: float
    recall_5: float
    hit_1: float
    hit_5: float
    ndcg_10: float
    mrr: float
    p50_ms: float
    p95_ms: float
    max_ms: float
    build_s: float
    per_query: Mapping[str, tuple[float, ...]] = field(default_factory=dict[str, tuple[float, ...]], repr=False)
    """Each metric (`recall_1`, `recall_5`, `hit_1`, `hit_5`, `ndcg_10`, `mrr`) per query, in query
    order: for bootstrap intervals and paired comparisons (`bootstrap_interval`)."""
    top_hits: tuple[tuple[tuple[float, bool], ...], ...] = field(default=(), repr=False)
    """Each query's first `limit` hits as (relevance, whether it is one of the query's tools)."""

    def as_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.repr}


def bootstrap_interval(
    values: Sequence[float], *, level: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of `values` (one per query; queries resampled).

    For a paired comparison of two runs over the same queries, pass the per-query differences.
    """
    data = np.asarray(values, dtype=np.float64)
    if not data.size:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    means: list[np.ndarray[Any, np.dtype[np.float64]]] = []
    chunk = max(1, 2_000_000 // data.size)  # resamples drawn a chunk at a time: bounded memory
    for start in range(0, resamples, chunk):
        picks = rng.integers(0, data.size, size=(min(chunk, resamples - start), data.size))
        means.append(data[picks].mean(axis=1))
    spread = np.concatenate(means)
    tail = (1 - level) / 2 * 100
    return (float(np.percentile(spread, tail)), float(np.percentile(spread, 100 - tail)))


def ratio_interval(
    numerators: Sequence[float], denominators: Sequence[float], *, resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """A pooled ratio `sum(numerators) / sum(denominators)` and its 95% percentile bootstrap interval.

    One numerator and denominator per query (or row), resampled together: shares of hits and
    precision over a varying number of items each.
    """
    num, den = np.asarray(numerators, dtype=np.float64), np.asarray(denominators, dtype=np.float64)
    if not num.size:
        return (0.0, 0.0, 0.0)
    picks = np.random.default_rng(seed).integers(0, num.size, size=(resamples, num.size))
    ratios = num[picks].sum(axis=1) / np.maximum(den[picks].sum(axis=1), 1)
    low, high = np.percentile(ratios, [2.5, 97.5])
    return (float(num.sum() / max(den.sum(), 1)), float(low), float(high))


def _rows(path: Path, what: str) -> Iterable[tuple[int, dict[str, Any]]]:
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"Cannot read the {what} file {path}: {exc.strerror or exc}.") from None
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row: Any = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigurationError(f"{path}: line {number}, column {exc.colno}: not JSON ({exc.msg}).") from None
            if not isinstance(row, dict):
                raise ConfigurationError(f"{path}: line {number}: each line must be a JSON object.")
            yield number, cast(dict[str, Any], row)


def load_catalog_servers(path: Path) -> dict[str, list[types.Tool]]:
    """Tools by server, in file order, from JSON Lines `{"server", "name", "description", "input_schema"}`."""
    by_server: dict[str, list[types.Tool]] = {}
    for number, row in _rows(path, "catalog"):
        server, name = row.get("server"), row.get("name")
        if not isinstance(server, str) or not isinstance(name, str) or not server or not name:
            raise ConfigurationError(f'{path}: line {number}: needs string "server" and "name".')
        raw: Any = row.get("input_schema")
        schema = cast(dict[str, Any], raw) if isinstance(raw, dict) else {"type": "object"}
        description = row.get("description")
        tool = types.Tool(
            name=name, description=description if isinstance(description, str) else None, input_schema=schema
        )
        by_server.setdefault(server, []).append(tool)
    if not by_server:
        raise ConfigurationError(f"{path} holds no tools.")
    return by_server


def load_catalog(path: Path) -> Catalog:
    """A catalog file (the eval README format) as the gateway's `Catalog`."""
    catalog = Catalog()
    for server, tools in load_catalog_servers(path).items():
        catalog.set_server_tools(server, tools)
    return catalog


def load_catalog_file(path: Path) -> list[CatalogTool]:
    """Every tool of a catalog file, as the search backends index them."""
    return load_catalog(path).tools(include_disabled=True)


def load_servers_file(path: Path) -> dict[str, str]:
    """What each server says about itself, from JSON Lines `{"server", "description", ...}` (the eval
    README's `servers_<name>.jsonl`; an `instructions` field is read too): context for its tools."""
    servers: dict[str, str] = {}
    for number, row in _rows(path, "servers"):
        server, description, instructions = row.get("server"), row.get("description"), row.get("instructions")
        if not isinstance(server, str) or not server:
            raise ConfigurationError(f'{path}: line {number}: needs a string "server".')
        servers[server] = server_context(
            description if isinstance(description, str) else None,
            instructions if isinstance(instructions, str) else None,
        )
    return servers


def servers_beside(catalog: Path) -> Path | None:
    """Return the `servers_<name>.jsonl` next to `catalog_<name>.jsonl`, if there is one (the eval README's layout)."""
    if not catalog.name.startswith("catalog_"):
        return None
    sibling = catalog.with_name("servers_" + catalog.name.removeprefix("catalog_"))
    return sibling if sibling.is_file() else None


def load_queries_file(path: Path, tools: Sequence[CatalogTool]) -> list[LabelledQuery]:
    """Queries from JSON Lines `{"query", "relevant": [[server, name], ...]}`; every pair must be in `tools`."""
    known = {(t.server, t.name) for t in tools}
    queries: list[LabelledQuery] = []
    for number, row in _rows(path, "queries"):
        text, relevant = row.get("query"), row.get("relevant")
        if not isinstance(text, str) or not isinstance(relevant, list) or not relevant:
            raise ConfigurationError(f'{path}: line {number}: needs a string "query" and a non-empty "relevant" list.')
        pairs: set[tuple[str, str]] = set()
        for pair in cast(list[Any], relevant):
            if not (isinstance(pair, list) and len(cast(list[Any], pair)) == 2):
                raise ConfigurationError(f'{path}: line {number}: each "relevant" item is a [server, tool] pair.')
            key = (str(cast(list[Any], pair)[0]), str(cast(list[Any], pair)[1]))
            if key not in known:
                raise ConfigurationError(
                    f"{path}: line {number}: {key[0]}/{key[1]} is not in the catalog; "
                    "labels must name catalog tools exactly."
                )
            pairs.add(key)
        queries.append(LabelledQuery(text, frozenset(pairs)))
    if not queries:
        raise ConfigurationError(f"{path} holds no queries.")
    return queries


def _percentile(sorted_values: Sequence[float], share: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * share))]


def evaluate(
    backend: SearchBackend,
    tools: Sequence[CatalogTool],
    queries: Sequence[LabelledQuery],
    *,
    limit: int = 10,
    progress: Callable[[int], None] | None = None,
    servers: Mapping[str, str] | None = None,
) -> Report:
    """Index `tools` in `backend`, run every query and score the rankings.

    `servers` is what each server says about itself (description, instructions), indexed as
    context for its tools as the gateway does with its upstreams'.

    Latency is timed on the call an agent makes (`limit` results); the metrics are computed on
    a second call ranking the whole catalog, so MRR sees every rank, as the eval README defines it.
    """
    started = time.perf_counter()
    backend.rebuild(tools, servers)
    build_s = time.perf_counter() - started
    backend.search(queries[0].text, limit=limit)  # warm-up: first-call costs are not search latency
    r1: list[float] = []
    r5: list[float] = []
    h1: list[float] = []
    h5: list[float] = []
    ndcg: list[float] = []
    rr: list[float] = []
    top: list[tuple[tuple[float, bool], ...]] = []
    latencies: list[float] = []
    for done, query in enumerate(queries, 1):
        started = time.perf_counter()
        backend.search(query.text, limit=limit)
        latencies.append((time.perf_counter() - started) * 1000)
        hits = backend.search(query.text, limit=len(tools))
        found = [i for i, h in enumerate(hits) if (h.tool.server, h.tool.name) in query.relevant]
        top.append(tuple((h.relevance, i in found) for i, h in enumerate(hits[:limit])))
        r1.append(sum(1 for i in found if i < 1) / len(query.relevant))
        r5.append(sum(1 for i in found if i < 5) / len(query.relevant))
        h1.append(1.0 if found and found[0] < 1 else 0.0)
        h5.append(1.0 if found and found[0] < 5 else 0.0)
        rr.append(1 / (found[0] + 1) if found else 0.0)
        dcg = sum(1 / math.log2(i + 2) for i in found if i < 10)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(len(query.relevant), 10)))
        ndcg.append(dcg / ideal)
        if progress is not None:
            progress(done)
    latencies.sort()
    return Report(
        tools=len(tools),
        queries=len(queries),
        recall_1=statistics.fmean(r1),
        recall_5=statistics.fmean(r5),
        hit_1=statistics.fmean(h1),
        hit_5=statistics.fmean(h5),
        ndcg_10=statistics.fmean(ndcg),
        mrr=statistics.fmean(rr),
        p50_ms=_percentile(latencies, 0.5),
        p95_ms=_percentile(latencies, 0.95),
        max_ms=latencies[-1],
        build_s=build_s,
        per_query={
            "recall_1": tuple(r1),
            "recall_5": tuple(r5),
            "hit_1": tuple(h1),
            "hit_5": tuple(h5),
            "ndcg_10": tuple(ndcg),
            "mrr": tuple(rr),
        },
        top_hits=tuple(top),
    )
