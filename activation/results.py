"""What the activation surfaces return: small frozen dataclasses with ``to_json``."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from cortexgraph.activation.dedup import DeduplicationResult
from cortexgraph.activation.intent import IntentPrediction
from cortexgraph.activation.phrases import PhraseSignals

NO_SIGNALS_TEXT = "No strong signals detected"  # the activation spec's reasoning when empty


def reasoning_fields(steps: tuple[str, ...]) -> dict[str, Any]:
    """``reasoning`` as the activation spec and the 1.x API return it, one string ("; "
    between the steps), and the steps themselves as a list beside it."""
    return {"reasoning": "; ".join(steps) or NO_SIGNALS_TEXT, "reasoning_steps": list(steps)}


class Recommendation(StrEnum):
    MUST_SAVE = "MUST_SAVE"
    SHOULD_SAVE = "SHOULD_SAVE"
    DUPLICATE_DETECTED = "DUPLICATE_DETECTED"
    SHOULD_SEARCH = "SHOULD_SEARCH"
    NONE = "NONE"


@dataclass(frozen=True, slots=True)
class MessageAnalysis:
    should_save: bool
    action_recommendation: Recommendation
    confidence: float
    intent: IntentPrediction | None
    suggested_entities: tuple[str, ...]
    suggested_tags: tuple[str, ...]
    suggested_strength: float
    deduplication: DeduplicationResult
    phrases: PhraseSignals
    reasoning: tuple[str, ...]
    methods: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "should_save": self.should_save,
            "action_recommendation": self.action_recommendation.value,
            "confidence": round(self.confidence, 4),
            # The spec's shape: the intent as a plain string ("UNKNOWN" with intent off); the
            # classifier's confidence, probabilities and method beside it.
            "intent": self.intent.intent.value if self.intent else "UNKNOWN",
            "intent_details": self.intent.to_json() if self.intent else None,
            "suggested_entities": list(self.suggested_entities),
            "suggested_tags": list(self.suggested_tags),
            "suggested_strength": self.suggested_strength,
            "deduplication": self.deduplication.to_json(),
            "phrase_signals": self.phrases.to_json(),
            **reasoning_fields(self.reasoning),
            "methods": dict(self.methods),
            "errors": dict(self.errors),
        }


@dataclass(frozen=True, slots=True)
class RecallAnalysis:
    should_search: bool
    confidence: float
    suggested_query: str
    suggested_entities: tuple[str, ...]
    suggested_tags: tuple[str, ...]
    reasoning: tuple[str, ...]
    errors: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "should_search": self.should_search,
            "confidence": round(self.confidence, 4),
            "suggested_query": self.suggested_query,
            "suggested_entities": list(self.suggested_entities),
            "suggested_tags": list(self.suggested_tags),
            **reasoning_fields(self.reasoning),
            "errors": dict(self.errors),
        }


@dataclass(frozen=True, slots=True)
class Enrichment:
    entities: tuple[str, ...]
    tags: tuple[str, ...]
    strength: float | None  # None: the caller gave none and scoring was off or failed
    enrichment_applied: tuple[str, ...]  # which of entities / tags / strength were filled
    duplicate: DeduplicationResult | None
    errors: dict[str, str] = field(default_factory=dict)
    note: str = ""  # why nothing was analysed (layer off, everything given); "" when it ran

    @property
    def label(self) -> str:
        """What was filled in, in words, with any component that could not run and why."""
        if self.note:
            return self.note
        said = (
            "filled " + ", ".join(self.enrichment_applied)
            if self.enrichment_applied
            else "nothing to fill"
        )
        if self.errors:
            failed = "; ".join(f"{name} ({why})" for name, why in sorted(self.errors.items()))
            said += f"; unavailable: {failed}"
        return said

    def to_json(self) -> dict[str, Any]:
        return {
            "entities": list(self.entities),
            "tags": list(self.tags),
            "strength": self.strength,
            "enrichment_applied": list(self.enrichment_applied),
            "duplicate": self.duplicate.to_json() if self.duplicate else None,
            "errors": dict(self.errors),
        }


__all__ = ["Enrichment", "MessageAnalysis", "RecallAnalysis", "Recommendation"]
