"""The learned ranker: its features, its file (and the errors of a broken one), and the hybrid search it drives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types as types
import numpy as np
import pytest

from toolscout.catalog import Catalog, CatalogTool
from toolscout.search.hybrid import FusionWeights, HybridBackend
from toolscout.search.ranker import (
    DENSE,
    LEXICAL,
    RANKER_FILE,
    RankerError,
    ServerIndex,
    by_best,
    load_rankers,
    names_of,
    packaged_rankers,
)


def _tools() -> list[CatalogTool]:
    catalog = Catalog()

    def tool(name: str, description: str) -> types.Tool:
        return types.Tool(name=name, description=description, input_schema={"type": "object"})

    catalog.set_server_tools(
        "github",
        [
            tool("create_issue", "Create a new issue in a GitHub repository."),
            tool("list_pull_requests", "List pull requests of a repository."),
        ],
    )
    catalog.set_server_tools(
        "fs",
        [
            tool("read_file", "Read the complete contents of a file."),
            tool("write_file", "Create or overwrite a file."),
            tool("delete_file", "Delete a file."),
        ],
    )
    catalog.set_server_tools("weather", [tool("forecast", "Weather forecast for a city, by day.")])
    return catalog.tools()


def _features(backend: HybridBackend, query: str) -> dict[str, dict[str, float]]:
    signals, _ = backend.signals(query)
    picked, matrix = backend.candidate_features(signals)
    names = names_of(signals.dense is not None)
    tools: list[CatalogTool] = backend._tools  # pyright: ignore[reportPrivateUsage]
    rows: list[list[float]] = matrix.tolist()
    indexes: list[int] = picked.tolist()
    return {tools[i].name: dict(zip(names, row, strict=True)) for i, row in zip(indexes, rows, strict=True)}


def test_lexical_features_say_what_matched() -> None:
    backend = HybridBackend(None, FusionWeights(learned=True))
    backend.rebuild(_tools())
    found = _features(backend, "read the contents of a file")
    assert found["read_file"]["lex_rel"] == 1.0 and found["read_file"]["lex_rr"] == 1.0
    assert found["read_file"]["coverage"] == 1.0
    assert found["forecast"]["lex_rel"] == 0.0 and found["forecast"]["lex_rr"] == 0.0
    # Server features: fs's tools share their server's best match and its size.
    assert found["delete_file"]["server_lex_max"] == 1.0
    assert found["delete_file"]["server_size"] == pytest.approx(np.log1p(3))
    assert found["forecast"]["server_lex_max"] == 0.0
    # No steps in a short query; the name feature is the NameMatcher's.
    assert found["read_file"]["steps"] == 0.0 and found["read_file"]["step_lex_max"] == 0.0
    assert _features(backend, "read_file")["read_file"]["name"] == 1.0


def test_step_features_see_every_step() -> None:
    backend = HybridBackend(None, FusionWeights(learned=True))
    backend.rebuild(_tools())
    task = "Read the complete contents of the report file. Then open a new issue in the GitHub repository about it."
    found = _features(backend, task)
    assert found["read_file"]["steps"] == pytest.approx(np.log1p(2))
    # Each step's best tool has reciprocal rank 1 in its step, whatever the whole task ranks it.
    assert found["read_file"]["step_lex_rr"] == 1.0
    assert found["create_issue"]["step_lex_rr"] == 1.0
    assert found["forecast"]["step_lex_max"] == 0.0


def test_server_documents_take_the_servers_context() -> None:
    tools = _tools()
    plain = ServerIndex.build(tools, None)
    told = ServerIndex.build(tools, {"weather": "Meteorology: rain, temperature and wind."})
    assert float(plain.lexical("meteorology").max()) == 0.0
    scores = told.lexical("meteorology")
    assert told.documents[int(np.argmax(scores))].startswith("weather")
    values = np.arange(len(tools), dtype=np.float32)
    assert told.max(values).tolist() == [1.0, 4.0, 5.0]  # github: tools 0-1, fs: 2-4, weather: 5
    assert told.mean(values).tolist() == [0.5, 3.0, 5.0]


def test_by_best_keeps_weak_cosines_weak() -> None:
    assert by_best(np.array([0.1, 0.2], dtype=np.float32), 0.4).tolist() == pytest.approx([0.25, 0.5])
    assert by_best(np.array([0.0, 0.0], dtype=np.float32)).tolist() == [0.0, 0.0]


def _spec(names: tuple[str, ...]) -> dict[str, Any]:
    n = len(names)
    return {
        "features": list(names),
        "mean": [0.0] * n,
        "scale": [1.0] * n,
        "weights": [1.0] + [0.0] * (n - 1),
        "bias": 0.0,
        "slope": 1.0,
        "intercept": 0.0,
    }


def _write(tmp_path: Path, models: dict[str, Any]) -> Path:
    path = tmp_path / "ranker.json"
    path.write_text(json.dumps({"models": models}), encoding="utf-8")
    return path


def test_a_ranker_file_loads_and_scores_deterministically(tmp_path: Path) -> None:
    lexical = _spec(LEXICAL)
    lexical["hidden"] = [[0.5, -0.5]] + [[0.0, 0.0]] * (len(LEXICAL) - 1)
    lexical["hidden_bias"] = [0.0, 0.0]
    lexical["output"] = [1.0, 1.0]
    rankers = load_rankers(_write(tmp_path, {"lexical": lexical, "static": _spec(LEXICAL + DENSE)}))
    ranker = rankers["lexical"]
    x = np.zeros((2, len(LEXICAL)), dtype=np.float32)
    x[:, 0] = [2.0, -2.0]
    # linear 2 + relu(1) + relu(-1) = 3; linear -2 + relu(-1) + relu(1) = -1
    assert ranker.score(x).tolist() == [3.0, -1.0]
    assert ranker.relevance(np.array([0.0], dtype=np.float32)).tolist() == [0.5]
    assert np.array_equal(ranker.score(x), ranker.score(x.copy()))


BROKEN: list[tuple[str, Any, str]] = [
    ("features", ["lex_rel"], "are not the ones this version computes"),
    ("scale", [0.0] * len(LEXICAL), "'scale' must be positive"),
    ("weights", [1.0], "'weights' must be"),
    ("slope", None, "needs numbers"),
    ("slope", -1.0, "'slope' must be positive"),
    ("lexical", None, "no 'lexical' model"),
]


@pytest.mark.parametrize(("key", "value", "message"), BROKEN)
def test_a_broken_ranker_file_says_what_is_wrong(tmp_path: Path, key: str, value: Any, message: str) -> None:
    models: dict[str, Any] = {"lexical": _spec(LEXICAL), "static": _spec(LEXICAL + DENSE)}
    if key == "lexical":
        del models["lexical"]
    else:
        models["lexical"][key] = value
    with pytest.raises(RankerError, match=message):
        load_rankers(_write(tmp_path, models))
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(RankerError, match="cannot read the ranker"):
        load_rankers(tmp_path / "bad.json")


def test_the_packaged_ranker_loads_and_drives_the_hybrid_search() -> None:
    assert RANKER_FILE.is_file()
    rankers = packaged_rankers()
    assert {"lexical", "static"} <= set(rankers)
    backend = HybridBackend(None, FusionWeights(learned=True))
    assert backend.ranker is rankers["lexical"]
    backend.rebuild(_tools())
    hits = backend.search("read the contents of a file", limit=10)
    assert hits[0].tool.name == "read_file"
    assert all(0.0 <= h.relevance <= 1.0 for h in hits)
    assert [h.relevance for h in hits] == sorted((h.relevance for h in hits), reverse=True)
    # Names first; nothing matching gives nothing.
    assert backend.search("delete_file")[0].tool.name == "delete_file"
    assert backend.search("zebra migration patterns") == []


def test_without_a_ranker_the_hand_fusion_ranks() -> None:
    hand = HybridBackend(None, FusionWeights(learned=False))
    assert hand.ranker is None and HybridBackend(None).ranker is None  # the default, for now
    hand.rebuild(_tools())
    assert hand.search("read the contents of a file")[0].tool.name == "read_file"
