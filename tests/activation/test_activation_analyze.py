from __future__ import annotations

import json

import pytest

from cortexgraph.activation import (
    Activation,
    ActivationConfig,
    ConversationContext,
    DeduplicationChecker,
    DuplicateAction,
    Recommendation,
    TagSuggester,
    analyze_for_recall,
    analyze_message,
    enrich_for_save,
    suggested_query,
)
from cortexgraph.activation.tags import to_tag
from cortexgraph.storage.memory_store import InMemoryStore


def test_explicit_save_is_must_save(no_models):
    a = analyze_message("Remember this: the staging server is at 10.0.4.17.", config=no_models)
    assert a.action_recommendation is Recommendation.MUST_SAVE and a.should_save
    assert a.suggested_strength >= 1.2
    assert any("explicit save" in r for r in a.reasoning)
    assert json.loads(json.dumps(a.to_json()))["action_recommendation"] == "MUST_SAVE"


def test_decision_without_phrase_is_should_save_with_decision_strength(no_models):
    a = analyze_message("We decided to move the frontend from Webpack to Vite.", config=no_models)
    assert a.action_recommendation is Recommendation.SHOULD_SAVE
    assert a.intent.intent.value == "SAVE_DECISION"
    assert a.suggested_strength == 1.6  # SAVE_DECISION 1.3 + the spec's "decided" boost 0.3
    assert {"webpack", "vite"} <= set(a.suggested_entities)
    assert "vite" in a.suggested_tags


@pytest.mark.parametrize(
    "text",
    ["Hi there!", "How do I reverse a list in Python?", "No need to remember this, just testing."],
)
def test_chatter_and_questions_do_nothing(no_models, text):
    a = analyze_message(text, config=no_models)
    assert a.action_recommendation is Recommendation.NONE and not a.should_save


def test_recall_is_should_search_and_recall_analysis_extracts_topic(no_models):
    a = analyze_message("What did we decide about the billing database?", config=no_models)
    assert a.action_recommendation is Recommendation.SHOULD_SEARCH
    r = analyze_for_recall("Remind me what we decided about the Kafka cluster?", config=no_models)
    assert r.should_search and r.confidence >= 0.9
    assert r.suggested_query == "Kafka cluster"
    assert "kafka" in r.suggested_entities
    assert not analyze_for_recall("Thanks a lot!", config=no_models).should_search


def test_suggested_query_removes_filler():
    assert (
        suggested_query("What did I tell you about Oliver's birthday again?") == "Oliver birthday"
    )


def test_duplicate_detected_against_store(no_models):
    store = InMemoryStore()
    existing = store.save("We decided to use PostgreSQL for the billing service.")
    a = analyze_message(
        "We decided to use PostgreSQL for the billing service.", store=store, config=no_models
    )
    assert a.action_recommendation is Recommendation.DUPLICATE_DETECTED
    assert not a.should_save
    assert a.deduplication.best.memory_id == existing.id
    assert a.deduplication.recommendation is DuplicateAction.MERGE
    other = analyze_message(
        "We decided to adopt Linear instead of Jira.", store=store, config=no_models
    )
    assert other.action_recommendation is Recommendation.SHOULD_SAVE


def test_dedup_thresholds_with_embeddings(embedder):
    store = InMemoryStore()
    store.save("the nightly backup job runs at two in the morning")
    checker = DeduplicationChecker(embedder, threshold=0.5, merge_threshold=0.99)
    result = checker.check("nightly backup job runs at two", store)
    assert result.method == "embedding" and result.is_duplicate
    assert result.recommendation is DuplicateAction.REVIEW
    assert not checker.check("kittens are cute", store).is_duplicate
    with pytest.raises(ValueError):
        DeduplicationChecker(threshold=0.95, merge_threshold=0.9)


def test_enrich_fills_only_what_is_missing(no_models):
    e = enrich_for_save(
        "It is critical that the backup key for Vault stays offline.",
        tags=None,
        entities=None,
        strength=None,
        config=no_models,
    )
    assert set(e.enrichment_applied) == {"entities", "tags", "strength"}
    assert "vault" in e.entities and e.tags and e.strength >= 1.4
    explicit = enrich_for_save(
        "It is critical that the key for Vault stays offline.",
        tags=["ops"],
        entities=["keys"],
        strength=1.0,
        config=no_models,
    )
    assert explicit.tags == ("ops",) and explicit.entities == ("keys",)
    assert explicit.strength == 1.0 and explicit.enrichment_applied == ()


def test_a_failing_component_never_fails_the_save(no_models, monkeypatch):
    activation = Activation(no_models)

    def boom(*args, **kwargs):
        raise RuntimeError("model exploded")

    monkeypatch.setattr(activation.entities, "extract", boom)
    monkeypatch.setattr(activation.rule_entities, "extract", boom)  # the save path's extractor
    e = activation.enrich_for_save(
        "We chose Typer for the CLI.", tags=None, entities=None, strength=None
    )
    assert "entities" in e.errors and "entities" not in e.enrichment_applied
    assert e.strength is not None and "strength" in e.enrichment_applied  # the rest still ran
    a = activation.analyze_message("Remember this: we chose Typer.")
    assert a.action_recommendation is Recommendation.MUST_SAVE and "entities" in a.errors


def test_disabled_preprocessing_and_component_flags():
    off = ActivationConfig(enabled=False)
    a = analyze_message("Remember this: the code is 1234", config=off)
    assert a.action_recommendation is Recommendation.NONE and a.intent is None
    e = enrich_for_save("x y z", tags=None, entities=None, strength=None, config=off)
    assert e.enrichment_applied == () and e.strength is None
    no_tags = ActivationConfig(use_embeddings=False, use_spacy=False, enable_tags=False)
    assert analyze_message("We decided to use Vite.", config=no_tags).suggested_tags == ()
    settings_like = {"enable_preprocessing": True, "activation_enable_dedup": False}
    assert ActivationConfig.from_mapping(settings_like).enable_dedup is False
    assert ActivationConfig.from_mapping({"enable_preprocessing": False}).enabled is False


def test_follow_up_uses_previous_turns(no_models):
    ctx = ConversationContext(max_turns=4)
    ctx.add("Should we store all timestamps in UTC from now on?", session_id="s1")
    ctx.add("We decided to use UTC for all timestamps", session_id="other")
    a = analyze_message("yes, do that", context=ctx, session_id="s1", config=no_models)
    assert any("follow-up" in r for r in a.reasoning)
    assert a.action_recommendation is Recommendation.SHOULD_SAVE
    plain = analyze_message("yes, do that", config=no_models)
    assert plain.action_recommendation is Recommendation.NONE


def test_context_is_bounded_per_session():
    ctx = ConversationContext(max_turns=2, max_sessions=2)
    for i in range(5):
        ctx.add(f"m{i}", session_id="a")
    assert [t.text for t in ctx.turns("a")] == ["m3", "m4"]
    ctx.add("x", session_id="b")
    ctx.add("y", session_id="c")
    assert ctx.turns("a") == ()  # least recently used session dropped
    assert ctx.window("z", session_id="c") == "y z"


def test_tags_keybert_path_with_fake_embedder(embedder):
    s = TagSuggester(embedder).suggest(
        "The billing service moved from MongoDB to PostgreSQL", entities=["postgresql"]
    )
    assert s.method == "keybert" and s.tags[0] == "postgresql"
    assert all(" " not in t and "#" not in t for t in s.tags)
    assert TagSuggester(None).suggest("billing service billing").method == "frequency"
    assert to_tag("#Machine Learning!") == "machine-learning"
