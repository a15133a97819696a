"""Smart mode: tool selection, parameter mapping and the latency of one `smart_tool_discovery` call.

    python -m benchmarks smart [--eval-dir ../shared/eval] [--train-dir ../shared/train]
        [--queries N] [--latency-tools 10000] [--latency-requests 200] [--rounds 2] [--skip-latency]
    python -m benchmarks smart --llm-url URL --model M [--api-key-env VAR] [--limit N]

1. Selection without an LLM, on each dev set of `../shared/eval` (its catalog and servers'
   descriptions indexed by the shipped backend, `make_backend("hybrid")`, as the gateway builds it):
   for every query, the candidates smart mode asks for (`method_hits`, what `Gateway.candidates`
   runs: the best 30, `SmartConfig().max_llm_candidates`, by the mode's method) and its choice
   (`smart.selection.choose`, default `SmartConfig` weights), for each mode `rule_based`,
   `semantic_based` and `hybrid`; beside them the plain search's own ranking (`search`, what
   `search_tools` answers) and the alternative `hybrid = relevance`: the same hybrid candidates
   ranked by the search's own calibrated relevance (`MethodHit.relevance`), which is also its
   confidence. Hit@1: the top choice is one of the query's relevant tools; Hit@3: one of the top
   three is (a multi-tool query counts as a hit when any of its tools is chosen; none needs all).
   Δ is the paired difference to the plain search's Hit@1. Then, per mode, how often the top
   choice's confidence reaches `SmartConfig().confidence_threshold` (the tool runs) and how often
   that choice is right, against how often it is right below it; and the scales the hybrid
   combination adds (the mean best rule and best semantic score among its candidates).
2. Parameter mapping without an LLM: `benchmarks.smart_extraction` on every row of
   `../shared/train/argument_extraction.jsonl` (its `all` row; per source in its own section).
3. Latency: a real `Gateway` in process over about 10,000 tools (both dev catalogs copied under
   renamed servers, `benchmarks.upstreams.copies`, each server an in-process MCP server,
   `toolscout.demo.catalog_server`, whose tools answer at once) and `SmartDiscovery.run` without an
   LLM (caches off, threshold 0: the copies make every choice ambiguous), for dev requests (every
   LiveMCPBench one the tool accepts, MetaTool ones to fill up): the time until the gateway is
   asked to execute the chosen tool (selection, argument extraction, validation), or until the
   answer when nothing runs (required arguments missing); the whole call; and, in the same loop,
   the plain search (`Gateway.search`, limit 10) and the candidates alone (`Gateway.candidates`).
4. With `--llm-url` (any OpenAI-compatible chat-completions endpoint), instead of 1-3: `--limit`
   queries of each dev set and `--limit` rows of the extraction set (seeded samples): `llm_based`
   and `hybrid` with the LLM's picks (`select_with_llm` over the best 30 hybrid candidates, each as
   `candidate_line` renders it), the offline choices on the same queries, and the LLM's mapping
   (`map_with_llm`, validated by the gateway's validator, one repair round) against the extractor on
   the same rows. An LLM failure is counted; selection then falls back as the gateway does (hybrid
   without the LLM), mapping scores no arguments.

Intervals: 95% bootstrap (2,000 resamples of the queries or rows). Nothing is fitted on the dev sets.

End to end, on requests written for this project over real servers (the demo servers, the npm
reference servers, mcp-server-time), with requests that must not run and a scripted LLM that is
right, wrong or declines: `python -m benchmarks smart_requests` (`benchmarks.smart_requests`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types

from benchmarks import harness, smart_extraction, train_data
from benchmarks.search import DATASETS, DEFAULT_EVAL_DIR
from benchmarks.upstreams import copies
from toolscout.catalog import CatalogTool
from toolscout.config.models import SelectionMode, SmartCacheConfig, SmartConfig
from toolscout.demo.catalog_server import build_server
from toolscout.errors import LLMUnavailable
from toolscout.gateway.core import Confirm, Gateway, ResultShape
from toolscout.gateway.validation import ArgumentValidator
from toolscout.modes.smart import MAX_REQUEST_CHARS, SmartArgs, SmartDiscovery, candidate_line
from toolscout.search import make_backend
from toolscout.search.base import Method, MethodHit, SearchBackend, method_hits
from toolscout.search.evaluation import (
    LabelledQuery,
    bootstrap_interval,
    load_catalog_file,
    load_catalog_servers,
    load_queries_file,
    load_servers_file,
    servers_beside,
)
from toolscout.smart.extraction import search_text
from toolscout.smart.llm import LLMProvider, OpenAICompatibleLLM, map_with_llm
from toolscout.smart.selection import Choice, LLMPick, choose, select_with_llm
from toolscout.upstream import InProcessUpstream, UpstreamSpec

CONFIG = SmartConfig()
CANDIDATES = CONFIG.max_llm_candidates
"""How many candidates a smart call asks the search for (`SmartDiscovery._select`: 30 by default)."""
THRESHOLD = CONFIG.confidence_threshold
MODES: tuple[tuple[SelectionMode, Method], ...] = (
    ("rule_based", "rule"),
    ("semantic_based", "semantic"),
    ("hybrid", "hybrid"),
)
SEARCH = "search (plain)"
RELEVANCE = "hybrid = relevance"

Key = tuple[str, str]


@dataclass
class Picks:
    """One way of choosing, over the queries: each query's top-1 and top-3 hits and its top confidence."""

    hit1: list[float] = field(default_factory=list[float])
    hit3: list[float] = field(default_factory=list[float])
    confidence: list[float] = field(default_factory=list[float])

    def add(self, ranked: Sequence[Key], confidence: float, relevant: frozenset[Key]) -> None:
        self.hit1.append(1.0 if ranked[:1] and ranked[0] in relevant else 0.0)
        self.hit3.append(1.0 if any(key in relevant for key in ranked[:3]) else 0.0)
        self.confidence.append(confidence)


def _mean(values: Sequence[float]) -> str:
    low, high = bootstrap_interval(values)
    return f"{statistics.fmean(values):.3f} ({low:.3f}–{high:.3f})"


def _ratio(numerators: Sequence[float], denominators: Sequence[float]) -> str:
    shown = smart_extraction.ratio_text(numerators, denominators)
    return shown if not sum(denominators) else f"{shown} of {sum(denominators):,.0f}"


def _delta(picks: Picks, base: Picks) -> str:
    if picks is base:
        return "—"
    diff = [a - b for a, b in zip(picks.hit1, base.hit1, strict=True)]
    low, high = bootstrap_interval(diff)
    return f"{statistics.fmean(diff):+.3f} ({low:+.3f}…{high:+.3f})"


def _keys(choices: Sequence[Choice]) -> list[Key]:
    return [c.key for c in choices]


def _top(choices: Sequence[Choice]) -> float:
    return choices[0].confidence if choices else 0.0


def by_relevance(hits: Sequence[MethodHit]) -> list[MethodHit]:
    """The hybrid candidates in the order of the search's own relevance (ties: candidate order)."""
    return sorted(hits, key=lambda h: -h.relevance)


def offline_choices(
    backend: SearchBackend, query: str, scales: list[tuple[float, float]] | None = None
) -> dict[str, tuple[list[Key], float]]:
    """Every offline way of choosing for `query`: its ranked tools and the top one's confidence.
    `scales` gets the best rule and the best semantic score among the hybrid candidates."""
    out: dict[str, tuple[list[Key], float]] = {}
    plain = backend.search(query, limit=3)
    out[SEARCH] = ([(h.tool.server, h.tool.name) for h in plain], plain[0].relevance if plain else 0.0)
    # Smart mode searches the request as `search_text` reads it (`SmartDiscovery._select`).
    searched = search_text(query)
    for mode, method in MODES:
        hits = method_hits(backend, searched, limit=CANDIDATES, method=method)
        choices = choose(hits, mode=mode, weights=CONFIG.weights)
        out[mode] = (_keys(choices), _top(choices))
        if mode == "hybrid":
            if scales is not None and hits:
                scales.append((max(h.rule for h in hits), max(h.semantic or 0.0 for h in hits)))
            ranked = by_relevance(hits)
            out[RELEVANCE] = ([(h.tool.server, h.tool.name) for h in ranked], ranked[0].relevance if ranked else 0.0)
    return out


@dataclass(frozen=True)
class DevSet:
    name: str
    tools: list[CatalogTool]
    queries: list[LabelledQuery]
    servers: dict[str, str]


def dev_sets(eval_dir: Path, sample: int | None) -> list[DevSet]:
    """Each dev set with its servers' descriptions (as `toolscout eval` reads them); `sample`: a seeded
    sample of at most that many queries of each."""
    out: list[DevSet] = []
    for name in DATASETS:
        catalog = eval_dir / f"catalog_{name}.jsonl"
        tools = load_catalog_file(catalog)
        beside = servers_beside(catalog)
        queries = load_queries_file(eval_dir / f"queries_{name}_dev.jsonl", tools)
        if sample is not None and sample < len(queries):
            queries = random.Random(23).sample(queries, sample)
        out.append(DevSet(name, tools, queries, load_servers_file(beside) if beside else {}))
    return out


def indexed(dev: DevSet, cache: Path) -> SearchBackend:
    """The shipped backend (hybrid, packaged static model) with `dev`'s catalog, as the gateway indexes it."""
    backend = make_backend("hybrid", cache_dir=cache)
    backend.rebuild(dev.tools, dev.servers)
    return backend


def selection_tables(
    results: Mapping[str, tuple[DevSet, dict[str, Picks]]], scales: Mapping[str, list[tuple[float, float]]]
) -> list[str]:
    lines = [
        "| dataset | queries (multi-tool) | choice | Hit@1 | Hit@3 | Δ Hit@1 vs search (paired) |",
        "|---|---|---|---|---|---|",
    ]
    for name, (dev, table) in results.items():
        multi = sum(1 for q in dev.queries if len(q.relevant) > 1)
        for label, picks in table.items():
            lines.append(
                f"| {name} | {len(dev.queries):,} ({multi:,}) | {label} | {_mean(picks.hit1)} | {_mean(picks.hit3)} "
                f"| {_delta(picks, table[SEARCH])} |"
            )
    lines += [
        "",
        f"| dataset | choice | top confidence ≥ {THRESHOLD} (runs) | Hit@1 of those (precision) | Hit@1 below |",
        "|---|---|---|---|---|",
    ]
    for name, (_, table) in results.items():
        for label, picks in table.items():
            if label == SEARCH:  # its relevance is `hybrid = relevance`'s confidence
                continue
            above = [1.0 if c >= THRESHOLD else 0.0 for c in picks.confidence]
            right_above = [h * a for h, a in zip(picks.hit1, above, strict=True)]
            right_below = [h * (1 - a) for h, a in zip(picks.hit1, above, strict=True)]
            below = [1 - a for a in above]
            lines.append(
                f"| {name} | {label} | {_mean(above)} | {_ratio(right_above, above)} | {_ratio(right_below, below)} |"
            )
    if scales:
        lines += [
            "",
            "The scales hybrid combines: the mean, over the queries, of the best score among its candidates:",
            "",
        ]
        lines += [
            f"- {name}: rule {_mean([r for r, _ in pairs])}, semantic {_mean([m for _, m in pairs])}"
            for name, pairs in scales.items()
        ]
    return lines


def offline_selection(devs: Sequence[DevSet], scratch: Path) -> list[str]:
    results: dict[str, tuple[DevSet, dict[str, Picks]]] = {}
    scales: dict[str, list[tuple[float, float]]] = {}
    for dev in devs:
        started = time.perf_counter()
        backend = indexed(dev, scratch / dev.name)
        table: dict[str, Picks] = {}
        for query in dev.queries:
            for label, (ranked, confidence) in offline_choices(
                backend, query.text, scales.setdefault(dev.name, [])
            ).items():
                table.setdefault(label, Picks()).add(ranked, confidence, query.relevant)
        results[dev.name] = (dev, table)
        print(f"[{dev.name}: {len(dev.queries):,} queries in {time.perf_counter() - started:.0f} s]", file=sys.stderr)
    return selection_tables(results, scales)


def offline_mapping(train_dir: Path) -> list[str]:
    """`benchmarks.smart_extraction`'s table (per source and overall) on every row."""
    rows = smart_extraction.load_rows(train_dir)
    return [
        *smart_extraction.TABLE_HEADER,
        *smart_extraction.table(rows, [smart_extraction.score_row(r) for r in rows]),
    ]


# Latency through a real gateway


class TimedGateway(Gateway):
    """The gateway, noting when it is asked to execute a tool (the end of smart mode's own work)."""

    reached: float | None = None

    async def execute(
        self,
        server: str,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        max_output_chars: int | None = None,
        client: str | None = None,
        shape: ResultShape | None = None,
        confirm: Confirm | None = None,
    ) -> types.CallToolResult:
        self.reached = time.perf_counter()
        return await super().execute(
            server, name, arguments, max_output_chars=max_output_chars, client=client, shape=shape, confirm=confirm
        )


def big_catalog(eval_dir: Path, size: int) -> tuple[dict[str, list[types.Tool]], dict[str, str]]:
    """Both dev catalogs' servers, copied under renamed servers (`<name> #<k>`) until they hold `size`
    tools; and each copy's description (its original's)."""
    servers: dict[str, list[types.Tool]] = {}
    descriptions: dict[str, str] = {}
    for name in DATASETS:
        catalog = eval_dir / f"catalog_{name}.jsonl"
        servers |= load_catalog_servers(catalog)
        beside = servers_beside(catalog)
        descriptions |= load_servers_file(beside) if beside else {}
    count, total = 0, 0
    order = list(servers.values())
    while total < size:
        total += len(order[count % len(order)])
        count += 1
    copied = copies(servers, count)
    return copied, {name: descriptions.get(name.split(" #")[0], "") for name in copied}


def latency_requests(devs: Sequence[DevSet], count: int) -> list[tuple[str, str]]:
    """(dataset, request): every LiveMCPBench dev query the smart tool accepts (at most half of
    `count`), then a seeded sample of MetaTool's to make `count`."""
    by_name = {d.name: [q.text for q in d.queries if len(q.text) <= MAX_REQUEST_CHARS] for d in devs}
    live = by_name.get("livemcpbench", [])[: count // 2]
    rest = random.Random(23).sample(by_name.get("metatool", []), min(count - len(live), len(by_name["metatool"])))
    return [("livemcpbench", q) for q in live] + [("metatool", q) for q in rest]


async def latency(eval_dir: Path, devs: Sequence[DevSet], size: int, count: int, rounds: int) -> list[str]:
    servers, descriptions = big_catalog(eval_dir, size)
    specs = [
        UpstreamSpec(name, InProcessUpstream(build_server(name, tools, descriptions[name] or None)))
        for name, tools in servers.items()
    ]
    requests = latency_requests(devs, count)
    times: dict[str, list[float]] = {"search": [], "candidates": [], "smart before upstream": [], "smart whole": []}
    by_set: dict[str, list[float]] = {}
    outcomes: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as scratch:
        gateway = TimedGateway(specs, search=make_backend("hybrid", cache_dir=Path(scratch)))
        async with gateway:
            started = time.perf_counter()
            with anyio.fail_after(900):
                await gateway.settle()
            connected = time.perf_counter() - started
            started = time.perf_counter()
            await gateway.search("warm up the index", limit=10)
            build = time.perf_counter() - started
            tools = len(gateway.catalog.tools())
            smart = SmartDiscovery(gateway, SmartConfig(cache=SmartCacheConfig(enabled=False)))
            await smart.run(SmartArgs.model_validate({"request": "convert 5 miles to kilometres"}))  # first-call costs
            rng = random.Random(5)
            for _ in range(rounds):
                order = list(requests)
                rng.shuffle(order)
                for dataset, text in order:
                    # Threshold 0: every call goes the whole way (choice, arguments, validation, the
                    # upstream) whatever its confidence. The catalog repeats each tool under many
                    # servers, which no request can tell apart: at 0.5 nearly every call would stop
                    # at TOOL_NOT_FOUND, and the time of the path that runs would go unmeasured.
                    args = SmartArgs.model_validate({"request": text, "confidence_threshold": 0.0})
                    steps = ["search", "candidates", "smart"]
                    rng.shuffle(steps)
                    for step in steps:
                        gateway.reached = None
                        started = time.perf_counter()
                        if step == "search":
                            await gateway.search(text, limit=10)
                            times["search"].append((time.perf_counter() - started) * 1000)
                            continue
                        if step == "candidates":
                            await gateway.candidates(text, limit=CANDIDATES, method="hybrid")
                            times["candidates"].append((time.perf_counter() - started) * 1000)
                            continue
                        result = await smart.run(args)
                        ended = time.perf_counter()
                        before = ((gateway.reached or ended) - started) * 1000
                        times["smart before upstream"].append(before)
                        times["smart whole"].append((ended - started) * 1000)
                        by_set.setdefault(dataset, []).append(before)
                        outcome = _outcome(gateway.reached is not None, result)
                        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    search_p50 = statistics.median(times["search"])
    lines = [
        f"{tools:,} tools on {len(servers):,} in-process servers (connected in {connected:.0f} s, index built in "
        f"{build:.1f} s); {len(requests)} requests × {rounds} rounds "
        f"({sum(1 for d, _ in requests if d == 'livemcpbench')} LiveMCPBench, "
        f"{sum(1 for d, _ in requests if d == 'metatool')} MetaTool); outcomes: "
        + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())),
        "",
        "| step | p50 ms | p99 ms | p50 / search p50 |",
        "|---|---|---|---|",
    ]
    for label, values in times.items():
        p50 = statistics.median(values)
        lines.append(f"| {label} | {p50:.2f} | {harness.percentile(values, 0.99):.2f} | {p50 / search_p50:.2f} |")
    for dataset, values in by_set.items():
        lines.append(
            f"| smart before upstream, {dataset} requests | {statistics.median(values):.2f} "
            f"| {harness.percentile(values, 0.99):.2f} | {statistics.median(values) / search_p50:.2f} |"
        )
    return lines


def _outcome(reached: bool, result: types.CallToolResult) -> str:
    if reached:
        return "ran"
    error: Any = cast(dict[str, Any], result.structured_content or {}).get("error")
    if isinstance(error, dict) and cast(dict[str, Any], error).get("code") == "TOOL_NOT_FOUND":
        return "no tool confident enough"
    return "stopped before running (arguments, confirmation)"


# With an LLM


async def llm_selection(llm: LLMProvider, devs: Sequence[DevSet], scratch: Path) -> list[str]:
    results: dict[str, tuple[DevSet, dict[str, Picks]]] = {}
    failures: dict[str, dict[str, int]] = {}
    for dev in devs:
        backend = indexed(dev, scratch / f"llm-{dev.name}")
        table: dict[str, Picks] = {}
        failed: dict[str, int] = {}
        for done, query in enumerate(dev.queries, 1):
            for label, (ranked, confidence) in offline_choices(backend, query.text).items():
                table.setdefault(label, Picks()).add(ranked, confidence, query.relevant)
            hits = method_hits(backend, query.text, limit=CANDIDATES, method="hybrid")
            lines = [((h.tool.server, h.tool.name), candidate_line(h.tool)) for h in hits[:CANDIDATES]]
            picks: dict[Key, LLMPick] | None = None
            try:
                picks = await select_with_llm(llm, query.text, None, lines)
            except LLMUnavailable as exc:
                failed[exc.reason] = failed.get(exc.reason, 0) + 1
            for mode in ("llm_based", "hybrid"):
                choices = choose(hits, mode=mode, weights=CONFIG.weights, llm=picks)
                table.setdefault(f"{mode} + LLM", Picks()).add(_keys(choices), _top(choices), query.relevant)
            print(f"[{dev.name}: {done}/{len(dev.queries)}]", file=sys.stderr, flush=True)
        results[dev.name] = (dev, table)
        failures[dev.name] = failed
    lines = selection_tables(results, {})
    lines += ["", "LLM selection failures (the call then chose as hybrid without the LLM, as the gateway does):"]
    lines += [f"- {name}: {json.dumps(failed) if failed else 'none'}" for name, failed in failures.items()]
    return lines


async def llm_mapping(llm: LLMProvider, train_dir: Path, limit: int) -> list[str]:
    rows = smart_extraction.load_rows(train_dir)
    if limit < len(rows):
        rows = random.Random(23).sample(rows, limit)
    validator = ArgumentValidator()
    scores: list[smart_extraction.RowScore] = []
    failed: dict[str, int] = {}
    repaired = 0
    for done, row in enumerate(rows, 1):
        tool: dict[str, Any] = row["tool"]
        server, name = str(tool.get("server", "")), str(tool["name"])

        def validate(schema: dict[str, Any], arguments: dict[str, Any], server: str = server, name: str = name) -> None:
            validator.validate(schema, arguments, server=server, tool=name)

        try:
            mapped = await map_with_llm(
                llm,
                str(row["request"]),
                tool=name,
                description=str(tool.get("description") or ""),
                schema=smart_extraction.row_schema(row),
                validate=validate,
            )
            scores.append(smart_extraction.score_arguments(row, mapped.arguments, mapped.missing_required))
            repaired += mapped.repaired
        except LLMUnavailable as exc:
            failed[exc.reason] = failed.get(exc.reason, 0) + 1
            scores.append(smart_extraction.score_arguments(row, {}, []))
        print(f"[mapping: {done}/{len(rows)}]", file=sys.stderr, flush=True)
    extractor = [smart_extraction.score_row(row) for row in rows]
    return [
        f"LLM (`map_with_llm`), {len(rows)} rows; {repaired} answers used after the repair round; failures "
        f"(scored as no arguments): {json.dumps(failed) if failed else 'none'}",
        "",
        *smart_extraction.TABLE_HEADER,
        *smart_extraction.table(rows, scores),
        "",
        "The extractor (no LLM) on the same rows:",
        "",
        *smart_extraction.TABLE_HEADER,
        *smart_extraction.table(rows, extractor),
    ]


async def with_llm(args: argparse.Namespace) -> list[str]:
    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    devs = dev_sets(args.eval_dir, args.limit)
    async with OpenAICompatibleLLM(args.llm_url, args.model, api_key=key, timeout=args.llm_timeout) as llm:
        with tempfile.TemporaryDirectory() as scratch:
            selection = await llm_selection(llm, devs, Path(scratch))
        mapping = await llm_mapping(llm, args.train_dir, args.limit)
    return [
        f"### Selection with {llm.name} ({args.limit} queries of each dev set, seeded sample)",
        "",
        *selection,
        "",
        f"### Parameter mapping with {llm.name}",
        "",
        *mapping,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    parser.add_argument("--train-dir", type=Path, default=train_data.DEFAULT_TRAIN_DIR)
    parser.add_argument(
        "--queries", type=int, help="A seeded sample of this many queries of each dev set (default all)."
    )
    parser.add_argument("--latency-tools", type=int, default=10_000)
    parser.add_argument("--latency-requests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2, help="Times each latency request is timed.")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--llm-url", help="An OpenAI-compatible endpoint, up to /chat/completions (e.g. .../v1).")
    parser.add_argument("--model", help="The model to ask (with --llm-url).")
    parser.add_argument("--api-key-env", help="The environment variable holding the endpoint's API key.")
    parser.add_argument("--limit", type=int, default=100, help="Queries per dev set and extraction rows (with an LLM).")
    parser.add_argument("--llm-timeout", type=float, default=60.0, help="Seconds one LLM answer may take.")
    args = parser.parse_args()
    header = (
        f"{harness.today()}, {harness.machine_line()}; "
        f"threshold {THRESHOLD}, weights {CONFIG.weights.model_dump()}, {CANDIDATES} candidates"
    )
    print(header, flush=True)
    if args.llm_url:
        if not args.model:
            parser.error("--llm-url needs --model")
        print("\n".join(asyncio.run(with_llm(args))), flush=True)
        return
    devs = dev_sets(args.eval_dir, args.queries)
    with tempfile.TemporaryDirectory() as scratch:
        print("\n".join(["", "### Selection without an LLM", "", *offline_selection(devs, Path(scratch))]), flush=True)
    print("\n".join(["", "### Parameter mapping without an LLM", "", *offline_mapping(args.train_dir)]), flush=True)
    if not args.skip_latency:
        lines = asyncio.run(latency(args.eval_dir, devs, args.latency_tools, args.latency_requests, args.rounds))
        print("\n".join(["", "### Latency without an LLM", "", *lines]), flush=True)
