"""The `embeddings` commands: `sync` embeds the catalog's tools ahead of time and says what it did.

`sync` connects to the configured servers as `serve` would, embeds every tool whose vector is not
already on disk (by the configured provider, `search.embeddings`, or the packaged model), and reports
how many tools were created (never embedded before), updated (their text changed), unchanged (their
vectors came from the cache) and failed (the provider could not embed them, so the packaged model
did). A `serve` started afterwards finds the vectors on disk and embeds nothing again.
"""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape

from toolscout.cli.common import EXIT_FAILED, ConfigOption, JsonOption, Output, connected, load, run
from toolscout.errors import ConfigurationError, ToolscoutError

embeddings_app = typer.Typer(
    name="embeddings",
    help="Tool embeddings: embed the catalog ahead of time, by the configured provider.",
    no_args_is_help=True,
)


@embeddings_app.command("sync")
def sync(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Embed every tool not embedded yet; report created, updated, unchanged and failed tools."""
    output = Output(as_json)
    gateway_config, _ = load(config, output)
    if gateway_config.search.backend in ("bm25", "weighted"):
        output.fail(
            ConfigurationError(
                f"search.backend is {gateway_config.search.backend}, which uses no embeddings: set it to hybrid or "
                "dense to sync."
            )
        )

    async def body() -> dict[str, Any]:
        try:
            async with connected(gateway_config, output) as gateway:
                state = await gateway.semantic_state(sync=True)
        except ToolscoutError as exc:
            output.fail(exc)
        return {
            "model": state.model,
            "configuredModel": state.configured,
            "dimensions": state.dimensions,
            "toolsEmbedded": state.embedded,
            "created": state.created,
            "updated": state.updated,
            "unchanged": state.unchanged,
            "failed": state.failed,
            "fallback": state.fallback,
        }

    report: dict[str, Any] = run(body)
    if as_json:
        output.data(report)
    else:
        output.print(
            f"{report['toolsEmbedded']} tools embedded by {report['model']}: {report['created']} created, "
            f"{report['updated']} updated, {report['unchanged']} unchanged, {report['failed']} failed."
        )
        if report["fallback"]:
            output.note(f"The configured provider was not used: {escape(report['fallback'])}")
    if report["failed"]:
        raise typer.Exit(EXIT_FAILED)
