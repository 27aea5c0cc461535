"""Memory strength (1.0-2.0) from intent, importance keywords and explicit save requests."""

from __future__ import annotations

from dataclasses import dataclass

from activation.intent_data import Intent

INTENT_BASE: dict[Intent, float] = {
    Intent.SAVE_DECISION: 1.3,  # decisions are referred back to most
    Intent.SAVE_PREFERENCE: 1.1,
    Intent.UPDATE_INFO: 1.1,  # a correction should outlive what it corrects
    Intent.SAVE_FACT: 1.0,
}
EXPLICIT_SAVE_BOOST = 0.2
MIN_STRENGTH, MAX_STRENGTH = 1.0, 2.0


@dataclass(frozen=True, slots=True)
class ImportanceScore:
    strength: float
    base: float
    keyword_boost: float
    explicit_boost: float
    explanation: str

    def to_json(self) -> dict[str, object]:
        return {"strength": self.strength, "base": self.base, "keyword_boost": self.keyword_boost,
                "explicit_boost": self.explicit_boost, "explanation": self.explanation}  # fmt: skip


class ImportanceScorer:
    """Deterministic: base by intent + strongest keyword boost + explicit-request boost."""

    def score(
        self, *, intent: Intent | None, keyword_boost: float = 0.0, explicit_save: bool = False
    ) -> ImportanceScore:
        base = INTENT_BASE.get(intent, 1.0) if intent is not None else 1.0
        explicit = EXPLICIT_SAVE_BOOST if explicit_save else 0.0
        raw = base + max(0.0, keyword_boost) + explicit
        strength = round(min(MAX_STRENGTH, max(MIN_STRENGTH, raw)), 2)
        parts = [f"base {base:.1f} ({intent.value if intent else 'no intent'})"]
        if keyword_boost:
            parts.append(f"+{keyword_boost:.2f} importance keyword")
        if explicit:
            parts.append(f"+{explicit:.1f} explicit save request")
        if strength != round(raw, 2):
            parts.append(f"clamped to {strength}")
        return ImportanceScore(strength, base, keyword_boost, explicit, ", ".join(parts))


__all__ = ["EXPLICIT_SAVE_BOOST", "INTENT_BASE", "ImportanceScore", "ImportanceScorer"]
