"""Search quality on the training pairs of `../shared/train`: the set search settings are tuned on.

    python -m benchmarks search_train [--train-dir ../shared/train] [--queries 400]
        [--backend hybrid] [--set fusion.dense_reference=0] [--set fields.parameters=0]
        [--set synonym_weight=0] [--validation] [--against fusion.steps=0]

The dev sets of `../shared/eval` measure; this set is for choosing (weights, synonyms, floors),
so that the dev figures stay a fair test. Only the MIT and Apache-2.0 sources of the corpus are
read (what the package may ship a setting derived from): the CC-BY-SA Schema-Guided Dialogue rows
(`sgd*`) are left out. Each group of sources becomes a catalog of its distinct tools, and each
query (rows grouped by `qid`) a labelled query of its gold tools. Two settings per group:

* full: the group's whole catalog (26 to 2,600 tools);
* small: each query against a catalog of 30 tools, the tools of its gold tools' servers and random
  others of the group (fixed seed): what a person with a few servers has, where one incidental
  word or a normalisation by the best of a few tools decides the ranking.

It prints R@1, R@5 (whole catalog: several gold tools for a multi-step query) and MRR per group and
their mean over groups. `--set` changes one setting for the
run: `fields.<name>` of BM25's `FieldWeights`, `fusion.<name>` of `FusionWeights`,
`synonym_weight` and `synonym_max_terms` (`toolscout.search.text`). With PYTHONPATH at an
older checkout's `src` it measures that code (without `--set`).

`--against KEY=VALUE` (fusion and field settings; repeatable) also runs the search with those
settings instead and prints the paired difference (this run minus that one) of full R@5 and MRR per
group and over the multi-tool queries of every group pooled, with 95% bootstrap intervals: a setting
validated on the corpus's own long, multi-step requests rather than on the dev tasks.
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from benchmarks import harness, train_data
from toolscout.catalog import CatalogTool
from toolscout.search import HybridBackend, SearchBackend, bm25, make_backend
from toolscout.search.evaluation import LabelledQuery, Report, bootstrap_interval, evaluate

# The noisy-labelled APIBench (many models do one job) is left out of these averages.
GROUPS = {name: prefixes for name, prefixes in train_data.GROUPS.items() if name != "gorilla_apibench"}
SMALL = 30


def load_groups(
    train_dir: Path, max_queries: int, validation: bool = False
) -> dict[str, tuple[list[CatalogTool], list[LabelledQuery]]]:
    """Each group's catalog and (up to `max_queries`, shuffled with a fixed seed) labelled queries.

    `validation`: only the validation split's queries (`train_data.is_validation`; the held-out
    group whole), against the same whole catalogs.
    """
    pairs = train_data.load_pairs(train_dir, GROUPS)
    return {
        group: train_data.catalog_and_queries(
            [
                p
                for p in pairs
                if p.group == group
                and (not validation or group == train_data.HELD_OUT or train_data.is_validation(p.qid))
            ],
            [p for p in pairs if p.group == group],
            max_queries=max_queries,
        )
        for group in GROUPS
    }


def small_catalog(
    tools: list[CatalogTool], by_server: dict[str, list[CatalogTool]], query: LabelledQuery, rng: random.Random
) -> list[CatalogTool]:
    """The query's gold servers' tools (gold first if they are too many) and random others: SMALL in all."""
    own = [t for server in sorted({s for s, _ in query.relevant}) for t in by_server[server]]
    if len(own) > SMALL:
        gold = [t for t in own if (t.server, t.name) in query.relevant]
        rest = [t for t in own if (t.server, t.name) not in query.relevant]
        own = gold + rng.sample(rest, max(0, SMALL - len(gold)))
    have = {(t.server, t.name) for t in own}
    others = [t for t in rng.sample(tools, min(len(tools), SMALL * 2)) if (t.server, t.name) not in have]
    catalog = own + others[: max(0, SMALL - len(own))]
    rng.shuffle(catalog)
    return catalog


def measure_small(
    make: Callable[[], SearchBackend], tools: list[CatalogTool], queries: list[LabelledQuery]
) -> tuple[float, float]:
    """R@1 and MRR of every query against its own small catalog."""
    rng = random.Random(0)
    by_server: dict[str, list[CatalogTool]] = defaultdict(list)
    for tool in tools:
        by_server[tool.server].append(tool)
    backend = make()
    r1: list[float] = []
    rr: list[float] = []
    for query in queries:
        catalog = small_catalog(tools, by_server, query, rng)
        backend.rebuild(catalog)
        hits = backend.search(query.text, limit=len(catalog))
        found = [i for i, h in enumerate(hits) if (h.tool.server, h.tool.name) in query.relevant]
        r1.append(sum(1 for i in found if i < 1) / len(query.relevant))
        rr.append(1 / (found[0] + 1) if found else 0.0)
    return statistics.fmean(r1), statistics.fmean(rr)


def backend_factory(name: str, settings: list[str]) -> Callable[[], SearchBackend]:
    fields: dict[str, int] = {}
    fusion: dict[str, float] = {}
    for setting in settings:
        key, _, value = setting.partition("=")
        if key.startswith("fields."):
            fields[key.removeprefix("fields.")] = int(value)
        elif key.startswith("fusion."):
            fusion[key.removeprefix("fusion.")] = float(value)
        elif key == "synonym_weight":
            # Read by BM25Backend.scores at each search: the module's constant is the setting.
            bm25.SYNONYM_WEIGHT = float(value)
        elif key == "synonym_max_terms":
            from toolscout.search import text as expansion  # imported here: the script also measures older code

            expansion.SYNONYM_MAX_TERMS = int(value)
        else:
            raise SystemExit(f"unknown setting {key!r}: fields.<name>, fusion.<name> or synonym_weight")

    def make() -> SearchBackend:
        backend = make_backend(name, use_cache=False)
        lexical = backend.lexical if isinstance(backend, HybridBackend) else backend
        if fields and isinstance(lexical, bm25.BM25Backend):
            lexical.weights = replace(lexical.weights, **fields)
        if fusion and isinstance(backend, HybridBackend):
            backend.weights = replace(backend.weights, **fusion)
        return backend

    return make


def _paired(ours: Sequence[float], theirs: Sequence[float]) -> str:
    """The mean paired difference and its 95% bootstrap interval."""
    differences = [a - b for a, b in zip(ours, theirs, strict=True)]
    low, high = bootstrap_interval(differences)
    return f"{statistics.fmean(differences):+.3f} ({low:+.3f}…{high:+.3f})" if differences else "n/a"


def print_paired(runs: list[tuple[str, list[LabelledQuery], Report, Report]], against: list[str]) -> None:
    """Per group and pooled over the multi-tool queries: this run minus the `against` run."""
    print(f"\nPaired difference against {' '.join(against)} (this run minus that one), 95% bootstrap intervals:\n")
    print("| group | queries | full R@5 | full MRR |")
    print("|---|---|---|---|")
    pooled: dict[str, tuple[list[float], list[float]]] = {"recall_5": ([], []), "mrr": ([], [])}
    multi = 0
    for group, queries, ours, theirs in runs:
        r5 = _paired(ours.per_query["recall_5"], theirs.per_query["recall_5"])
        mrr = _paired(ours.per_query["mrr"], theirs.per_query["mrr"])
        print(f"| {group} | {len(queries)} | {r5} | {mrr} |")
        for i, query in enumerate(queries):
            if len(query.relevant) > 1:
                multi += 1
                for metric, (a, b) in pooled.items():
                    a.append(ours.per_query[metric][i])
                    b.append(theirs.per_query[metric][i])
    print(f"| multi-tool queries, pooled | {multi} | {_paired(*pooled['recall_5'])} | {_paired(*pooled['mrr'])} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--train-dir", type=Path, default=train_data.DEFAULT_TRAIN_DIR)
    parser.add_argument("--queries", type=int, default=400, help="Queries per group (shuffled, fixed seed).")
    parser.add_argument("--backend", default="hybrid")
    parser.add_argument(
        "--validation", action="store_true", help="Only the validation split's queries (what the ranker never fits)."
    )
    parser.add_argument("--set", action="append", default=[], dest="settings", metavar="KEY=VALUE")
    parser.add_argument(
        "--against", action="append", default=[], metavar="KEY=VALUE", help="Compare, paired, with these settings."
    )
    args = parser.parse_args()
    if any(not s.startswith(("fusion.", "fields.")) for s in args.against):
        raise SystemExit("--against takes fusion.<name> and fields.<name> settings only")
    if args.against and any(s.startswith("synonym") for s in args.settings):
        # The synonym settings are module-wide: they would change the `--against` side too.
        raise SystemExit("--set synonym_* cannot be compared with --against: it applies to both sides")
    make = backend_factory(args.backend, args.settings)
    other = backend_factory(args.backend, args.against) if args.against else None
    runs: list[tuple[str, list[LabelledQuery], Report, Report]] = []
    watch = harness.Stopwatch()
    full: list[tuple[float, float, float]] = []
    small: list[tuple[float, float]] = []
    print("| group | tools | queries | full R@1 | full R@5 | full MRR | small R@1 | small MRR |")
    print("|---|---|---|---|---|---|---|---|")
    for group, (tools, queries) in load_groups(args.train_dir, args.queries, args.validation).items():
        report = evaluate(make(), tools, queries)
        if other is not None:
            runs.append((group, queries, report, evaluate(other(), tools, queries)))
        full.append((report.recall_1, report.recall_5, report.mrr))
        small.append(measure_small(make, tools, queries))
        print(
            f"| {group} | {len(tools)} | {len(queries)} | {full[-1][0]:.3f} | {full[-1][1]:.3f} | {full[-1][2]:.3f} "
            f"| {small[-1][0]:.3f} | {small[-1][1]:.3f} |",
            flush=True,
        )
    means = [statistics.fmean(f[i] for f in full) for i in range(3)]
    harness.record("full catalog, mean over the groups", dict(zip(("recall_1", "recall_5", "mrr"), means, strict=True)))
    print(
        f"| mean | | | {' | '.join(f'{statistics.fmean(f[i] for f in full):.3f}' for i in range(3))} "
        f"| {statistics.fmean(s[0] for s in small):.3f} | {statistics.fmean(s[1] for s in small):.3f} |"
    )
    print(f"({args.backend}{''.join(' --set ' + s for s in args.settings)}; {watch.seconds:.0f} s)")
    if runs:
        print_paired(runs, args.against)
