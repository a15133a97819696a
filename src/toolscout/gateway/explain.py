"""Why a search ranked its hits as it did: each ranker's part in each hit, and, with smart mode on,
what each of its selection methods makes of it (`Gateway.explain_search`).

The hits are those of the search itself, in its order and under the same scope, rules and floor
(`SearchIndex.explain`); the parts come from the backend (`search.base.explain_hits`). Smart mode's
scores are its selection (`smart.selection.choose`) with the LLM's picks smart mode still holds for
that request (`Gateway.llm_picks`): explaining never asks an LLM itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolscout.config.models import SmartConfig

if TYPE_CHECKING:
    from toolscout.search.base import Explained, MethodHit
    from toolscout.smart.selection import Key, LLMPick

RANKERS = ("lexical", "names", "embeddings", "ranker", "tags", "fusion")
"""The keys of `ExplainedHit.contributions`, in the order a table shows them."""


@dataclass(frozen=True)
class ExplainedHit:
    """One hit of a search with each ranker's part in it.

    `relevance` is the search's own (what `search_tools` answers); `contributions` has the keys of
    `RANKERS` that took part (`lexical`, `names`, `embeddings`, `ranker` with the learned ranker,
    `tags` when a tag the query names sets the hit's least relevance, and `fusion`, the score the
    ranking sorts by); `smart`, with smart mode on, each selection
    method's score (`rule_based`, `semantic_based`, `llm` when an LLM answered) and `combined`, the
    confidence under the configured mode."""

    server: str
    tool: str
    relevance: float
    contributions: dict[str, float]
    smart: dict[str, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, as the HTTP API and `toolscout search --explain --json` give it."""
        return {
            "server": self.server,
            "tool": self.tool,
            "relevance": self.relevance,
            "contributions": self.contributions,
            "smart": self.smart,
        }


def explained(found: Sequence[Explained], smart: Mapping[Key, dict[str, float]] | None) -> list[ExplainedHit]:
    """The hits with their parts in `RANKERS` order, and their smart scores when there are any."""
    hits: list[ExplainedHit] = []
    for hit, parts in found:
        key = (hit.tool.server, hit.tool.name)
        ordered = {name: parts[name] for name in RANKERS if name in parts}
        scores = None if smart is None else smart.get(key, {})
        hits.append(ExplainedHit(hit.tool.server, hit.tool.name, hit.relevance, ordered, scores))
    return hits


def smart_scores(
    candidates: Sequence[MethodHit], config: SmartConfig, llm: Mapping[Key, LLMPick] | None = None
) -> dict[Key, dict[str, float]]:
    """What smart mode's selection makes of each candidate: each method's score and the combined one."""
    from toolscout.smart.selection import choose

    choices = choose(candidates, mode=config.tool_selection_mode, weights=config.weights, llm=llm)
    found: dict[Key, dict[str, float]] = {}
    for choice in choices:
        scores = {"rule_based": choice.scores["rule"]}
        if "semantic" in choice.scores:
            scores["semantic_based"] = choice.scores["semantic"]
        if "llm" in choice.scores:
            scores["llm"] = choice.scores["llm"]
        scores["combined"] = choice.confidence
        found[choice.key] = scores
    return found
