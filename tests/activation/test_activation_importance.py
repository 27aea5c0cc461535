from __future__ import annotations

from cortexgraph.activation import ImportanceScorer, Intent, PhraseDetector


def test_base_by_intent():
    s = ImportanceScorer()
    assert s.score(intent=Intent.SAVE_DECISION).strength == 1.3
    assert s.score(intent=Intent.SAVE_PREFERENCE).strength == 1.1
    assert s.score(intent=Intent.SAVE_FACT).strength == 1.0
    assert s.score(intent=None).strength == 1.0


def test_strongest_boost_wins_and_strength_is_clamped_to_two():
    s = ImportanceScorer()
    boost = PhraseDetector().detect("Critical: never forget this").importance_boost
    assert boost == 0.8  # never forget (0.8) beats critical (0.6): boosts do not add up
    result = s.score(intent=Intent.SAVE_DECISION, keyword_boost=boost, explicit_save=True)
    assert result.strength == 2.0 and "clamped" in result.explanation  # 1.3 + 0.8
    mid = s.score(intent=Intent.SAVE_FACT, keyword_boost=0.25)
    assert mid.strength == 1.25 and "keyword" in mid.explanation
    explicit = s.score(intent=Intent.SAVE_FACT, keyword_boost=0.0, explicit_save=True)
    assert explicit.strength == 1.2 and "explicit" in explicit.explanation
    both = s.score(intent=Intent.SAVE_FACT, keyword_boost=0.5, explicit_save=True)
    assert both.strength == 1.5 and "explicit" not in both.explanation


def test_the_specs_keyword_boosts():
    detect = PhraseDetector().detect
    for text, boost in (
        ("We decided to drop Python 3.9", 0.3),
        ("We're going with Vite", 0.3),
        ("I prefer tabs", 0.2),
        ("I like short answers", 0.1),
        ("This is important", 0.4),
        ("Essential reading", 0.5),
        ("Remember this: the door code is 4711", 0.5),
        ("Crucial: back up first", 0.6),
        ("Never forget the keys", 0.8),
        ("It is not important", 0.0),
        ("He is unlikely to come", 0.0),
    ):
        assert detect(text).importance_boost == boost, text
    s = ImportanceScorer()
    assert s.score(intent=Intent.SAVE_PREFERENCE, keyword_boost=0.2).strength == 1.3


def test_deterministic():
    s = ImportanceScorer()
    a = s.score(intent=Intent.UPDATE_INFO, keyword_boost=0.3, explicit_save=True)
    assert a == s.score(intent=Intent.UPDATE_INFO, keyword_boost=0.3, explicit_save=True)
