"""Smart mode's guard on destructive tools: the user's answer through elicitation, or a confirmation id
the gateway proposed for exactly the call (smart/confirmation.py).

A tool annotated `destructiveHint: true`, or tagged `dangerous` by the rules, runs when the call
carries `confirm: true` and the `confirmation_id` of a `confirmation_required` answer given to the
same caller for the same tool and arguments (once, before it expires), or when the user, asked
through elicitation, says yes. Anything else is `confirmation_required` again, with a fresh id and
what was wrong with the call's; a user's no is `declined`, with no id, so that no agent overrides it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types

from toolscout.catalog import CatalogTool
from toolscout.config.models import SmartConfig
from toolscout.modes import smart_answers as answers
from toolscout.modes.smart_answers import Decision
from toolscout.modes.smart_args import SmartArgs
from toolscout.smart.confirmation import Confirmations
from toolscout.smart.selection import Choice
from toolscout.upstream.relay import current_relay

LOCAL_CALLER = "local"
"""The caller of a call that came through no MCP client (the command line, a program using the engine)."""


class DestructiveGuard:
    """Decides whether a destructive tool's call may run (`held`), and proposes what confirms it."""

    def __init__(self, config: SmartConfig, confirmations: Confirmations | None = None) -> None:
        self.config = config
        self.confirmations = confirmations or Confirmations(ttl=config.confirmation_ttl)

    def destructive(self, entry: CatalogTool) -> bool:
        """Whether `entry` needs a confirmation (and `confirmDestructive` is on)."""
        if not self.config.confirm_destructive:
            return False
        annotations = entry.tool.annotations
        return "dangerous" in entry.tags or (annotations is not None and annotations.destructive_hint is True)

    async def held(
        self, args: SmartArgs, choice: Choice, decision: Decision, arguments: Mapping[str, Any]
    ) -> types.CallToolResult | None:
        """None when the call may run (its confirmation is spent then); else the answer that holds it."""
        relay = current_relay()
        caller = relay.caller if relay is not None else LOCAL_CALLER
        problem = await self._redeemed(args, choice, arguments, caller)
        if problem is None:
            return None
        answer = await self._ask_user(choice, arguments)
        if answer is True:
            return None
        declined = answer is False
        proposed = None if declined else await self.confirmations.propose(choice.qualified, arguments, caller)
        return answers.confirmation_required(
            choice,
            decision,
            arguments,
            declined=declined,
            confirmation_id=proposed,
            expires_in=self.confirmations.ttl,
            problem=problem,
            include_reasoning=args.include_reasoning,
        )

    async def _redeemed(self, args: SmartArgs, choice: Choice, arguments: Mapping[str, Any], caller: str) -> str | None:
        """None when the call carries the confirmation proposed for exactly it (now spent); else what is
        wrong with it ("" for a call that claims no confirmation)."""
        if args.confirmation_id is None:
            if args.confirm:  # the skipped round: where a prompt-injected agent would start
                return "confirm: true came without the confirmation_id of a plan this gateway proposed"
            return ""
        if not args.confirm:
            return "a confirmation_id runs its call only with confirm: true"
        problem = await self.confirmations.redeem(args.confirmation_id, choice.qualified, arguments, caller)
        return None if problem is None else f"the confirmation_id {problem}"

    async def _ask_user(self, choice: Choice, arguments: Mapping[str, Any]) -> bool | None:
        """The user's answer through elicitation: True to run, False declined, None when they cannot be asked."""
        relay = current_relay()
        if relay is None:
            return None
        params = types.ElicitRequestFormParams(
            message=f"Run {choice.qualified} with {answers.json_text(arguments)}? It may destroy data.",
            requested_schema={
                "type": "object",
                "properties": {"confirm": {"type": "boolean", "title": "Run it", "description": "Run this call"}},
                "required": ["confirm"],
            },
        )
        answer = await relay.elicit(params)
        if isinstance(answer, types.ErrorData):
            return None
        return answer.action == "accept" and bool((answer.content or {}).get("confirm"))
