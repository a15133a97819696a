"""Which tool a plain-words request means: each method's score, their combination, the LLM's pick.

Smart mode has four selection modes over the candidates the gateway's search gives
(`Gateway.candidates`, each with its `rule` and `semantic` score):

* `rule_based`: names and BM25 (exact and typo-tolerant names, keywords in the descriptions);
* `semantic_based`: the embeddings' similarity;
* `llm_based`: the LLM's pick among the best candidates (at most `max_llm_candidates`, the caller's
  preferred and learnt tools always among them: `llm_candidates`), with a confidence and a reason;
* `hybrid`: the search and the LLM as two witnesses, each a chance that the tool is the one asked
  for. The search's is its own fusion of semantic and rule turned into that chance by a model of its
  relevance, its lead over the others and its two scores (`CONFIDENCE`, fitted on training
  requests); the LLM's is its confidence for a tool it picked, and for one it did not pick the
  chance it gives its own best pick of being wrong (what it leaves open for any other). The two are
  averaged (a linear opinion pool), weighted by `SmartWeights` (semantic + rule for the search, llm
  for the LLM) renormalised over the methods that answered: an LLM that declined (no candidate
  fits), failed or was not asked counts as no evidence, never as a zero, so the search alone can
  reach the threshold. A confident LLM so overrules a weak
  search, and a confident search a weak LLM pick. When the search is confident (`CONFIDENT_SEARCH`)
  and the LLM picks another tool, that tool never runs on the LLM's word alone: no tool but the
  search's first is more likely than the search's first is wrong (1 - its chance); the search's
  tool runs if the pool still supports it, else nothing does and the answer lists both.
  The reasoning shows each part: `Hybrid(Semantic: 0.732, Rule: 0.550 → Search: 0.815, LLM: 0.900) = 0.862`.

Two kinds of the caller's own evidence come after, as odds: a tool named in `preferred_tools`
(`PREFERRED_ODDS`) and, with learning on, a tool that ran successfully for a similar request
(`LEARNED_ODDS` to the power of the requests' similarity). A preferred tool the request could mean
(`PREFERRED_FLOOR`) is put first, and so is a tool that ran for this very request (the same words),
unless `preferred_tools` names others; either keeps at least the confidence the best tool had,
since the caller's word only settles a choice among tools the request supports.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from toolscout.catalog import CatalogTool
from toolscout.config.models import SelectionMode, SmartWeights
from toolscout.errors import LLMUnavailable
from toolscout.naming import tool_spellings
from toolscout.smart.llm import ChatMessage, LLMProvider, parse_json_object

if TYPE_CHECKING:  # the search package (numpy) is imported in a worker thread at start, not with the face
    from toolscout.search.base import MethodHit

PREFERRED_ODDS = 10.0
"""The odds of a tool named in `preferred_tools` are multiplied by this (the caller's word as evidence)."""
PREFERRED_FLOOR = 0.05
"""A preferred tool with at least this confidence of its own (the request could mean it) is put first."""
LEARNED_ODDS = 10.0
"""The odds of a tool that ran successfully for a similar request are multiplied by this to the power
of the requests' similarity (this very request: the full factor, and the tool is put first)."""
CONFIDENT_SEARCH = 0.9
"""From this chance of its first tool on, the search is confident: the LLM cannot carry another tool
past 1 - that chance (two witnesses disagreeing, the search's tool is preferred or nothing runs)."""
_EDGE = 1e-3
"""A chance is kept below 1 - _EDGE before its odds are multiplied (infinite odds would decide alone)."""

Key = tuple[str, str]
"""A tool as `(server, tool)`."""


@dataclass(frozen=True)
class LLMPick:
    """The LLM's view of one candidate: how sure it is that this tool does what is asked, and why."""

    confidence: float
    reason: str


@dataclass(frozen=True)
class Choice:
    """A candidate with the confidence its selection mode gives it and how that came about."""

    tool: CatalogTool
    confidence: float
    reasoning: str
    scores: dict[str, float] = field(default_factory=dict[str, float])
    """Each method's own score (`semantic`, `rule`, `llm`), and the nudges (`preferred`, `learned`)."""
    why: str | None = None
    """The LLM's reason, when it picked this tool."""

    @property
    def key(self) -> Key:
        return (self.tool.server, self.tool.name)

    @property
    def qualified(self) -> str:
        """The tool as answers name it: `server/tool`."""
        return f"{self.tool.server}/{self.tool.name}"


CONFIDENCE = (-1.3126, 6.6147, 2.2031, 7.2217, -4.9916)
"""The weights of `confidence_features` in the logistic model of the chance that a candidate is the
tool the request needs, fitted by scripts/fit_smart_confidence.py on the argument-extraction
requests of ../shared/train (MIT/Apache sources; requests that carry their values, as smart ones
do), searched as smart mode searches them, in a large catalog, a small one, and a small one that
lacks the right tool (where a lone weak match leads by far yet is wrong). On its held-out source it
runs the top tool for far more requests than the search's relevance at the same threshold, at the
same precision (docs/BENCHMARKS.md, "Smart mode")."""


def confidence_features(hits: Sequence[MethodHit]) -> list[list[float]]:
    """What the confidence model reads of each candidate: its search relevance, its lead over the best
    other candidate (negative when another leads), its rule and semantic scores, and 1 (intercept).

    Without embeddings (`semantic` None) the search's relevance stands in for the semantic score: the
    search's fusion is then the rule alone, and a missing score is not evidence against the tool."""
    relevances = [h.relevance for h in hits]
    features: list[list[float]] = []
    for i, hit in enumerate(hits):
        best_other = max((r for j, r in enumerate(relevances) if j != i), default=0.0)
        semantic = hit.relevance if hit.semantic is None else hit.semantic
        features.append([hit.relevance, hit.relevance - best_other, hit.rule, semantic, 1.0])
    return features


def search_confidence(hits: Sequence[MethodHit]) -> list[float]:
    """Each candidate's chance of being the tool the request needs, by the search alone (`CONFIDENCE`)."""
    return [
        round(1.0 / (1.0 + math.exp(-sum(w * x for w, x in zip(CONFIDENCE, features, strict=True)))), 4)
        for features in confidence_features(hits)
    ]


def hybrid_weights(weights: SmartWeights, *, llm: bool) -> dict[str, float]:
    """The weights of the search's chance (semantic + rule) and of the LLM's in the pool, summing to
    one over the methods that answered (without an LLM answer, the search's is the whole)."""
    search = weights.semantic + weights.rule
    if not llm or weights.llm <= 0:
        return {"search": 1.0}
    total = search + weights.llm
    return {"search": search / total, "llm": weights.llm / total}


def pool(chances: Mapping[str, float], shares: Mapping[str, float]) -> float:
    """The chances of the methods that answered, pooled: their average weighted by `shares`
    (a linear opinion pool), the shares renormalised over those methods."""
    total = sum(shares[name] for name in chances)
    return sum(shares[name] * p for name, p in chances.items()) / total


def _odds_times(p: float, factor: float) -> float:
    p = min(1.0 - _EDGE, p)
    odds = p / (1.0 - p) * factor
    return odds / (1.0 + odds)


def llm_candidates(hits: Sequence[MethodHit], limit: int, *, include: Collection[Key] = ()) -> list[MethodHit]:
    """The candidates the LLM sees: the search's best `limit`, with every tool of `include` (the
    caller's preferred tools, ones learnt for the request) among them wherever the search ranks it.

    The search's fused ranking is kept: taking the best of the rule and semantic rankings in turn,
    or a few tools per server, found the right tool no more often (docs/BENCHMARKS.md)."""
    wanted = [h for h in hits if (h.tool.server, h.tool.name) in include][:limit]
    rest = [h for h in hits if (h.tool.server, h.tool.name) not in include]
    shown = {id(h) for h in wanted + rest[: limit - len(wanted)]}
    return [h for h in hits if id(h) in shown]


def choose(
    hits: Sequence[MethodHit],
    *,
    mode: SelectionMode,
    weights: SmartWeights,
    llm: Mapping[Key, LLMPick] | None = None,
    preferred: frozenset[str] = frozenset(),
    learned: Mapping[Key, float] | None = None,
) -> list[Choice]:
    """The candidates ranked by their confidence under `mode`, best first (ties: search order).

    `llm`: the LLM's picks (None when it was not asked or failed, empty when it said no candidate
    fits: either way `llm_based` and `hybrid` decide as the search alone); `preferred`: tool names or
    `server/tool`; `learned`: similarity in (0, 1] of this request to ones each tool ran successfully
    for (1: the same words).
    """
    answered = llm if llm else None
    searched = search_confidence(hits)
    caps = _contest_caps(hits, searched, answered) if mode == "hybrid" or mode == "llm_based" else {}
    base = [
        _score(hit, search, mode, weights, answered, caps.get((hit.tool.server, hit.tool.name)))
        for hit, search in zip(hits, searched, strict=True)
    ]
    best = max((c.confidence for c in base), default=0.0)
    first: set[int] = set()
    choices: list[Choice] = []
    for i, choice in enumerate(base):
        factor, notes = 1.0, list[str]()
        hit = hits[i]
        is_preferred = hit.tool.name in preferred or not preferred.isdisjoint(
            tool_spellings(hit.tool.server, hit.tool.name)
        )
        if is_preferred:
            factor *= PREFERRED_ODDS
            choice.scores["preferred"] = PREFERRED_ODDS
            notes.append(f"Preferred ×{PREFERRED_ODDS:g}")
            support = max(choice.confidence, choice.scores.get("search", 0.0), choice.scores.get("llm", 0.0))
            if support >= PREFERRED_FLOOR:  # the request could mean it (before any contest)
                first.add(i)
        similarity = (learned or {}).get(choice.key, 0.0)
        if similarity > 0:
            extra = round(LEARNED_ODDS**similarity, 3)
            factor *= extra
            choice.scores["learned"] = extra
            notes.append(f"Learned ×{extra:g}")
            if similarity >= 1.0 and (not preferred or is_preferred):
                first.add(i)  # it ran for these very words: it wins unless the caller prefers another
        if notes:
            total = round(_odds_times(choice.confidence, factor), 4)
            if i in first:
                total = max(total, best)
            reasoning = f"{choice.reasoning}; {', '.join(notes)} = {total:.3f}"
            choice = Choice(choice.tool, total, reasoning, choice.scores, choice.why)
        choices.append(choice)
    order = sorted(range(len(choices)), key=lambda i: (i not in first, -choices[i].confidence, i))
    return [choices[i] for i in order]


def _contest_caps(
    hits: Sequence[MethodHit], searched: Sequence[float], llm: Mapping[Key, LLMPick] | None
) -> dict[Key, tuple[float, str]]:
    """With an LLM answer and a confident search (`CONFIDENT_SEARCH`), every tool but the search's
    first gets a ceiling: 1 - the chance the search gives its first (what is left for any other)."""
    if not llm or not hits:
        return {}
    top = max(range(len(hits)), key=lambda i: (searched[i], -i))
    if searched[top] < CONFIDENT_SEARCH:
        return {}
    first = (hits[top].tool.server, hits[top].tool.name)
    ceiling = (round(1.0 - searched[top], 4), f"the search is sure of {first[0]}/{first[1]}")
    return {(h.tool.server, h.tool.name): ceiling for h in hits if (h.tool.server, h.tool.name) != first}


def _score(
    hit: MethodHit,
    search: float,
    mode: SelectionMode,
    weights: SmartWeights,
    llm: Mapping[Key, LLMPick] | None,
    cap: tuple[float, str] | None,
) -> Choice:
    semantic = hit.semantic
    scores = {"rule": hit.rule} | ({} if semantic is None else {"semantic": semantic})
    key = (hit.tool.server, hit.tool.name)
    pick = llm.get(key) if llm is not None else None
    why = pick.reason if pick is not None else None
    if mode == "rule_based":
        return Choice(hit.tool, hit.rule, f"Rule({hit.rule:.3f})", scores)
    if mode == "semantic_based" and semantic is not None:
        return Choice(hit.tool, semantic, f"Semantic({semantic:.3f})", scores)
    if mode == "semantic_based":  # a search without embeddings: rule-based, and the answer says so
        return Choice(hit.tool, hit.rule, f"Rule({hit.rule:.3f}) [no embeddings]", scores)
    llm_score: float | None = None
    if llm is not None:  # the LLM answered: a tool it did not pick gets the chance that its best is wrong
        llm_score = pick.confidence if pick is not None else round(1.0 - max(p.confidence for p in llm.values()), 4)
        scores["llm"] = llm_score
    if mode == "llm_based" and llm_score is not None:
        total = llm_score if pick is not None else 0.0
        return Choice(hit.tool, total, f"LLM({total:.3f})", scores, why)
    scores["search"] = search
    chances = {"search": search} | ({} if llm_score is None else {"llm": llm_score})
    total = round(pool(chances, hybrid_weights(weights, llm=llm_score is not None)), 4)
    parts = [] if semantic is None else [f"Semantic: {semantic:.3f}"]
    parts.append(f"Rule: {hit.rule:.3f} → Search: {search:.3f}")
    if llm_score is not None:
        parts.append(f"LLM: {llm_score:.3f}")
    reasoning = f"Hybrid({', '.join(parts)}) = {total:.3f}"
    if cap is not None and cap[0] < total:
        total = cap[0]
        scores["contested"] = total
        reasoning += f"; contested, {cap[1]}: ≤ {total:.3f}"
    return Choice(hit.tool, total, reasoning, scores, why)


SELECT_SYSTEM = (
    "You choose the tool that does what a user asks, from a numbered list of candidates. Answer with "
    'one JSON object: {"choices": [{"tool": <candidate number>, "confidence": <0 to 1>, "reason": '
    "<a few words>}]}, best first, at most 3 choices, only tools that really do what is asked; an empty "
    "list when none does. Confidence is how sure you are that the tool does what is asked."
)

_ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "choices": {
            "type": "array",
            "maxItems": 3,
            "items": {
                "type": "object",
                "properties": {
                    "tool": {"type": "integer", "minimum": 1},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "reason": {"type": "string"},
                },
                "required": ["tool", "confidence", "reason"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["choices"],
    "additionalProperties": False,
}


def selection_messages(request: str, context: str | None, lines: Sequence[str]) -> list[ChatMessage]:
    """The chat asking for a pick: the request (and its context), then one line per candidate."""
    listing = "\n".join(f"{number}. {line}" for number, line in enumerate(lines, start=1))
    user = f"Request: {request}\n" + (f"Context: {context}\n" if context else "") + f"Candidates:\n{listing}"
    return [{"role": "system", "content": SELECT_SYSTEM}, {"role": "user", "content": user}]


async def select_with_llm(
    llm: LLMProvider, request: str, context: str | None, candidates: Sequence[tuple[Key, str]]
) -> dict[Key, LLMPick]:
    """The LLM's picks among `candidates` (each a tool and its line: name, signature, summary).

    An answer that is not the asked JSON, or names no candidate, is `LLMUnavailable(bad_answer)`;
    an empty list of choices is an answer (no candidate fits: each gets 0).
    """
    messages = selection_messages(request, context, [line for _, line in candidates])
    text = await llm.complete(messages, json_schema=_ANSWER_SCHEMA)
    return parse_picks(text, [key for key, _ in candidates])


def parse_picks(text: str, keys: Sequence[Key]) -> dict[Key, LLMPick]:
    """The picks of a selection answer, by candidate number (1-based), out-of-range ones left out."""
    try:
        answer = parse_json_object(text)
    except ValueError as exc:
        raise LLMUnavailable(f"The LLM's tool choice is not JSON: {exc}", reason="bad_answer") from None
    raw = answer.get("choices")
    if not isinstance(raw, list):
        raise LLMUnavailable(
            f"The LLM's tool choice has no `choices` list: {json.dumps(answer)[:200]}", reason="bad_answer"
        )
    picks: dict[Key, LLMPick] = {}
    for item in cast(list[Any], raw):
        if not isinstance(item, dict):
            continue
        entry = cast(dict[str, Any], item)
        number, confidence = entry.get("tool"), entry.get("confidence")
        if isinstance(number, str) and number.strip().isdigit():
            number = int(number)
        if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= len(keys):
            continue
        if not isinstance(confidence, int | float) or isinstance(confidence, bool):
            confidence = 0.5  # a pick without a usable confidence: as sure as a coin
        reason = entry.get("reason")
        picks.setdefault(
            keys[number - 1], LLMPick(round(min(1.0, max(0.0, float(confidence))), 3), str(reason or "")[:300])
        )
    if raw and not picks:
        raise LLMUnavailable("The LLM chose no listed candidate.", reason="bad_answer")
    return picks
