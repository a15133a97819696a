"""Which tool a plain-words request means: each method's score, their combination, the LLM's pick.

Smart mode has four selection modes over the candidates the gateway's search gives
(`Gateway.candidates`, each with its `rule` and `semantic` score):

* `rule_based`: names and BM25 (exact and typo-tolerant names, keywords in the descriptions);
* `semantic_based`: the embeddings' similarity;
* `llm_based`: the LLM's pick among the best candidates (at most `max_llm_candidates`), with a
  confidence and a reason;
* `hybrid`: the three weighted (by default 30/15/55 semantic/rule/LLM), the reasoning string
  showing each one's part: `Hybrid(Semantic: 0.732, Rule: 0.550 → Search: 0.815, LLM: 0.900) = 0.862`.
  Semantic and rule are not added as they stand: a cosine and a BM25 share are not on one scale,
  and added 2:1 as the weights say, the embeddings decided alone and most requests cleared the
  threshold at a poor precision (docs/BENCHMARKS.md, "Smart mode"). Their share (30 + 15) goes to
  the search's own fusion of the two, turned into the chance that the tool is the one the request
  needs by a model of its relevance, its lead over the others and its two scores (`CONFIDENCE`,
  fitted on training requests), and the LLM's share to its confidence. Without an LLM answer (none
  configured, or it failed), that chance is the confidence.

Two nudges come after: a tool the caller prefers (`preferred_tools`) and, with learning on, a tool
that ran successfully for a similar request before.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from toolscout.catalog import CatalogTool
from toolscout.config.models import SelectionMode, SmartWeights
from toolscout.errors import LLMUnavailable
from toolscout.smart.llm import ChatMessage, LLMProvider, parse_json_object

if TYPE_CHECKING:  # the search package (numpy) is imported in a worker thread at start, not with the face
    from toolscout.search.base import MethodHit

PREFERRED_BOOST = 0.1
"""Added to the confidence of a tool named in `preferred_tools` (never past 1)."""
LEARNED_BOOST = 0.2
"""Added, times the similarity of the requests, to a tool that ran successfully for a similar one."""

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


CONFIDENCE = (-1.4035, 8.1694, 0.9077, 4.1944, -2.6772)
"""The weights of `confidence_features` in the logistic model of the chance that a candidate is the
tool the request needs, fitted by scripts/fit_smart_confidence.py on the argument-extraction
requests of ../shared/train (MIT/Apache sources; requests that carry their values, as smart ones
do) in small and large catalogs, with the packaged static embeddings' cosines. On its held-out
source it runs the top tool for far more requests than the search's relevance at the same
threshold, at the same precision (docs/BENCHMARKS.md, "Smart mode")."""


def confidence_features(hits: Sequence[MethodHit]) -> list[list[float]]:
    """What the confidence model reads of each candidate: its search relevance, its lead over the best
    other candidate (negative when another leads), its rule and semantic scores, and 1 (intercept)."""
    relevances = [h.relevance for h in hits]
    features: list[list[float]] = []
    for i, hit in enumerate(hits):
        best_other = max((r for j, r in enumerate(relevances) if j != i), default=0.0)
        features.append([hit.relevance, hit.relevance - best_other, hit.rule, hit.semantic or 0.0, 1.0])
    return features


def search_confidence(hits: Sequence[MethodHit]) -> list[float]:
    """Each candidate's chance of being the tool the request needs, by the search alone (`CONFIDENCE`)."""
    return [
        round(1.0 / (1.0 + math.exp(-sum(w * x for w, x in zip(CONFIDENCE, features, strict=True)))), 4)
        for features in confidence_features(hits)
    ]


def hybrid_weights(weights: SmartWeights, *, llm: bool) -> dict[str, float]:
    """The shares of the search's fused relevance (semantic + rule) and of the LLM, summing to one
    (without an LLM answer, the search's is the whole)."""
    search = weights.semantic + weights.rule
    if not llm or weights.llm <= 0:
        return {"search": 1.0}
    total = search + weights.llm
    return {"search": search / total, "llm": weights.llm / total}


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

    `llm`: the LLM's picks (None when no LLM answered: `llm_based` and `hybrid` then decide as
    hybrid without it); `preferred`: tool names or `server/tool`; `learned`: similarity in [0, 1]
    of this request to ones each tool ran successfully for.
    """
    choices: list[Choice] = []
    searched = search_confidence(hits)
    for hit, search in zip(hits, searched, strict=True):
        key = (hit.tool.server, hit.tool.name)
        pick = llm.get(key) if llm is not None else None
        choice = _score(hit, search, mode, weights, llm is not None, pick)
        boost, notes = 0.0, list[str]()
        if hit.tool.name in preferred or f"{hit.tool.server}/{hit.tool.name}" in preferred:
            boost += PREFERRED_BOOST
            choice.scores["preferred"] = PREFERRED_BOOST
            notes.append(f"Preferred: +{PREFERRED_BOOST:.2f}")
        similarity = (learned or {}).get(key, 0.0)
        if similarity > 0:
            extra = round(LEARNED_BOOST * similarity, 3)
            boost += extra
            choice.scores["learned"] = extra
            notes.append(f"Learned: +{extra:.2f}")
        if boost:
            total = min(1.0, choice.confidence + boost)
            reasoning = f"{choice.reasoning} + {' + '.join(notes)} = {total:.3f}"
            choice = Choice(choice.tool, total, reasoning, choice.scores, choice.why)
        choices.append(choice)
    order = sorted(range(len(choices)), key=lambda i: (-choices[i].confidence, i))
    return [choices[i] for i in order]


def _score(
    hit: MethodHit, search: float, mode: SelectionMode, weights: SmartWeights, asked_llm: bool, pick: LLMPick | None
) -> Choice:
    semantic = hit.semantic
    scores = {"rule": hit.rule} | ({} if semantic is None else {"semantic": semantic})
    why = pick.reason if pick is not None else None
    if mode == "rule_based":
        return Choice(hit.tool, hit.rule, f"Rule({hit.rule:.3f})", scores)
    if mode == "semantic_based" and semantic is not None:
        return Choice(hit.tool, semantic, f"Semantic({semantic:.3f})", scores)
    if mode == "semantic_based":  # a search without embeddings: rule-based, and the answer says so
        return Choice(hit.tool, hit.rule, f"Rule({hit.rule:.3f}) [no embeddings]", scores)
    llm_score = pick.confidence if pick is not None else 0.0
    if asked_llm:
        scores["llm"] = llm_score
    if mode == "llm_based" and asked_llm:
        return Choice(hit.tool, llm_score, f"LLM({llm_score:.3f})", scores, why)
    scores["search"] = search
    shares = hybrid_weights(weights, llm=asked_llm)
    total = sum(share * scores[name] for name, share in shares.items())
    parts = [] if semantic is None else [f"Semantic: {semantic:.3f}"]
    parts.append(f"Rule: {hit.rule:.3f} → Search: {search:.3f}")
    if asked_llm:
        parts.append(f"LLM: {llm_score:.3f}")
    return Choice(hit.tool, round(total, 4), f"Hybrid({', '.join(parts)}) = {total:.3f}", scores, why)


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
