from __future__ import annotations

from activation import ImportanceScorer, Intent, PhraseDetector


def test_base_by_intent():
    s = ImportanceScorer()
    assert s.score(intent=Intent.SAVE_DECISION).strength == 1.3
    assert s.score(intent=Intent.SAVE_PREFERENCE).strength == 1.1
    assert s.score(intent=Intent.SAVE_FACT).strength == 1.0
    assert s.score(intent=None).strength == 1.0


def test_keyword_and_explicit_boosts_add_and_clamp():
    s = ImportanceScorer()
    boost = PhraseDetector().detect("Critical: never forget this").importance_boost
    result = s.score(intent=Intent.SAVE_DECISION, keyword_boost=boost, explicit_save=True)
    assert result.strength == 2.0  # 1.3 + 0.5 + 0.2
    assert "explicit" in result.explanation
    over = s.score(intent=Intent.SAVE_DECISION, keyword_boost=0.9, explicit_save=True)
    assert over.strength == 2.0 and "clamped" in over.explanation
    mid = s.score(intent=Intent.SAVE_FACT, keyword_boost=0.25)
    assert mid.strength == 1.25 and "keyword" in mid.explanation


def test_deterministic():
    s = ImportanceScorer()
    a = s.score(intent=Intent.UPDATE_INFO, keyword_boost=0.3, explicit_save=True)
    assert a == s.score(intent=Intent.UPDATE_INFO, keyword_boost=0.3, explicit_save=True)
