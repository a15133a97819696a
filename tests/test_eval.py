"""`toolscout eval` and the metrics behind it, on small labelled files whose scores can be worked out by hand."""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from tests.helpers.paths import PYTHON
from toolscout.catalog import CatalogTool
from toolscout.errors import ConfigurationError
from toolscout.search import SearchHit
from toolscout.search.evaluation import (
    LabelledQuery,
    bootstrap_interval,
    evaluate,
    load_catalog_file,
    load_queries_file,
    load_servers_file,
    ratio_interval,
    servers_beside,
)

FIXTURES = Path(__file__).parent / "fixtures" / "eval"


class FixedRanking:
    """A search backend that ranks the catalog in one given order, whatever the query."""

    def __init__(self, order: list[str]) -> None:
        self.order = order
        self.tools: list[CatalogTool] = []

    def rebuild(self, tools: Sequence[CatalogTool], servers: Mapping[str, str] | None = None) -> None:
        self.tools = list(tools)

    def search(self, query: str, *, server: str | None = None, limit: int = 10) -> list[SearchHit]:
        by_name = {t.name: t for t in self.tools}
        return [SearchHit(by_name[name], 1.0) for name in self.order][:limit]


def test_metrics_follow_the_eval_readme_definitions() -> None:
    tools = load_catalog_file(FIXTURES / "catalog.jsonl")
    backend = FixedRanking(["forecast", "read_file", "convert_units", "write_file", "create_issue"])
    queries = [
        LabelledQuery("a", frozenset({("fs", "read_file")})),  # rank 2
        LabelledQuery("b", frozenset({("fs", "write_file"), ("github", "create_issue")})),  # ranks 4 and 5
        LabelledQuery("c", frozenset({("weather", "forecast")})),  # rank 1
    ]
    report = evaluate(backend, tools, queries)
    assert report.recall_1 == pytest.approx((0 + 0 + 1) / 3)
    assert report.recall_5 == pytest.approx(1.0)
    assert report.hit_1 == pytest.approx(1 / 3)
    assert report.hit_5 == pytest.approx(1.0)
    assert report.mrr == pytest.approx((1 / 2 + 1 / 4 + 1) / 3)
    ndcg_b = (1 / math.log2(5) + 1 / math.log2(6)) / (1 + 1 / math.log2(3))
    assert report.ndcg_10 == pytest.approx((1 / math.log2(3) + ndcg_b + 1) / 3)
    assert (report.tools, report.queries) == (5, 3)
    assert 0 <= report.p50_ms <= report.p95_ms <= report.max_ms
    # Every query's own figures, for intervals and paired comparisons; the JSON report stays the means.
    assert report.per_query["mrr"] == pytest.approx((1 / 2, 1 / 4, 1.0))
    assert report.per_query["recall_5"] == (1.0, 1.0, 1.0)
    assert [[hit for _, hit in top] for top in report.top_hits] == [
        [False, True, False, False, False],
        [False, False, False, True, True],
        [True, False, False, False, False],
    ]
    assert set(report.as_json()) == {
        "tools", "queries", "recall_1", "recall_5", "hit_1", "hit_5", "ndcg_10", "mrr",
        "p50_ms", "p95_ms", "max_ms", "build_s",
    }  # fmt: skip


def test_bootstrap_intervals_hold_the_mean_and_narrow_with_more_queries() -> None:
    few = [0.0, 1.0] * 10
    many = [0.0, 1.0] * 1000
    low, high = bootstrap_interval(few)
    assert low < 0.5 < high
    wide, narrow = high - low, bootstrap_interval(many)[1] - bootstrap_interval(many)[0]
    assert 0 < narrow < wide / 5
    assert bootstrap_interval([0.3] * 50) == pytest.approx((0.3, 0.3))
    assert bootstrap_interval(few) == bootstrap_interval(few)  # seeded: the same figures every run


def test_a_pooled_ratio_weighs_each_query_by_its_denominator() -> None:
    # 3 of 4 from one query and 0 of 1 from another: 3/5 pooled, not the mean of 0.75 and 0.
    ratio, low, high = ratio_interval([3, 0] * 20, [4, 1] * 20)
    assert ratio == pytest.approx(0.6)
    assert low < 0.6 < high
    assert ratio_interval([2] * 30, [2] * 30) == pytest.approx((1.0, 1.0, 1.0))
    assert ratio_interval([], []) == (0.0, 0.0, 0.0)


def test_recall_at_5_counts_the_share_of_relevant_tools() -> None:
    tools = load_catalog_file(FIXTURES / "catalog.jsonl")
    backend = FixedRanking(["read_file", "forecast", "convert_units", "write_file", "create_issue"])
    report = evaluate(backend, tools, [LabelledQuery("q", frozenset({("fs", "read_file"), ("fs", "missing")}))])
    assert report.recall_5 == pytest.approx(0.5)
    assert report.hit_5 == 1.0


def test_bad_files_are_reported_with_where_and_what() -> None:
    with pytest.raises(ConfigurationError, match=r"broken.jsonl: line 2, column \d+: not JSON"):
        load_catalog_file(FIXTURES / "broken.jsonl")
    tools = load_catalog_file(FIXTURES / "catalog.jsonl")
    with pytest.raises(ConfigurationError, match=r"bad-label.jsonl: line 2: fs/delete_file is not in the catalog"):
        load_queries_file(FIXTURES / "bad-label.jsonl", tools)
    with pytest.raises(ConfigurationError, match="Cannot read the catalog file"):
        load_catalog_file(FIXTURES / "nope.jsonl")


def _eval(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "toolscout", "eval", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_eval_command_prints_every_metric_and_json(tmp_path: Path) -> None:
    files = ["--catalog", str(FIXTURES / "catalog.jsonl"), "--queries", str(FIXTURES / "queries.jsonl")]
    done = _eval(*files, "--backend", "bm25", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    # By hand: q1 and q2 are found at rank 1, q3 matches nothing, q4 finds both of its tools in
    # the top 2 (one of them first).
    assert data["recall_1"] == pytest.approx(0.625)
    for key in ("recall_5", "hit_1", "hit_5", "ndcg_10", "mrr"):
        assert data[key] == pytest.approx(0.75), key
    assert data["tools"] == 5 and data["queries"] == 4 and data["backend"] == "bm25"

    human = _eval(*files)
    assert human.returncode == 0, human.stderr
    for column in ("R@1", "R@5", "Hit@1", "Hit@5", "nDCG@10", "MRR", "p50 ms", "p95 ms", "max ms"):
        assert column in human.stdout
    assert "hybrid (static) search" in human.stdout


def test_eval_command_exit_codes() -> None:
    catalog = str(FIXTURES / "catalog.jsonl")
    bad = _eval("--catalog", catalog, "--queries", str(FIXTURES / "bad-label.jsonl"))
    assert bad.returncode == 2 and "delete_file is not in the catalog" in bad.stderr
    assert "Traceback" not in bad.stderr
    unknown = _eval("--catalog", catalog, "--queries", str(FIXTURES / "queries.jsonl"), "--backend", "magic")
    assert unknown.returncode == 1 and "hybrid, bm25, dense" in unknown.stderr
    assert _eval("--catalog", catalog).returncode == 1  # --queries is required


class RecordsContext(FixedRanking):
    """Ranks in a fixed order and keeps the server context it was indexed with."""

    def __init__(self, order: list[str]) -> None:
        super().__init__(order)
        self.context: Mapping[str, str] | None = None

    def rebuild(self, tools: Sequence[CatalogTool], servers: Mapping[str, str] | None = None) -> None:
        super().rebuild(tools)
        self.context = servers


def _files_with_servers(tmp_path: Path, servers: str) -> tuple[Path, Path]:
    catalog = tmp_path / "catalog_demo.jsonl"
    catalog.write_text((FIXTURES / "catalog.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "servers_demo.jsonl").write_text(servers, encoding="utf-8")
    return catalog, FIXTURES / "queries.jsonl"


def test_server_descriptions_are_indexed_as_the_gateway_does(tmp_path: Path) -> None:
    servers = '{"server": "fs", "description": "Files on disk", "category": "x"}\n{"server": "web"}\n'
    catalog, _ = _files_with_servers(tmp_path, servers)
    context = load_servers_file(tmp_path / "servers_demo.jsonl")
    assert context == {"fs": "Files on disk", "web": ""}
    assert servers_beside(catalog) == tmp_path / "servers_demo.jsonl"
    assert servers_beside(FIXTURES / "catalog.jsonl") is None  # not named catalog_<name>.jsonl
    tools = load_catalog_file(catalog)
    backend = RecordsContext([t.name for t in tools])
    evaluate(backend, tools, [LabelledQuery("read a file", frozenset({("fs", "read_file")}))], servers=context)
    assert backend.context == context


def test_eval_command_reads_the_servers_file_beside_the_catalog(tmp_path: Path) -> None:
    catalog, queries = _files_with_servers(tmp_path, '{"server": "fs", "description": "Files on disk"}\n')
    found = _eval("--catalog", str(catalog), "--queries", str(queries), "--backend", "bm25", "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["servers"] == str(tmp_path / "servers_demo.jsonl")
    off = _eval("--catalog", str(catalog), "--queries", str(queries), "--backend", "bm25", "--json", "--no-servers")
    assert off.returncode == 0 and json.loads(off.stdout)["servers"] is None
    human = _eval("--catalog", str(catalog), "--queries", str(queries), "--backend", "bm25")
    assert "server descriptions from" in human.stdout and "(1 servers)" in human.stdout

    (tmp_path / "servers_demo.jsonl").write_text('{"server": "fs"}\n{"description": "no name"}\n', encoding="utf-8")
    bad = _eval("--catalog", str(catalog), "--queries", str(queries))
    assert bad.returncode == 2 and 'servers_demo.jsonl: line 2: needs a string "server"' in bad.stderr
    assert "Traceback" not in bad.stderr
