"""Tools' documents expanded with words learned from the training pairs: measured, not shipped.

    python -m benchmarks search_expansion [--eval-dir ../shared/eval] [--words 8] [--support 3]

Issue 36 asked for each tool's indexed text to be enriched offline with "expansions learned from the
training pairs". This measures the classic form of it (a translation table, as in document
expansion): from the training split of `../shared/train` (MIT and Apache-2.0 sources, the held-out
group and the validation split left out), count which query words go with which words of a tool's
own text (its name, description and parameters) when the tool does not contain them. Each tool's
queries count as one (the share of them holding the word), so a tool with 150 queries weighs as
much as a tool with one. A pair (tool word, query word) is kept when at least `--support` tools
show it, the query word comes with the tool word at least `--lift` times as often as with tools
in general, and it is in at least `--min-share` of the tool word's tools. Query words found in more
than `--common` of all tools' queries ("please", "need") are never added. A tool's expansion is the
`--words` query words best supported by its own words; they are appended once to its BM25
document, and the hybrid search ranks as shipped otherwise.

Printed: each dev set, the held-out group and the validation split, the shipped search against
the same with the expansion, paired differences with 95% bootstrap intervals; and the expansions
of a few tools, to read what was learned.
"""

from __future__ import annotations

import argparse
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from pathlib import Path

from benchmarks import harness, train_data
from benchmarks.search import DEFAULT_EVAL_DIR, datasets
from toolscout.catalog import CatalogTool
from toolscout.search import bm25, make_backend
from toolscout.search.bm25 import FieldWeights
from toolscout.search.evaluation import LabelledQuery, Report, bootstrap_interval, evaluate
from toolscout.search.text import terms

Table = dict[str, list[tuple[float, str]]]


def _tool_terms(tool: CatalogTool) -> set[str]:
    text = " ".join((tool.name, tool.title or "", tool.description, bm25.parameter_text(tool.input_schema)))
    return set(terms(text))


def learn(pairs: Sequence[train_data.Pair], *, support: int, lift: float, min_share: float, common: float) -> Table:
    """Tool word -> the query words that go with it, best first (score: share times log lift)."""
    queries: dict[str, list[set[str]]] = defaultdict(list)
    tools: dict[str, CatalogTool] = {}
    for pair in pairs:
        queries[pair.tool_id].append({t for t in terms(pair.query) if len(t) >= 3 and t.isalpha()})
        tools[pair.tool_id] = pair.tool
    shares: dict[str, dict[str, float]] = {}
    overall: defaultdict[str, float] = defaultdict(float)
    for tool_id, sets in queries.items():
        shares[tool_id] = share = defaultdict[str, float](float)
        for words in sets:
            for word in words:
                share[word] += 1 / len(sets)
        for word, value in share.items():
            overall[word] += value
    count = len(shares)
    too_common = {w for w, v in overall.items() if v / count > common}
    together: defaultdict[str, defaultdict[str, float]] = defaultdict(lambda: defaultdict(float))
    tools_with: dict[str, Counter[str]] = defaultdict(Counter)
    having: Counter[str] = Counter()
    for tool_id, tool_shares in shares.items():
        own = _tool_terms(tools[tool_id])
        for word in own:
            having[word] += 1
            for query_word, value in tool_shares.items():
                if query_word not in own and query_word not in too_common:
                    together[word][query_word] += value
                    tools_with[word][query_word] += 1
    table: Table = {}
    for word, found in together.items():
        if having[word] < support:
            continue
        best: list[tuple[float, str]] = []
        for query_word, value in found.items():
            if tools_with[word][query_word] < support:
                continue
            part = value / having[word]
            ratio = part / (overall[query_word] / count)
            if ratio > lift and part > min_share:
                best.append((part * math.log(ratio), query_word))
        if best:
            table[word] = sorted(best, reverse=True)[:10]
    return table


def expansion(table: Table, tool: CatalogTool, words: int) -> list[str]:
    """The `words` query words a tool's own words call for most, none it already has."""
    own = _tool_terms(tool)
    score: defaultdict[str, float] = defaultdict(float)
    for word in own:
        for value, query_word in table.get(word, ()):
            if query_word not in own:
                score[query_word] += value
    return [w for w, _ in sorted(score.items(), key=lambda item: -item[1])[:words]]


@contextmanager
def expanded(table: Table, words: int) -> Generator[None]:
    """BM25 documents with each tool's expansion appended, while the block runs."""
    original = bm25.document_terms

    def with_expansion(
        tool: CatalogTool, weights: FieldWeights, context: str = "", tokenize: Callable[[str], list[str]] = terms
    ) -> list[str]:
        return [*original(tool, weights, context, tokenize), *expansion(table, tool, words)]

    bm25.document_terms = with_expansion
    try:
        yield
    finally:
        bm25.document_terms = original


def _paired(before: Report, after: Report, metric: str) -> str:
    diffs = [b - a for a, b in zip(before.per_query[metric], after.per_query[metric], strict=True)]
    low, high = bootstrap_interval(diffs)
    return (
        f"{getattr(before, metric):.3f} → {getattr(after, metric):.3f} "
        f"({sum(diffs) / len(diffs):+.3f}, {low:+.3f}…{high:+.3f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    parser.add_argument("--words", type=int, default=8)
    parser.add_argument("--support", type=int, default=3)
    parser.add_argument("--lift", type=float, default=3.0)
    parser.add_argument("--min-share", type=float, default=0.15)
    parser.add_argument("--common", type=float, default=0.02)
    parser.add_argument("--validation-queries", type=int, default=1500)
    args = parser.parse_args()
    train, validation, _ = train_data.split(train_data.load_pairs())
    table = learn(train, support=args.support, lift=args.lift, min_share=args.min_share, common=args.common)
    sets: dict[str, tuple[list[CatalogTool], list[LabelledQuery], dict[str, str]]] = dict(
        datasets(args.eval_dir, train_data.DEFAULT_TRAIN_DIR)
    )
    tools, queries = train_data.catalog_and_queries(validation, max_queries=args.validation_queries)
    sets["train validation split"] = (tools, queries, {})
    print(harness.machine_line())
    print(
        f"\nExpansion: {args.words} words a tool, support {args.support} tools, lift > {args.lift}, "
        f"share > {args.min_share}, query words in more than {args.common:.0%} of tools' queries never added; "
        f"{len(table):,} tool words with expansions, learned from {len(train):,} training pairs.\n"
    )
    print("| set | queries | R@5: shipped → expanded (difference, 95% interval) | MRR: shipped → expanded |")
    print("|---|---|---|---|")
    for name, (tools, queries, servers) in sets.items():
        shipped = evaluate(make_backend("hybrid"), tools, queries, servers=servers or None)
        with expanded(table, args.words):
            learned = evaluate(make_backend("hybrid"), tools, queries, servers=servers or None)
        recall, mrr = _paired(shipped, learned, "recall_5"), _paired(shipped, learned, "mrr")
        print(f"| {name} | {len(queries):,} | {recall} | {mrr} |")
    print("\nWhat was learned, for the first tools of the MetaTool catalog:\n")
    for tool in sets["metatool"][0][:6]:
        print(f"- `{tool.name}`: {', '.join(expansion(table, tool, args.words)) or '(nothing)'}")


if __name__ == "__main__":
    main()
