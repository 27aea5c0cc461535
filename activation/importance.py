"""Memory strength (0.0-2.0, as the spec clamps) from intent, importance keywords and explicit
save requests.

As in the spec's ImportanceScorer: base by intent + the strongest matched keyword boost
(activation.phrases.IMPORTANCE_PATTERNS: never forget 0.8, critical/crucial 0.6, essential and
"remember this" 0.5, important 0.4, decided and "going with" 0.3, prefer 0.2, like 0.1),
clamped to 0.0-2.0. Boosts never add up: the strongest wins. One addition: an explicit save
request with no keyword of the table ("don't forget", "keep in mind") counts as a 0.2 boost,
so an explicit request never scores below an incidental "prefer".
"""

from __future__ import annotations

from dataclasses import dataclass

from cortexgraph.activation.intent_data import Intent

INTENT_BASE: dict[Intent, float] = {
    Intent.SAVE_DECISION: 1.3,  # decisions are referred back to most
    Intent.SAVE_PREFERENCE: 1.1,
    Intent.UPDATE_INFO: 1.1,  # a correction should outlive what it corrects
    Intent.SAVE_FACT: 1.0,
}
EXPLICIT_SAVE_BOOST = 0.2
MIN_STRENGTH, MAX_STRENGTH = 0.0, 2.0  # every base is >= 1.0, so 1.0 is the practical floor


@dataclass(frozen=True, slots=True)
class ImportanceScore:
    strength: float
    base: float
    keyword_boost: float
    explicit_boost: float
    explanation: str

    def to_json(self) -> dict[str, object]:
        return {
            "strength": self.strength,
            "base": self.base,
            "keyword_boost": self.keyword_boost,
            "explicit_boost": self.explicit_boost,
            "explanation": self.explanation,
        }


class ImportanceScorer:
    """Deterministic: base by intent + the strongest boost (keyword or explicit request)."""

    def score(
        self, *, intent: Intent | None, keyword_boost: float = 0.0, explicit_save: bool = False
    ) -> ImportanceScore:
        base = INTENT_BASE.get(intent, 1.0) if intent is not None else 1.0
        keyword_boost = max(0.0, keyword_boost)
        # The strongest boost wins; the explicit request only counts when it is the larger.
        explicit = (
            EXPLICIT_SAVE_BOOST if explicit_save and keyword_boost < EXPLICIT_SAVE_BOOST else 0.0
        )
        raw = base + max(keyword_boost, explicit)
        strength = round(min(MAX_STRENGTH, max(MIN_STRENGTH, raw)), 2)
        parts = [f"base {base:.1f} ({intent.value if intent else 'no intent'})"]
        if keyword_boost and not explicit:
            parts.append(f"+{keyword_boost:.2f} importance keyword")
        if explicit:
            parts.append(f"+{explicit:.1f} explicit save request")
        if strength != round(raw, 2):
            parts.append(f"clamped to {strength}")
        return ImportanceScore(strength, base, keyword_boost, explicit, ", ".join(parts))


__all__ = ["EXPLICIT_SAVE_BOOST", "INTENT_BASE", "ImportanceScore", "ImportanceScorer"]
