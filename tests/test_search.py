"""BM25 search over the catalog: terms, ranking, filters."""

from __future__ import annotations

import mcp_types as types
import pytest

from toolscout.catalog import Catalog, CatalogTool, summarize
from toolscout.search import BM25Backend, bm25, make_backend
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


# --- stemming, names, steps, hybrid ---------------------------------------------------------------

from benchmarks.search import DEFAULT_EVAL_DIR  # noqa: E402

from toolscout.search.evaluation import load_catalog_servers  # noqa: E402
from toolscout.search.hybrid import HybridBackend, split_steps  # noqa: E402
from toolscout.search.text import NameMatcher  # noqa: E402

LIVEMCPBENCH = DEFAULT_EVAL_DIR / "catalog_livemcpbench.jsonl"


def _catalog_tools() -> list[CatalogTool]:
    catalog = Catalog()
    catalog.set_server_tools(
        "github",
        [
            _tool("create_issue", "Create a new issue in a GitHub repository."),
            _tool("listPullRequests", "List pull requests of a repository."),
            _tool("search", "Search code."),
        ],
    )
    catalog.set_server_tools(
        "fs",
        [
            _tool("read_file", "Read the complete contents of a file."),
            _tool("write_file", "Create or overwrite a file."),
            _tool("get_file_info", "Size, times and permissions of a path."),
        ],
    )
    catalog.set_server_tools("weather", [_tool("forecast", "Weather forecast for a city, by day.")])
    return catalog.tools()


def test_stemming_matches_other_word_forms() -> None:
    assert terms("converting files") == ["convert", "file"]
    backend = BM25Backend()
    backend.rebuild(_catalog_tools())
    assert backend.search("overwriting")[0].tool.name == "write_file"


def test_camel_case_words_also_count_whole() -> None:
    assert terms("GitHub") == ["git", "hub", "github"]
    backend = BM25Backend()
    backend.rebuild(_catalog_tools())
    assert backend.search("github issue")[0].tool.name == "create_issue"


def test_names_match_in_any_spelling_and_with_typos() -> None:
    matcher = NameMatcher()
    tools = _catalog_tools()
    matcher.rebuild(tools)
    by_name = {t.name: i for i, t in enumerate(tools)}
    for query in ("get_file_info", "get-file-info", "GetFileInfo", "please call get file info now", "fs/get_file_info"):
        assert matcher.scores(query)[by_name["get_file_info"]] == 1.0, query
    typo = matcher.scores("get_fiel_info")
    assert 0.8 < typo[by_name["get_file_info"]] < 1.0
    # A one-word name inside a sentence is a common word, not a name: no boost for github/search.
    assert matcher.scores("search the web for news")[by_name["search"]] == 0.0
    assert matcher.scores("search")[by_name["search"]] == 1.0
    # Naming a server lifts all its tools a little.
    lifted = matcher.scores("something on weather")
    assert 0 < lifted[by_name["forecast"]] < 1


def test_names_match_with_typos_only_while_fuzzy_names_is_on() -> None:
    tools = _catalog_tools()
    index = next(i for i, t in enumerate(tools) if t.name == "get_file_info")
    exact = NameMatcher(fuzzy=False)
    exact.rebuild(tools)
    assert exact.scores("get_fiel_info")[index] == 0.0
    assert exact.scores("GetFileInfo")[index] == 1.0  # an exact name in another spelling still counts
    # The setting reaches the backend from the config's `search.fuzzyNames`.
    off = make_backend("hybrid", use_cache=False, fuzzy_names=False)
    assert isinstance(off, HybridBackend) and off.names.fuzzy is False
    off.rebuild(tools)
    on = make_backend("hybrid", use_cache=False)
    on.rebuild(tools)
    with_typos, without = on.search("get_fiel_info"), off.search("get_fiel_info")
    assert with_typos[0].tool.name == "get_file_info" and with_typos[0].relevance >= 0.85
    assert not without or without[0].relevance < with_typos[0].relevance


def test_named_tool_goes_first_in_hybrid_search() -> None:
    backend = HybridBackend(None)
    backend.rebuild(_catalog_tools())
    hits = backend.search("get_fiel_info")
    assert hits[0].tool.name == "get_file_info"
    assert hits[0].relevance >= 0.85
    assert backend.search("read_file")[0].relevance == 1.0


# The public eval data is not part of the repository: it sits next to the checkout on the
# development machine, and TOOLSCOUT_EVAL_DIR points at it from anywhere else.
@pytest.mark.skipif(not LIVEMCPBENCH.is_file(), reason=f"no eval data at {LIVEMCPBENCH}; set TOOLSCOUT_EVAL_DIR")
def test_every_tool_is_found_first_by_its_exact_name() -> None:
    # Clients' own tool search misses exact names; toolscout must not, in any of the forms an agent
    # copies a name in. Namesakes on other servers may tie with it at the top.
    catalog = Catalog()
    for server, tools in load_catalog_servers(LIVEMCPBENCH).items():
        catalog.set_server_tools(server, list({t.name: t for t in tools}.values()))
    backend = make_backend("hybrid", use_cache=False)
    backend.rebuild(catalog.tools())
    missed: list[str] = []
    for entry in catalog.tools():
        for query in (entry.name, f"{entry.server}__{entry.name}", f"{entry.server}/{entry.name}"):
            hits = backend.search(query)
            top = [(h.tool.server, h.tool.name) for h in hits if h.relevance >= hits[0].relevance]
            if (entry.server, entry.name) not in top:
                missed.append(query)
    assert len(catalog.tools()) > 500 and missed == []


def test_enum_values_are_words_a_search_matches() -> None:
    mode = {"type": "string", "enum": ["eco", "turbo", "silent"], "description": "The mode to set."}
    catalog = Catalog()
    catalog.set_server_tools(
        "fan",
        [
            types.Tool(
                name="set_mode",
                description="Set the fan.",
                input_schema={"type": "object", "properties": {"mode": mode}},
            ),
            _tool("get_status", "Status of the fan: speed and temperature."),
        ],
    )
    backend = BM25Backend()
    backend.rebuild(catalog.tools())
    assert [h.tool.name for h in backend.search("switch the fan to turbo")][:1] == ["set_mode"]
    assert "turbo" in bm25.parameter_text({"properties": {"mode": mode}}).split()


def test_a_query_naming_server_and_tool_puts_that_servers_tool_first() -> None:
    catalog = Catalog()
    catalog.set_server_tools("files", [_tool("read_file", "Read a file of the sample folder.")])
    catalog.set_server_tools("filesystem", [_tool("read_file", "Read the complete contents of a file.")])
    catalog.set_server_tools("notes", [_tool("get_note", "Read one note.")])
    backend = HybridBackend(None)
    backend.rebuild(catalog.tools())
    for query in ("filesystem/read_file", "filesystem.read_file", "Filesystem ReadFile", "files/read_file"):
        hits = backend.search(query, limit=3)
        server = query.split("/")[0].split(".")[0].split()[0].lower()
        assert [h.tool.server for h in hits[:2]] == [server, "files" if server == "filesystem" else "filesystem"]
        assert hits[0].relevance == 1.0 and hits[1].relevance < 1.0, query
    # Without a server, both are named alike.
    assert [h.relevance for h in backend.search("read_file", limit=2)] == [1.0, 1.0]


def test_long_tasks_are_split_into_steps() -> None:
    assert split_steps("Read the config file. Then create an issue on GitHub about it.", 2) == [
        "Read the config file.",
        "create an issue on GitHub about it.",
    ]
    assert split_steps("read a file", 2) == []
    backend = HybridBackend(None)
    backend.rebuild(_catalog_tools())
    task = (
        "Look at the complete contents of the report file on disk; "
        "afterwards open a new issue in the repository describing the problem; "
        "finally tell me tomorrow's weather forecast for Paris."
    )
    top = [h.tool.name for h in backend.search(task, limit=5)]
    assert {"read_file", "create_issue", "forecast"} <= set(top)


def test_hybrid_relevance_is_in_range_and_ordered() -> None:
    backend = HybridBackend(None)
    backend.rebuild(_catalog_tools())
    hits = backend.search("create a file or an issue", limit=10)
    assert hits and all(0.0 <= h.relevance <= 1.0 for h in hits)
    assert [h.relevance for h in hits] == sorted((h.relevance for h in hits), reverse=True)
    assert {h.tool.server for h in backend.search("create", server="fs")} == {"fs"}


def test_a_rebuild_tokenizes_only_what_is_new_and_ranks_as_a_fresh_index(monkeypatch: pytest.MonkeyPatch) -> None:
    tokenized: list[str] = []

    def counted(text: str) -> list[str]:
        tokenized.append(text)
        return terms(text)

    monkeypatch.setattr(bm25, "terms", counted)
    catalog = Catalog()
    catalog.set_server_tools("fs", [_tool("read_file", "Read the complete contents of a file.")])
    context = {"fs": "Files on this machine.", "github": "Issues and pull requests."}
    backend = BM25Backend()
    backend.rebuild(catalog.tools(), context)
    assert "Read the complete contents of a file." in tokenized

    tokenized.clear()
    catalog.set_server_tools("github", [_tool("create_issue", "Create a new issue in a GitHub repository.")])
    backend.rebuild(catalog.tools(), context)
    assert "Read the complete contents of a file." not in tokenized  # unchanged since the last rebuild
    assert "Create a new issue in a GitHub repository." in tokenized

    fresh = BM25Backend()
    fresh.rebuild(catalog.tools(), context)
    for query in ("open an issue", "read a file", "github"):
        assert [(h.tool.name, h.relevance) for h in backend.search(query)] == [
            (h.tool.name, h.relevance) for h in fresh.search(query)
        ]


# --- query expansion, steps -----------------------------------------------------------------------

from toolscout.search.base import SearchHit, merge_steps  # noqa: E402
from toolscout.search.text import expand, implied_words, with_implied_words  # noqa: E402


def test_a_query_brings_in_the_other_verbs_of_its_action_and_what_it_implies() -> None:
    added = expand("add a note")
    assert added.terms == ("add", "note")
    assert {"creat", "new", "insert"} <= set(added.synonyms) and "add" not in added.synonyms
    assert "delet" in expand("remove the file").synonyms
    assert expand("weather in Paris").synonyms == ()  # no action word, nothing added
    # A long task has words enough: its verbs bring no synonyms.
    assert expand("read the report, add a summary of it to my notes and then send the result to Ada").synonyms == ()
    # The present: said or implied, it is "current", counted as a word of the query.
    for query in ("what time is it in Tokyo", "what's the date", "prices right now", "news today"):
        assert implied_words(query) == ["current"], query
        assert "current" in expand(query).terms, query
    assert implied_words("convert 3pm New York time to London time") == []
    assert with_implied_words("what time is it") == "what time is it (current)"
    assert with_implied_words("read a file") == "read a file"


def test_saving_to_a_path_implies_writing_a_file() -> None:
    for query in (
        "save it to ~/reports/q3.md",
        "write the list into notes.txt",
        "export the table as /tmp/out.csv",
        "then save the summary to a file named report.md",
    ):
        assert implied_words(query) == ["write file"], query
    for query in ("save the results", "store the key in the vault", "write to the database at db.example.com"):
        assert implied_words(query) == [], query
    # The step never says "file", yet its tool writes one: it is found beside the research tool.
    catalog = Catalog()
    catalog.set_server_tools(
        "tools",
        [
            _tool("research_topic", "Research a topic on the web and summarise what is known about it."),
            _tool("write_file", "Create a new file or overwrite an existing one with the given content."),
            _tool("get_weather", "Current weather for a city."),
        ],
    )
    backend = BM25Backend()
    backend.rebuild(catalog.tools())
    found = [h.tool.name for h in backend.search("research solar panels and save the summary to ~/reports/solar.md")]
    assert found[:2] == ["research_topic", "write_file"] or found[:2] == ["write_file", "research_topic"]


def test_reading_a_web_address_implies_fetching_a_page() -> None:
    for query in (
        "summarize the article at https://example.com/post",
        "read www.python.org/downloads and tell me the latest version",
        "what does https://example.com/changelog say about 2.0",
        "extract the text from https://example.com/page",
    ):
        assert implied_words(query) == ["fetch web page"], query
    # An address handed to a tool as its argument implies nothing.
    for query in ("shorten https://example.com/a/long/path", "get the whois record for www.baidu.com"):
        assert implied_words(query) == [], query
    catalog = Catalog()
    catalog.set_server_tools(
        "tools",
        [
            _tool("fetch", "Fetches a URL from the internet and extracts its contents as markdown."),
            _tool("summarize_text", "Summarize a piece of text in a few sentences."),
            _tool("shorten_url", "Shorten a long URL."),
            _tool("get_weather", "Current weather for a city."),
        ],
    )
    backend = BM25Backend()
    backend.rebuild(catalog.tools())
    # The request names only the address, yet the step needs the page: the fetcher is found beside
    # the summarizer, and the address alone does not bring in the URL shortener ahead of it.
    found = [h.tool.name for h in backend.search("summarize https://example.com/blog/post")]
    assert set(found[:2]) == {"fetch", "summarize_text"}, found


def test_synonyms_count_less_than_the_query_s_own_words() -> None:
    catalog = Catalog()
    catalog.set_server_tools(
        "notes",
        [
            _tool("create_note", "Create a new note."),
            _tool("update_note", "Change a note (to add a tag, pass the full list)."),
        ],
    )
    backend = BM25Backend()
    backend.rebuild(catalog.tools())
    # "add" is in update_note's text, its synonym "create" in create_note's name: the action wins.
    assert [h.tool.name for h in backend.search("add a note")][:1] == ["create_note"]
    # A word of the query itself beats a synonym's match.
    assert [h.tool.name for h in backend.search("change a note")][:1] == ["update_note"]


def test_parameter_descriptions_are_searched() -> None:
    catalog = Catalog()
    catalog.set_server_tools(
        "units",
        [
            types.Tool(
                name="convert_units",
                description="Convert a value from one unit to another.",
                input_schema={
                    "type": "object",
                    "properties": {"from_unit": {"type": "string", "description": 'e.g. "mi", "miles"'}},
                },
            ),
            _tool("list_units", "List the units convert_units accepts."),
        ],
    )
    backend = BM25Backend()
    backend.rebuild(catalog.tools())
    assert [h.tool.name for h in backend.search("convert miles")][:1] == ["convert_units"]


def _hits(*names: str) -> list[SearchHit]:
    tools = {t.name: t for t in _catalog_tools()}
    return [SearchHit(tools[name], 0.5) for name in names]


def test_every_step_gets_its_best_tool_before_any_step_gets_a_second() -> None:
    rankings = [
        _hits("read_file", "write_file", "get_file_info"),
        _hits("create_issue", "search"),
        _hits("forecast"),
        _hits("listPullRequests"),
    ]
    merged = merge_steps(rankings, limit=2)  # more steps than the limit: one tool per step
    assert [(h.tool.name, h.steps) for h in merged] == [
        ("read_file", (0,)),
        ("create_issue", (1,)),
        ("forecast", (2,)),
        ("listPullRequests", (3,)),
    ]
    roomy = merge_steps(rankings, limit=6)  # then round-robin: the second of each, the third, ...
    assert [h.tool.name for h in roomy] == [
        "read_file",
        "create_issue",
        "forecast",
        "listPullRequests",
        "write_file",
        "search",
    ]
    # One tool answering two steps is listed once, with both; an empty step is left out.
    shared = merge_steps([_hits("read_file", "write_file"), [], _hits("read_file", "forecast")], limit=3)
    assert [(h.tool.name, h.steps) for h in shared] == [
        ("read_file", (0, 2)),
        ("write_file", (0,)),
        ("forecast", (2,)),
    ]


def test_each_tool_s_terms_are_read_back_from_the_index() -> None:
    catalog = Catalog()
    catalog.set_server_tools(
        "tools",
        [
            _tool("convert_units", "Convert a value between units: miles, kilometers, pounds."),
            _tool("write_file", "Write text to a file."),
            _tool("a", ""),  # a document of almost nothing
        ],
    )
    catalog.set_server_tools("notes", [_tool("create_note", "Create a new note with a title and a body.")])
    tools = catalog.tools()
    backend = BM25Backend()
    backend.rebuild(tools)
    held = backend.doc_terms
    assert len(held) == len(tools)
    for i, tool in enumerate(tools):
        expected = frozenset(bm25.document_terms(tool, backend.weights) or ["\x00"])
        assert held[i] == expected, tool.name
        assert held.count(i) == len(expected)
    assert backend.coverage("convert miles to kilometers", 0) == 1.0
    backend.rebuild([])
    assert len(backend.doc_terms) == 0
