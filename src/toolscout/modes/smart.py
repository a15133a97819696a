"""Smart mode: one tool, `smart_tool_discovery`, that takes a request in plain words and runs the right tool.

In discovery mode with `smartTool: true` the same tool joins the five meta-tools. The module reads in
the order of a call:

1. The tool, its surface and its arguments (`SmartArgs`): the request and its context, plus the
   explicit second round (`tool`, `arguments`, `confirm`, and the `confirmation_id` that a
   `confirmation_required` answer proposed).
2. `SmartDiscovery` chooses the tool. The candidates come from the gateway's search within the
   request's scope (`Gateway.candidates`), each with its rule and semantic score. With an LLM (`llm:`
   in the config, or, opted in, the client's own through sampling), the best `maxLlmCandidates` (and
   the caller's preferred and learnt tools) go to it with their signatures and it picks
   (smart/selection.py). The selection mode combines them (a method that declined or failed does
   not count; the LLM alone never overrules a confident search); `preferred_tools` and learning
   weigh in as the caller's evidence, and win among the tools the request could mean. Matches and
   LLM answers are cached per scope and catalog version. Below the confidence threshold nothing
   runs: the answer is `TOOL_NOT_FOUND` with the closest tools.
3. It maps the words to the tool's arguments: the LLM's, constrained by the schema and validated with
   one repair round (smart/llm.py), else (and when that fails) the deterministic extractor
   (smart/extraction.py). A required value the request does not give is never invented: the answer
   lists it and nothing runs. A call with `tool` and `arguments` skips steps 2 and 3.
4. `DestructiveGuard` holds a destructive tool (`destructiveHint: true`, or tagged `dangerous` by the
   rules) until the user confirms through elicitation, or the agent repeats the planned call with
   `confirm: true` and the `confirmation_id` the gateway proposed for exactly it
   (smart/confirmation.py: that tool, those arguments, that caller, once, before it expires). At the
   terminal, `--confirm` with `--tool` is the user's own answer (`run(..., user_confirmed=True)`).
5. `Gateway.execute` runs it as `execute_tool` would (scopes, rules, validation, audit); the audit
   line says which method chose the tool and how sure it was.
6. The answers, last, in the shapes smart mode promises its clients: structuredContent for programs
   and a short text for the model.

Every LLM failure falls back to the next method, and the answer says which method decided and why.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
import weakref
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio
import mcp_types as types
from pydantic import Field, field_validator

from toolscout.catalog import CatalogTool
from toolscout.config.models import GatewayConfig, LLMConfig, SmartConfig
from toolscout.config.scopes import current_scope
from toolscout.errors import ArgumentValidationError, InvalidArguments, LLMUnavailable, Phrasing, ToolscoutError
from toolscout.gateway.audit import noting
from toolscout.gateway.core import Gateway
from toolscout.gateway.index import import_search_package
from toolscout.gateway.store import store_path
from toolscout.gateway.visibility import scope_key
from toolscout.modes.client import SurfaceClient
from toolscout.modes.discovery import ArgsModel, MetaTool, forgive_arguments, run_meta_tool
from toolscout.modes.smart_suggestions import category_fallback, json_text, not_found, suggestions
from toolscout.naming import split_tool_label, tool_spellings
from toolscout.render.signatures import call_signature
from toolscout.smart.confirmation import Confirmations
from toolscout.smart.llm import LLMMapping, LLMProvider, SamplingLLM, definition_hash, map_with_llm
from toolscout.smart.selection import Choice, LLMPick, choose, llm_candidates, select_with_llm
from toolscout.upstream.calls import current_relay

if TYPE_CHECKING:  # the search package (numpy) is imported in a worker thread at start
    from toolscout.search.base import MethodHit
    from toolscout.smart.memory import SmartMemory


SMART_TOOL = "smart_tool_discovery"

DESCRIPTION = (
    "Do a task on the connected MCP servers from plain words: picks the tool, reads its arguments from "
    "the request, runs it, returns its result and how it chose. Unsure or missing values: nothing runs, "
    "the answer says what to add; then call again with tool and arguments."
)


def smart_tool(smart: SmartDiscovery) -> MetaTool:
    """Return the `smart_tool_discovery` tool, run by `smart`."""

    async def run(_: Gateway, args: SmartArgs) -> types.CallToolResult:
        return await smart.run(args)

    return MetaTool(SMART_TOOL, DESCRIPTION, SmartArgs, handler=run, read_only=False)


SMART_STEPS: Phrasing = {
    "find_tool": "Call smart_tool_discovery with what you want done, or with max_suggestions to see the tools.",
    "list_servers": "Call smart_tool_discovery with max_suggestions to see which servers' tools fit.",
    "tool_details": "Call smart_tool_discovery with max_suggestions for the tool's signature, then retry.",
}
"""The next steps for an agent whose one tool is smart_tool_discovery."""


class SmartSurface:
    """The one tool of smart mode."""

    per_client = False
    next_steps: Phrasing = SMART_STEPS

    instructions = (
        "toolscout fronts many MCP servers behind one tool: call smart_tool_discovery with what you want done, "
        "in plain words. Its answer names the tool it ran and how sure it was; to run a suggested tool, "
        "call it again with tool and arguments."
    )

    def __init__(self, gateway: Gateway, smart: SmartDiscovery) -> None:
        self.gateway = gateway
        self.smart = smart
        self._tools = {SMART_TOOL: smart_tool(smart)}
        self._definitions = [tool.definition() for tool in self._tools.values()]

    async def tools(self, client: SurfaceClient) -> list[types.Tool]:
        return self._definitions

    async def call(self, client: SurfaceClient, name: str, arguments: dict[str, Any]) -> types.CallToolResult | None:
        return await run_meta_tool(self._tools, self.gateway, name, arguments)

    def native(self, name: str) -> bool:
        return False


MAX_REQUEST_CHARS = 2000
"""As long as a search query may be (`search.maxQueryChars`' default): the request is searched."""

MAX_CONFIRMATION_ID_CHARS = 200
"""Longer than any id the gateway proposes (68 characters): a longer one is refused as it comes."""


# The arguments of `smart_tool_discovery`: the request, plus the explicit second round (`tool`,
# `arguments`, `confirm`, and the `confirmation_id` a `confirmation_required` answer proposed). A
# comment rather than a docstring: pydantic would put a docstring into the tool's input schema.
class SmartArgs(ArgsModel):
    request: str = Field(min_length=1, max_length=MAX_REQUEST_CHARS, description="What to do, in plain words.")
    context: str | None = Field(None, max_length=MAX_REQUEST_CHARS, description="Details that help.")
    preferred_tools: list[str] | None = None
    confidence_threshold: float | None = Field(None, ge=0.0, le=1.0)
    # 1: run the best tool; more: rank that many, run none.
    max_suggestions: int = Field(1, ge=1, le=10)
    include_reasoning: bool = True
    include_error_details: bool = False
    tool: str | None = Field(None, description="server/tool from an earlier answer: run it with arguments.")
    arguments: dict[str, Any] | None = None
    confirm: bool = False
    confirmation_id: str | None = Field(
        None,
        max_length=MAX_CONFIRMATION_ID_CHARS,
        description="A confirmation_required answer's id: with confirm, runs that call once.",
    )
    max_output_chars: int | None = Field(None, ge=0)

    _forgive = field_validator("arguments", mode="before")(forgive_arguments)


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
            from toolscout.smart.providers import open_llm as open_configured

            async with open_configured(llm) as provider:
                yield provider
            return
        relay = current_relay()
        yield SamplingLLM(relay, timeout=smart.sampling_timeout) if smart.sampling and relay is not None else None

    return open_llm


def _named_in(tool: CatalogTool, names: frozenset[str]) -> bool:
    """Whether `names` (as `preferred_tools` gives them) names `tool`: by name or as `server/tool` (or
    another spelling of `naming.LABEL_SEPARATORS`)."""
    return tool.name in names or not names.isdisjoint(tool_spellings(tool.server, tool.name))


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
        import_search_package()  # smart.memory needs search.text, which the index may be importing in a thread
        from toolscout.smart.memory import SmartMemory, TTLCache  # (search.text: numpy, when smart mode is on)

        self.memory = memory if memory is not None else SmartMemory(None)
        cache = self.config.cache
        self.matches = TTLCache[list[Choice]](cache.max_tool_matches, cache.tool_match_ttl)
        self.llm_answers = TTLCache[dict[tuple[str, str], LLMPick]](cache.max_llm_responses, cache.llm_response_ttl)
        self.llm_mappings = TTLCache[LLMMapping](cache.max_llm_responses, cache.llm_response_ttl)
        gateway.metrics.add_cache("smart_tool_matches", weakref.ref(self.matches))
        gateway.metrics.add_cache("smart_llm_answers", weakref.ref(self.llm_answers))
        gateway.metrics.add_cache("smart_llm_mappings", weakref.ref(self.llm_mappings))
        gateway.llm_picks.append(self.remembered_picks)  # an explained search shows the LLM's part
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
                self.gateway.stats.smart_call(decision.method, ran=True)
                arguments = dict(args.arguments or {})
                return await self._checked(args, choice, decision, arguments, "given", None, user_confirmed)
            choices, decision = await self._select(args, llm)
            threshold = (
                self.config.confidence_threshold if args.confidence_threshold is None else args.confidence_threshold
            )
            chosen = bool(choices) and choices[0].confidence >= threshold and args.max_suggestions <= 1
            self.gateway.stats.smart_call(decision.method, ran=chosen)
            if args.max_suggestions > 1 and choices:
                top = choices[: args.max_suggestions]
                mapped = await self._suggested_arguments(args, top, llm, decision)
                return suggestions(top, mapped, decision, include_reasoning=args.include_reasoning)
            if not choices or choices[0].confidence < threshold:
                scope = current_scope()
                catalog = self.gateway.visibility.tools(scope)  # the hidden ones too: smart mode finds them
                searched = sum(self.gateway.visibility.counts(scope, u.name)[1] for u in self.gateway.upstreams)
                return not_found(
                    args.request,
                    choices,
                    decision,
                    threshold=threshold,
                    searched=searched,
                    include_details=args.include_error_details,
                    fallback=self.config.fallback,
                    category=category_fallback(args.request, choices, catalog, self.config.fallback),
                )
            best = choices[0]
            arguments, source, missing = await self._map(args, best.tool, llm, decision)
            return await self._checked(args, best, decision, arguments, source, missing, False)

    # Choosing

    async def _named(self, name: str) -> CatalogTool:
        """The tool `server/tool` (or `server:tool`, `server__tool`, or a name only one visible server has)."""
        found = split_tool_label(name, [u.name for u in self.gateway.upstreams])
        if found is not None:
            return await self.gateway.tool(*found)
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
        from toolscout.smart.extraction import search_text  # (search.text: numpy, imported by now)

        hits = await self.gateway.candidates(search_text(args.request), limit=limit, method=method, prefer=preferred)
        include = {(h.tool.server, h.tool.name) for h in hits if _named_in(h.tool, preferred)} | set(learned)
        picks = (
            await self._llm_picks(
                llm, args, llm_candidates(hits, self.config.max_llm_candidates, include=include), fallbacks
            )
            if wants_llm and llm is not None and hits
            else None
        )
        weights = self.config.weights
        choices = choose(hits, mode=mode, weights=weights, llm=picks, preferred=preferred, learned=learned)
        if not fallbacks and self.config.cache.enabled:
            self.matches.put(key, choices)
        return choices, Decision(self._method(mode, picks is not None), fallbacks)

    async def _llm_picks(
        self, llm: LLMProvider, args: SmartArgs, hits: Sequence[MethodHit], fallbacks: list[str]
    ) -> dict[tuple[str, str], LLMPick] | None:
        """The LLM's picks among `hits` (cached), or None when it gave none (said in `fallbacks`)."""
        lines = [((h.tool.server, h.tool.name), candidate_line(h.tool)) for h in hits]
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

    def remembered_picks(self, request: str) -> dict[tuple[str, str], LLMPick] | None:
        """The LLM's picks for `request` (asked without context) while its answer is cached, else None."""
        for key, picks in reversed(self.llm_answers.live()):  # the most recent answer first
            # The key is (LLM, request, context, candidate lines): see `_llm_picks`.
            parts = cast(tuple[object, ...], key) if isinstance(key, tuple) else ()
            if len(parts) == 4 and parts[1] == request and parts[2] is None:
                return picks
        return None

    def _rest_if_down(self, llm: LLMProvider, error: LLMUnavailable) -> None:
        if f"llm: {error.reason}" in _UNANSWERED:
            self._resting[llm.name] = (self.clock() + LLM_REST_SECONDS, error.reason)

    @staticmethod
    def _method(mode: str, llm_answered: bool) -> str:
        if mode == "llm_based" and not llm_answered:
            return "hybrid"  # without the LLM, llm_based degrades to semantic + rule
        return mode.removesuffix("_based")

    # Arguments

    async def _suggested_arguments(
        self, args: SmartArgs, top: Sequence[Choice], llm: LLMProvider | None, decision: Decision
    ) -> list[tuple[dict[str, Any], str, list[str]]]:
        """Each suggested tool's arguments from the request, mapped as a run would map them (the LLM's
        when one is configured, else the extractor's), all at once."""
        mapped: list[tuple[dict[str, Any], str, list[str]]] = [({}, "rules", []) for _ in top]

        async def one(index: int, choice: Choice) -> None:
            mapped[index] = await self._map(args, choice.tool, llm, decision)

        async with anyio.create_task_group() as group:
            for index, choice in enumerate(top):
                group.start_soon(one, index, choice)
        decision.fallbacks[:] = list(dict.fromkeys(decision.fallbacks))  # one line per reason, not per tool
        return mapped

    async def _map(
        self, args: SmartArgs, tool: CatalogTool, llm: LLMProvider | None, decision: Decision
    ) -> tuple[dict[str, Any], str, list[str]]:
        """The arguments for `tool` from the request: the LLM's when it answers, else the extractor's.

        Required arguments the LLM left out are read from the words by the extractor (which never
        invents one), so an LLM that declines to map does not leave less than no LLM at all."""
        from toolscout.smart.providers import mapping_llm

        mapper = None if llm is None else mapping_llm(llm)
        # An LLM that did not answer the choice (timed out, unreachable) is not waited for again in this call.
        unanswered = next((f for f in decision.fallbacks if f in _UNANSWERED), None)
        if unanswered is not None and mapper is llm and mapper is not None and self.config.llm_mapping:
            decision.fallbacks.append(f"llm parameter mapping: {unanswered.removeprefix('llm: ')}")
        elif mapper is not None and self.config.llm_mapping:
            server, name = tool.server, tool.name

            def validate(schema: dict[str, Any], arguments: dict[str, Any]) -> None:
                self.gateway.validator.validate(schema, arguments, server=server, tool=name)

            # Cached by the tool's definition and the words: a changed tool is asked about afresh.
            key = (mapper.name, definition_hash(tool), args.request, args.context)
            cached = self.llm_mappings.get(key) if self.config.cache.enabled else None
            if cached is not None:
                return self._completed(args, tool, dict(cached.arguments), list(cached.missing_required))
            try:
                mapped = await map_with_llm(
                    mapper,
                    args.request,
                    tool=name,
                    description=tool.description or "",
                    schema=tool.input_schema,
                    validate=validate,
                    context=args.context,
                )
                if self.config.cache.enabled:
                    self.llm_mappings.put(key, mapped)
                return self._completed(args, tool, dict(mapped.arguments), list(mapped.missing_required))
            except LLMUnavailable as exc:
                decision.fallbacks.append(f"llm parameter mapping: {exc.reason}")
                self._rest_if_down(mapper, exc)
        from toolscout.smart.extraction import extract_arguments  # (search.text: numpy, at first use)

        found = extract_arguments(self._text(args), tool.input_schema)
        return found.arguments, "rules", found.missing_required

    def _completed(
        self, args: SmartArgs, tool: CatalogTool, arguments: dict[str, Any], missing: list[str]
    ) -> tuple[dict[str, Any], str, list[str]]:
        """The LLM's `arguments`, with the required ones it left out (`missing`) read by the extractor.

        An LLM that mapped nothing at all said nothing of the arguments: the extractor's whole
        reading stands, as without an LLM (an empty mapping is right only for a tool whose
        parameters the request does not speak of, and then the extractor reads none either)."""
        if not missing and arguments:
            return arguments, "llm", missing
        from toolscout.smart.extraction import extract_arguments

        found = extract_arguments(self._text(args), tool.input_schema)
        if not arguments:
            return found.arguments, "rules", found.missing_required
        added = {name: found.arguments[name] for name in missing if name in found.arguments}
        if not added:
            return arguments, "llm", missing
        return {**arguments, **added}, "llm+rules", [name for name in missing if name not in added]

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
            extraction = extraction_block(
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
            return not_run_for_arguments(choice, decision, extraction, include_reasoning=args.include_reasoning)
        if not user_confirmed and self.guard.destructive(entry):
            held = await self.guard.held(args, choice, decision, arguments)
            if held is not None:
                return held
        extraction = extraction_block("success", arguments)
        extraction["source"] = source
        try:
            with noting(smart=note):
                result = await self.gateway.execute(
                    entry.server, entry.name, arguments, max_output_chars=args.max_output_chars
                )
        except ToolscoutError as exc:
            return failed(choice, decision, arguments, exc, include_reasoning=args.include_reasoning)
        if self.config.enable_learning and not result.is_error:
            named = decision.method == "explicit"  # the caller's own pick corrects what ran for these words
            remember = functools.partial(self.memory.remember, named=named)
            await anyio.to_thread.run_sync(remember, args.request, entry.server, entry.name)
        return ran(choice, decision, arguments, result, extraction, include_reasoning=args.include_reasoning)


LOCAL_CALLER = "local"
"""The caller of a call that came through no MCP client (the command line, a program using the engine)."""


class DestructiveGuard:
    """Decides whether a destructive tool's call may run (`held`), and proposes what confirms it.

    A tool annotated `destructiveHint: true`, or tagged `dangerous` by the rules, runs when the call
    carries `confirm: true` and the `confirmation_id` of a `confirmation_required` answer given to the
    same caller for the same tool and arguments (once, before it expires), or when the user, asked
    through elicitation, says yes. Anything else is `confirmation_required` again, with a fresh id and
    what was wrong with the call's; a user's no is `declined`, with no id, so that no agent overrides it.
    """

    def __init__(self, config: SmartConfig, confirmations: Confirmations | None = None) -> None:
        self.config = config
        self.confirmations = confirmations or Confirmations(ttl=config.confirmation_ttl)

    def destructive(self, entry: CatalogTool) -> bool:
        """Whether `entry` needs a confirmation (and `confirmDestructive` is on)."""
        return self.config.confirm_destructive and is_destructive(entry)

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
        return confirmation_required(
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
        return await ask_user_to_run(choice.qualified, arguments)


def is_destructive(entry: CatalogTool) -> bool:
    """Whether `entry` may destroy data: annotated `destructiveHint: true`, or tagged `dangerous` by the rules."""
    annotations = entry.tool.annotations
    return "dangerous" in entry.tags or (annotations is not None and annotations.destructive_hint is True)


async def ask_user_to_run(qualified: str, arguments: Mapping[str, Any]) -> bool | None:
    """The user's answer, through elicitation, to running the destructive tool `qualified` (`server/tool`)
    with `arguments`: True to run, False declined, None when they cannot be asked."""
    relay = current_relay()
    if relay is None:
        return None
    params = types.ElicitRequestFormParams(
        message=f"Run {qualified} with {json_text(arguments)}? It may destroy data.",
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


# The answers. A tool that ran: `discovery_reasoning`, `confidence_score`, `tool_name`
# (`server/tool`), `parameters`, `execution_result` (the upstream's own content, structuredContent and
# isError) and `parameter_extraction`; its text is one line, then the upstream's own content blocks.
# Ranked suggestions (`max_suggestions` > 1) and `TOOL_NOT_FOUND` with its fallbacks are
# modes/smart_suggestions.py's. Not run for its arguments: `parameter_extraction` with
# `extracted_parameters`, `validation_results`, `missing_required` and `suggestions`. Not run until
# confirmed (a destructive tool): `confirmation_required` with the planned call and the
# `confirmation_id` that runs it once, or `declined` by the user.


@dataclass
class Decision:
    """How the tools were ranked: the method that decided, and any fallback (the chosen tool's
    confidence and reasoning are its `Choice`'s)."""

    method: str
    fallbacks: list[str] = field(default_factory=list[str])
    """What could not be used, and why ("llm: timeout"): the method that decided is the next one."""


def _head(choice: Choice, decision: Decision, include_reasoning: bool) -> dict[str, Any]:
    data: dict[str, Any] = {"method": decision.method, "confidence_score": choice.confidence}
    if include_reasoning:
        data["discovery_reasoning"] = choice.reasoning
    if decision.fallbacks:
        data["fallbacks"] = decision.fallbacks
    return data


def extraction_block(
    status: str,
    extracted: Mapping[str, Any],
    *,
    missing: Sequence[str] = (),
    violations: Sequence[Mapping[str, Any]] = (),
    hints: Sequence[str] = (),
) -> dict[str, Any]:
    """Return an answer's `parameter_extraction`: each argument `valid` or `invalid - why`, and what is missing."""
    results: dict[str, str] = dict.fromkeys(extracted, "valid")
    for violation in violations:
        path = str(violation.get("path", "$"))
        name = path.removeprefix("$").lstrip(".").split(".")[0].split("[")[0] or "$"
        results[name] = f"invalid - {violation.get('message', 'does not match the schema')}"
    return {
        "status": status,
        "extracted_parameters": dict(extracted),
        "validation_results": results,
        "missing_required": list(missing),
        "suggestions": list(hints),
    }


def ran(
    choice: Choice,
    decision: Decision,
    arguments: Mapping[str, Any],
    result: types.CallToolResult,
    extraction: Mapping[str, Any],
    *,
    include_reasoning: bool,
) -> types.CallToolResult:
    """The tool ran: its own result passed through, with how it was chosen."""
    data: dict[str, Any] = {
        "success": not result.is_error,
        **_head(choice, decision, include_reasoning),
        "tool_name": choice.qualified,
        "parameters": dict(arguments),
        "execution_result": {
            "content": [block.model_dump(by_alias=True, exclude_none=True) for block in result.content],
            **({"structuredContent": result.structured_content} if result.structured_content is not None else {}),
            "isError": bool(result.is_error),
        },
        "parameter_extraction": dict(extraction),
    }
    line = f"Ran {choice.qualified}({json_text(arguments)}) [{decision.method}, confidence {choice.confidence:.2f}]"
    return types.CallToolResult(
        content=[types.TextContent(text=line + (":" if result.content else ".")), *result.content],
        structured_content=data,
        is_error=result.is_error,
    )


def failed(
    choice: Choice, decision: Decision, arguments: Mapping[str, Any], error: ToolscoutError, *, include_reasoning: bool
) -> types.CallToolResult:
    """The chosen tool could not be run (its server down, the call failed): the error, with the choice."""
    data: dict[str, Any] = {
        "success": False,
        **_head(choice, decision, include_reasoning),
        "tool_name": choice.qualified,
        "parameters": dict(arguments),
        "error": error.to_dict(SMART_STEPS),
    }
    text = (
        f"Chose {choice.qualified}({json_text(arguments)}), but it failed: {error.code}: {error.explain(SMART_STEPS)}"
    )
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data, is_error=True)


def not_run_for_arguments(
    choice: Choice, decision: Decision, extraction: Mapping[str, Any], *, include_reasoning: bool
) -> types.CallToolResult:
    """The tool is chosen but its arguments are incomplete or invalid: nothing ran."""
    data: dict[str, Any] = {
        "success": False,
        **_head(choice, decision, include_reasoning),
        "tool_name": choice.qualified,
        "parameters": extraction["extracted_parameters"],
        "parameter_extraction": dict(extraction),
    }
    problems = [f"missing {', '.join(extraction['missing_required'])}"] if extraction["missing_required"] else []
    problems += [f"{k} {v}" for k, v in extraction["validation_results"].items() if v != "valid"]
    text = (
        f"Chose {choice.qualified} [{decision.method}, confidence {choice.confidence:.2f}] but did not run it: "
        f"{'; '.join(problems)}. Signature: {call_signature(choice.tool.name, choice.tool.input_schema)}. "
        f"Call again with tool={choice.qualified!r} and the complete arguments."
    )
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data, is_error=True)


def confirmation_required(
    choice: Choice,
    decision: Decision,
    arguments: Mapping[str, Any],
    *,
    declined: bool,
    confirmation_id: str | None,
    expires_in: float,
    problem: str,
    include_reasoning: bool,
) -> types.CallToolResult:
    """A destructive tool, not run: the planned call with the confirmation id that runs it once (or the
    user said no: no id). `problem`: what was wrong with the call's own confirmation ("" for none)."""
    status = "declined" if declined else "confirmation_required"
    data: dict[str, Any] = {
        "success": False,
        "status": status,
        **_head(choice, decision, include_reasoning),
        "tool_name": choice.qualified,
        "parameters": dict(arguments),
    }
    if problem:
        data["confirmation_problem"] = problem
    if declined:
        text = f"The user declined running {choice.qualified}({json_text(arguments)}): nothing was run."
    else:
        planned = {"tool": choice.qualified, "arguments": dict(arguments), "confirm": True}
        data["planned_call"] = {**planned, "confirmation_id": confirmation_id}
        data["confirmation_expires_in"] = expires_in
        why = f"Not run: {problem}. " if problem else ""
        text = (
            f"{why}{choice.qualified} can destroy data, so it was not run. Ask the user; if they want it, call again "
            f"within {expires_in:g}s with tool={choice.qualified!r}, arguments={json_text(arguments)}, confirm=true "
            f"and confirmation_id={confirmation_id!r} (good once, for exactly this call)."
        )
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data)
