"""What the conversation window buys on the labelled follow-ups (``data/followups.txt``).

Each follow-up ("yes, let's go with that", "what did we decide last time?") is analysed alone
and with its earlier user turns in a ``ConversationContext``; saves are scored by precision and
recall, recall requests by whether the suggested query names the topic. Used by
bench/activation_bench.py and tests/activation.
"""

from __future__ import annotations

from dataclasses import dataclass

from cortexgraph.activation.analyze import engine
from cortexgraph.activation.config import ActivationConfig
from cortexgraph.activation.context import ConversationContext
from cortexgraph.activation.intent_data import LabelledFollowUp, load_followups
from cortexgraph.activation.results import Recommendation

_SAVING = (Recommendation.MUST_SAVE, Recommendation.SHOULD_SAVE)


@dataclass(frozen=True, slots=True)
class FollowUpScores:
    saves_found: int  # SAVE follow-ups recommended for saving
    saves: int
    false_saves: int  # NONE follow-ups recommended for saving
    nones: int
    topics_found: int  # SEARCH follow-ups whose suggested query holds every topic word
    searches: int


def score_followups(
    config: ActivationConfig | None = None,
    *,
    with_context: bool = True,
    items: list[LabelledFollowUp] | None = None,
) -> FollowUpScores:
    act = engine(config)
    items = load_followups() if items is None else items
    saves_found = false_saves = topics = 0
    for i, item in enumerate(items):
        window = None
        if with_context:
            window = ConversationContext()
            for turn in item.earlier:
                window.add(turn, session_id=f"f{i}")
        if item.gold == "SEARCH":
            recall = act.analyze_for_recall(item.message, context=window, session_id=f"f{i}")
            query = recall.suggested_query.lower().split()
            topics += recall.should_search and all(w in query for w in item.topic)
            continue
        saving = (
            act.analyze_message(
                item.message, context=window, session_id=f"f{i}"
            ).action_recommendation
            in _SAVING
        )
        saves_found += saving and item.gold == "SAVE"
        false_saves += saving and item.gold == "NONE"
    count = {g: sum(1 for it in items if it.gold == g) for g in ("SAVE", "NONE", "SEARCH")}
    return FollowUpScores(
        saves_found, count["SAVE"], false_saves, count["NONE"], topics, count["SEARCH"]
    )


__all__ = ["FollowUpScores", "score_followups"]
