"""The Run page's smart-mode request box: a request in plain words, run as `smart_tool_discovery`
runs one, and the Confirm button of a destructive tool's planned call.

A request goes through `SmartDiscovery.run`, the engine behind the tool: the principal's scope, the
tool rules, the argument validation and the audit log of `Gateway.execute`. A destructive tool is
held: the answer is `confirmation_required` with the planned call and a confirmation id, which the
page shows with a Confirm button. Confirming sends the planned call back (`tool`, `arguments`,
`confirm: true` and the id) as an agent's second round does, through the same CSRF-checked form
post as every dashboard change. The id is bound to the caller: here the logged-in principal on the
dashboard (`HttpRequestRelay.caller`), so an id shown to one key's session runs nothing for another's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import mcp_types as types
from markupsafe import Markup
from pydantic import ValidationError
from starlette.requests import Request

from toolscout.errors import ToolscoutError
from toolscout.modes.smart import MAX_REQUEST_CHARS, SmartArgs
from toolscout.serve.auth import principal_of
from toolscout.serve.dashboard.results import render_result
from toolscout.upstream.calls import HttpRequestRelay, relaying

if TYPE_CHECKING:
    from toolscout.modes.smart import SmartDiscovery

CLIENT = "dashboard"
"""The client the audit log names for a smart request from this page."""


@dataclass(frozen=True)
class Planned:
    """A held call the page offers to confirm: the tool (`server/tool`), its arguments and the id."""

    tool: str
    arguments: dict[str, Any]
    confirmation_id: str
    expires_in: float

    @property
    def arguments_json(self) -> str:
        """The arguments as the Confirm form sends them back (and the page shows them)."""
        return json.dumps(self.arguments, indent=2, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True)
class Answer:
    """What the box shows: the answer as HTML or a message, its HTTP status, and a call to confirm."""

    shown: Markup | str
    status: int
    planned: Planned | None = None


async def ask(request: Request, smart: SmartDiscovery | None, words: str) -> Answer:
    """Smart mode's answer to a request in plain words."""
    return await _run(request, smart, {"request": words})


async def confirm(request: Request, smart: SmartDiscovery | None, form: dict[str, str]) -> Answer:
    """Run the planned call the Confirm form sends back (`request`, `tool`, `arguments`, `confirmation_id`)."""
    try:
        arguments = json.loads(form.get("arguments") or "{}")
    except json.JSONDecodeError as exc:
        return Answer(f"The planned call's arguments are not JSON ({exc.msg}): ask again.", 422)
    body = {
        "request": form.get("request", ""),
        "tool": form.get("tool", ""),
        "arguments": arguments,
        "confirm": True,
        "confirmation_id": form.get("confirmation_id", ""),
    }
    return await _run(request, smart, body)


async def _run(request: Request, smart: SmartDiscovery | None, body: dict[str, Any]) -> Answer:
    if smart is None:
        return Answer("Smart mode is not configured (mode: smart, or smartTool: true).", 404)
    try:
        arguments = SmartArgs.model_validate(body)
    except ValidationError:
        return Answer(f"Say what to do in 1 to {MAX_REQUEST_CHARS:,} characters.", 422)
    try:
        with relaying(HttpRequestRelay(principal_of(request).subject, CLIENT)):
            result = await smart.run(arguments)
    except ToolscoutError as exc:
        return Answer(f"{exc.message} ({exc.code})", 422)
    return Answer(Markup(render_result(result)), 200, planned_call(result))  # escaped by results.py


def planned_call(result: types.CallToolResult) -> Planned | None:
    """The call a `confirmation_required` answer proposes, if it is one."""
    data = cast(dict[str, Any], result.structured_content or {})
    if data.get("status") != "confirmation_required" or not isinstance(data.get("planned_call"), dict):
        return None
    planned = cast(dict[str, Any], data["planned_call"])
    tool, arguments, proposed = planned.get("tool"), planned.get("arguments"), planned.get("confirmation_id")
    if not (isinstance(tool, str) and isinstance(arguments, dict) and isinstance(proposed, str)):
        return None
    expires = data.get("confirmation_expires_in")
    seconds = float(expires) if isinstance(expires, int | float) else 0.0
    return Planned(tool, cast(dict[str, Any], arguments), proposed, seconds)
