"""`smart_tool_discovery`, end to end: choose the tool, map the words to its arguments, confirm, run.

1. The candidates come from the gateway's search within the request's scope (`Gateway.candidates`),
   each with its rule and semantic score; with an LLM (`llm:` in the config, or opt-in the
   client's own through sampling), the best `maxLlmCandidates` go to it with their signatures and
   it picks (smart/selection.py). The selection mode combines them; learning and `preferred_tools`
   nudge. Matches and LLM answers are cached (per scope and catalog version).
2. Below the confidence threshold nothing runs: `TOOL_NOT_FOUND` with the closest tools.
3. The arguments: the LLM's, schema-constrained and validated with one repair round
   (smart/llm_mapping.py), else (and on its failure) the deterministic extractor
   (smart/extraction.py). A required value the request does not give is never invented: the answer
   lists it and nothing runs. A call with `tool` and `arguments` skips 1-3.
4. A destructive tool (`destructiveHint: true`, or tagged `dangerous` by the rules) runs only when
   the user confirms through elicitation, or the agent repeats the planned call with `confirm: true`
   and the `confirmation_id` the gateway proposed for exactly it (smart/confirmation.py: that tool,
   those arguments, that caller, once, before it expires). At the terminal, `--confirm` with
   `--tool` is the user's own answer (`run(..., user_confirmed=True)`).
5. `Gateway.execute` runs it as `execute_tool` would (scopes, rules, validation, audit: the audit
   line says which method chose the tool and how sure it was).

Every LLM failure falls back to the next method, and the answer says which decided and why.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types

from toolscout.catalog import CatalogTool
from toolscout.config.models import GatewayConfig, LLMConfig, SmartConfig
from toolscout.config.scopes import current_scope
from toolscout.errors import ArgumentValidationError, InvalidArguments, LLMUnavailable, ToolscoutError
from toolscout.gateway.audit import noting
from toolscout.gateway.core import Gateway
from toolscout.gateway.store import store_path
from toolscout.gateway.visibility import scope_key
from toolscout.modes import smart_answers as answers
from toolscout.modes.smart_answers import Decision
from toolscout.modes.smart_args import SmartArgs
from toolscout.modes.smart_confirm import DestructiveGuard
from toolscout.render.signature import call_signature
from toolscout.smart.cache import TTLCache
from toolscout.smart.confirmation import Confirmations
from toolscout.smart.llm import LLMProvider, OpenAICompatibleLLM
from toolscout.smart.llm_mapping import map_with_llm
from toolscout.smart.sampling import SamplingLLM
from toolscout.smart.selection import Choice, LLMPick, choose, select_with_llm
from toolscout.upstream.relay import current_relay

if TYPE_CHECKING:  # the search package (numpy) is imported in a worker thread at start
    from toolscout.search.base import MethodHit
    from toolscout.smart.memory import SmartMemory

logger = logging.getLogger(__name__)

LLMSource = Callable[[], AbstractAsyncContextManager[LLMProvider | None]]
"""Opens the LLM for one smart call (None: no LLM for it)."""
_UNANSWERED = frozenset({"llm: timeout", "llm: unreachable"})
"""Selection fallbacks after which the LLM is not asked for the arguments too (each wait would be as long)."""
LLM_REST_SECONDS = 30.0
"""After an LLM timed out or could not be reached, calls go without it for this long instead of each
waiting its timeout again (`llm: timeout` in their fallbacks); then it is asked again."""


def memory_path(config: GatewayConfig) -> Path:
    """Where learning is kept: `smart.learningPath`, else beside the persistent catalog."""
    if config.smart.learning_path:
        return Path(config.smart.learning_path).expanduser()
    from toolscout.smart.memory import MEMORY_FILE

    return store_path(config.catalog_cache).parent / MEMORY_FILE


def llm_source(llm: LLMConfig | None, smart: SmartConfig) -> LLMSource:
    """The LLM of a smart call: the configured endpoint, else (opted in) the client's model, else none."""

    @contextlib.asynccontextmanager
    async def open_llm() -> AsyncGenerator[LLMProvider | None]:
        if llm is not None:
            async with OpenAICompatibleLLM(
                llm.base_url, llm.model, api_key=llm.api_key(), timeout=llm.timeout, max_retries=llm.max_retries
            ) as provider:
                yield provider
            return
        relay = current_relay()
        yield SamplingLLM(relay, timeout=smart.sampling_timeout) if smart.sampling and relay is not None else None

    return open_llm


def candidate_line(tool: CatalogTool) -> str:
    """A candidate as the LLM sees it: `server/tool(signature): summary`."""
    signature = call_signature(tool.name, tool.input_schema, max_description_len=0)
    return f"{tool.server}/{signature}: {tool.summary}" if tool.summary else f"{tool.server}/{signature}"


class SmartDiscovery:
    """Runs `smart_tool_discovery` calls over a gateway (the face's smart surface, and `toolscout smart`)."""

    def __init__(
        self,
        gateway: Gateway,
        config: SmartConfig | None = None,
        *,
        llm: LLMSource | None = None,
        memory: SmartMemory | None = None,
        confirmations: Confirmations | None = None,
    ) -> None:
        self.gateway = gateway
        self.config = config or SmartConfig()
        self.guard = DestructiveGuard(self.config, confirmations)
        self.open_llm = llm or llm_source(None, self.config)
        from toolscout.smart.memory import SmartMemory

        self.memory = memory if memory is not None else SmartMemory(None)
        cache = self.config.cache
        self.matches = TTLCache[list[Choice]](cache.max_tool_matches, cache.tool_match_ttl)
        self.llm_answers = TTLCache[dict[tuple[str, str], LLMPick]](cache.max_llm_responses, cache.llm_response_ttl)
        self._resting: dict[str, tuple[float, str]] = {}
        """LLM name → (until when it is not asked, why): one that timed out or was unreachable."""
        self.clock: Callable[[], float] = time.monotonic

    async def run(self, args: SmartArgs, *, user_confirmed: bool = False) -> types.CallToolResult:
        """One `smart_tool_discovery` call (its arguments parsed); failures of the request itself raise.

        `user_confirmed`: the user at a terminal confirmed this call (`toolscout smart --tool ... --confirm`),
        which runs a destructive tool named by `args.tool` as their answer through elicitation would."""
        await self.gateway.settle_startup()
        async with self.open_llm() as llm:
            if args.tool is not None:
                entry = await self._named(args.tool)
                choice = Choice(entry, 1.0, f"Explicit({entry.server}/{entry.name})")
                decision = Decision("explicit")
                arguments = dict(args.arguments or {})
                return await self._checked(args, choice, decision, arguments, "given", None, user_confirmed)
            choices, decision = await self._select(args, llm)
            if args.max_suggestions > 1 and choices:
                top = choices[: args.max_suggestions]
                from toolscout.smart.extraction import extract_arguments

                extracted = [extract_arguments(self._text(args), c.tool.input_schema).arguments for c in top]
                return answers.suggestions(top, extracted, decision)
            threshold = (
                self.config.confidence_threshold if args.confidence_threshold is None else args.confidence_threshold
            )
            if not choices or choices[0].confidence < threshold:
                scope = current_scope()
                searched = sum(self.gateway.visibility.counts(scope, u.name)[1] for u in self.gateway.upstreams)
                return answers.not_found(
                    args.request,
                    choices,
                    decision,
                    threshold=threshold,
                    searched=searched,
                    include_details=args.include_error_details,
                )
            best = choices[0]
            arguments, source, missing = await self._map(args, best.tool, llm, decision)
            return await self._checked(args, best, decision, arguments, source, missing, False)

    # Choosing

    async def _named(self, name: str) -> CatalogTool:
        """The tool `server/tool` (or `server__tool`, or a name only one visible server has)."""
        for separator in ("/", "__"):
            server, found, tool = name.partition(separator)
            if found and server and tool and server in {u.name for u in self.gateway.upstreams}:
                return await self.gateway.tool(server, tool)
        # Disabled ones too: `gateway.tool` then says it is disabled (not that there is no such tool).
        # The catalog as it is (start-up was settled): no server is waited for to answer a name.
        scope = current_scope()
        owners = [
            u.name
            for u in self.gateway.upstreams
            if any(t.name == name for t in self.gateway.visibility.tools(scope, u.name, include_disabled=True))
        ]
        if len(owners) == 1:
            return await self.gateway.tool(owners[0], name)
        if owners:
            raise InvalidArguments(
                f"Several servers have a tool {name!r} ({', '.join(owners)}): name it as server/tool.", tool=name
            )
        raise InvalidArguments(
            f"No tool {name!r}: name it as server/tool, as smart_tool_discovery's answers do.", tool=name
        )

    def _text(self, args: SmartArgs) -> str:
        return f"{args.request}\n{args.context}" if args.context else args.request

    async def _select(self, args: SmartArgs, llm: LLMProvider | None) -> tuple[list[Choice], Decision]:
        from toolscout.smart.memory import normalised

        mode = self.config.tool_selection_mode
        wants_llm = mode in ("llm_based", "hybrid") and llm is not None
        preferred = frozenset(args.preferred_tools or ())
        key = (
            scope_key(current_scope()),
            self.gateway.catalog.version,
            mode,
            normalised(args.request),
            args.context,
            preferred,
            llm.name if wants_llm and llm is not None else None,
            self.memory.version,
        )
        fallbacks: list[str] = []
        cached = self.matches.get(key) if self.config.cache.enabled else None
        if cached is not None:
            return cached, Decision(self._method(mode, wants_llm), fallbacks)
        learned = self.memory.similar(args.request) if self.config.enable_learning else {}
        method = "rule" if mode == "rule_based" else "semantic" if mode == "semantic_based" else "hybrid"
        limit = max(self.config.max_llm_candidates, args.max_suggestions, 10)
        hits = await self.gateway.candidates(args.request, limit=limit, method=method, prefer=preferred)
        picks = await self._llm_picks(llm, args, hits, fallbacks) if wants_llm and llm is not None and hits else None
        weights = self.config.weights
        choices = choose(hits, mode=mode, weights=weights, llm=picks, preferred=preferred, learned=learned)
        if not fallbacks and self.config.cache.enabled:
            self.matches.put(key, choices)
        return choices, Decision(self._method(mode, picks is not None), fallbacks)

    async def _llm_picks(
        self, llm: LLMProvider, args: SmartArgs, hits: Sequence[MethodHit], fallbacks: list[str]
    ) -> dict[tuple[str, str], LLMPick] | None:
        """The LLM's picks among the best candidates (cached), or None when it gave none (said in `fallbacks`)."""
        lines = [((h.tool.server, h.tool.name), candidate_line(h.tool)) for h in hits[: self.config.max_llm_candidates]]
        key = (llm.name, args.request, args.context, tuple(line for _, line in lines))
        picks = self.llm_answers.get(key) if self.config.cache.enabled else None
        if picks is None:
            resting = self._resting.get(llm.name)
            if resting is not None and self.clock() < resting[0]:
                fallbacks.append(f"llm: {resting[1]}")
                return None
            try:
                picks = await select_with_llm(llm, args.request, args.context, lines)
            except LLMUnavailable as exc:
                logger.info("smart selection without the LLM: %s", exc.message)
                fallbacks.append(f"llm: {exc.reason}")
                self._rest_if_down(llm, exc)
                return None
            self.llm_answers.put(key, picks)
        return picks

    def _rest_if_down(self, llm: LLMProvider, error: LLMUnavailable) -> None:
        if f"llm: {error.reason}" in _UNANSWERED:
            self._resting[llm.name] = (self.clock() + LLM_REST_SECONDS, error.reason)

    @staticmethod
    def _method(mode: str, llm_answered: bool) -> str:
        if mode == "llm_based" and not llm_answered:
            return "hybrid"  # spec 004 "Graceful Degradation": semantic + rule without the LLM
        return mode.removesuffix("_based")

    # Arguments

    async def _map(
        self, args: SmartArgs, tool: CatalogTool, llm: LLMProvider | None, decision: Decision
    ) -> tuple[dict[str, Any], str, list[str]]:
        """The arguments for `tool` from the request: the LLM's when it answers, else the extractor's."""
        # An LLM that did not answer the choice (timed out, unreachable) is not waited for again in this call.
        unanswered = next((f for f in decision.fallbacks if f in _UNANSWERED), None)
        if unanswered is not None and llm is not None and self.config.llm_mapping:
            decision.fallbacks.append(f"llm parameter mapping: {unanswered.removeprefix('llm: ')}")
        elif llm is not None and self.config.llm_mapping:
            server, name = tool.server, tool.name

            def validate(schema: dict[str, Any], arguments: dict[str, Any]) -> None:
                self.gateway.validator.validate(schema, arguments, server=server, tool=name)

            try:
                mapped = await map_with_llm(
                    llm,
                    args.request,
                    tool=name,
                    description=tool.description or "",
                    schema=tool.input_schema,
                    validate=validate,
                    context=args.context,
                )
                return mapped.arguments, "llm", mapped.missing_required
            except LLMUnavailable as exc:
                decision.fallbacks.append(f"llm parameter mapping: {exc.reason}")
                self._rest_if_down(llm, exc)
        from toolscout.smart.extraction import extract_arguments  # (search.text: numpy, at first use)

        found = extract_arguments(self._text(args), tool.input_schema)
        return found.arguments, "rules", found.missing_required

    async def _checked(
        self,
        args: SmartArgs,
        choice: Choice,
        decision: Decision,
        arguments: dict[str, Any],
        source: str,
        missing: list[str] | None,
        user_confirmed: bool,
    ) -> types.CallToolResult:
        """Validate, confirm when destructive, run, learn: the answer for a chosen tool."""
        entry = choice.tool
        note = {"method": decision.method, "confidence": round(choice.confidence, 4), "request": args.request}
        violations: list[Mapping[str, Any]] = []
        invalid: ArgumentValidationError | None = None
        if not missing:
            try:  # as `Gateway.execute` does
                await self.gateway.validator.check(entry.input_schema, arguments, server=entry.server, tool=entry.name)
            except ArgumentValidationError as exc:
                invalid, violations = exc, list(exc.details.get("violations", []))
        if missing or violations:
            hints = [f"Give a value for {name}." for name in (missing or [])]
            hints += [f"Fix {v.get('path')}: {v.get('message')}" for v in violations]
            extraction = answers.extraction_block(
                "partial_success" if arguments else "failed",
                arguments,
                missing=missing or [],
                violations=violations,
                hints=hints,
            )
            extraction["source"] = source
            if invalid is not None:  # an execution refused for its arguments is audited, as execute_tool's is
                request = {"server": entry.server, "tool": entry.name, "arguments": arguments}
                with noting(smart=note):
                    await self.gateway.record_refused(request, invalid)
            return answers.not_run_for_arguments(choice, decision, extraction, include_reasoning=args.include_reasoning)
        if not user_confirmed and self.guard.destructive(entry):
            held = await self.guard.held(args, choice, decision, arguments)
            if held is not None:
                return held
        extraction = answers.extraction_block("success", arguments)
        extraction["source"] = source
        try:
            with noting(smart=note):
                result = await self.gateway.execute(
                    entry.server, entry.name, arguments, max_output_chars=args.max_output_chars
                )
        except ToolscoutError as exc:
            return answers.failed(choice, decision, arguments, exc, include_reasoning=args.include_reasoning)
        if self.config.enable_learning and not result.is_error:
            await anyio.to_thread.run_sync(self.memory.remember, args.request, entry.server, entry.name)
        return answers.ran(choice, decision, arguments, result, extraction, include_reasoning=args.include_reasoning)
