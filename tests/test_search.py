"""BM25 search over the catalog: terms, ranking, filters."""

from __future__ import annotations

import mcp_types as types

from toolscout.catalog import Catalog, summarize
from toolscout.search import BM25Backend
from toolscout.search.text import split_identifier, terms


def _tool(name: str, description: str) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema={"type": "object"})


def _backend() -> BM25Backend:
    catalog = Catalog()
    catalog.set_server_tools(
        "github",
        [
            _tool("create_issue", "Create a new issue in a GitHub repository."),
            _tool("listPullRequests", "List pull requests of a repository."),
        ],
    )
    catalog.set_server_tools(
        "fs",
        [
            _tool("read_file", "Read the complete contents of a file."),
            _tool("write_file", "Create or overwrite a file."),
        ],
    )
    backend = BM25Backend()
    backend.rebuild(catalog.tools())
    return backend


def test_identifiers_split_on_case_and_separators() -> None:
    assert split_identifier("listPullRequests") == ["list", "pull", "requests"]
    assert split_identifier("get-user.v2_by_ID") == ["get", "user", "v", "2", "by", "id"]
    assert split_identifier("HTTPServer") == ["http", "server"]


def test_terms_drop_stopwords_and_split_cjk() -> None:
    assert terms("Read the file of a user") == ["read", "file", "user"]
    assert terms("读取文件") == ["读", "取", "文", "件"]


def test_ranks_by_name_and_description() -> None:
    backend = _backend()
    hits = backend.search("open a pull request list")
    assert hits[0].tool.name == "listPullRequests"
    assert hits[0].relevance <= 1.0
    assert [h.tool.name for h in backend.search("read file contents")][:1] == ["read_file"]


def test_server_filter_and_limit() -> None:
    backend = _backend()
    assert {h.tool.server for h in backend.search("create", server="fs")} == {"fs"}
    assert len(backend.search("file", limit=1)) == 1
    assert backend.search("file", limit=0) == []


def test_server_name_is_searchable() -> None:
    assert _backend().search("github")[0].tool.server == "github"


def test_no_match_and_empty_index() -> None:
    assert _backend().search("quantum teleportation") == []
    empty = BM25Backend()
    empty.rebuild([])
    assert empty.search("anything") == []


def test_partial_match_reads_below_full_match() -> None:
    hits = _backend().search("read file zebra")
    assert hits[0].tool.name == "read_file"
    assert hits[0].relevance < 1.0


def test_summary_is_the_first_sentence() -> None:
    assert summarize("Read a file. Supports encodings.") == "Read a file."
    assert summarize("First line\nsecond line") == "First line"
    assert summarize(None) == ""
    assert summarize("x" * 300).endswith("…")
    assert len(summarize("x" * 300)) == 160
