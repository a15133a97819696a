"""What `toolscout execute --stream` prints while a tool runs: its progress and log notifications.

A call made by the command's own connection has them through a relay (upstream/calls.py's `Relay`,
made current for the call), one through a running `serve` through the SDK client's callbacks (over a
handshake-era connection: the stateless era has no log messages); both end in `Notices`, which
prints each one the moment it arrives. People read them on standard output before the result; with
`--json` each is one JSON object a line on standard error, so that standard output stays the one
JSON document of the result.

A tool that asks its client something while it runs (sampling, elicitation) is told that the
command line cannot answer, as a plain HTTP request is.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from rich.markup import escape

if TYPE_CHECKING:
    import mcp_types as types

    from toolscout.cli.common import Output
    from toolscout.upstream.calls import SamplingResult


class Notices:
    """Prints a call's progress and log notifications as they come (see the module's doc)."""

    def __init__(self, output: Output, label: str) -> None:
        self._output = output
        self._label = label
        self.count = 0
        """How many were printed."""

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Print a progress notification: `… 2/5 message`."""
        self.count += 1
        if self._output.json_mode:
            self._line({"progress": progress, "total": total, "message": message})
            return
        done = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
        self._output.print(f"[cyan]…[/cyan] progress {done}" + (f": {escape(message)}" if message else ""))
        sys.stdout.flush()

    def log(self, level: str, logger: str | None, data: Any) -> None:
        """Print a log message: `[warning] logger: text`."""
        self.count += 1
        if self._output.json_mode:
            self._line({"log": level, "logger": logger, "data": data})
            return
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        source = f"{escape(logger)}: " if logger else ""
        self._output.print(f"[magenta]\\[{escape(level)}][/magenta] {source}{escape(text)}")
        sys.stdout.flush()

    def _line(self, value: dict[str, Any]) -> None:
        sys.stderr.write(json.dumps({"tool": self._label, **value}, ensure_ascii=False) + "\n")
        sys.stderr.flush()


class StreamingRelay:
    """The relay of a call made by the command's own connection: progress and logs to `Notices`."""

    def __init__(self, notices: Notices) -> None:
        self._notices = notices

    @property
    def client(self) -> str | None:
        return "toolscout-cli"

    @property
    def origin(self) -> object:
        return self

    @property
    def caller(self) -> str:
        return "toolscout-cli"

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self._notices.progress(progress, total, message)

    async def sample(self, params: types.CreateMessageRequestParams) -> SamplingResult:
        import mcp_types as types

        return types.ErrorData(code=types.METHOD_NOT_FOUND, message="The command line has no model to sample.")

    async def elicit(self, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        import mcp_types as types

        return types.ErrorData(code=types.METHOD_NOT_FOUND, message="The command line cannot ask its user.")

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self._notices.log(params.level, params.logger, params.data)
