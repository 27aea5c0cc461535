from __future__ import annotations

from cortexgraph.activation import EntityExtractor
from cortexgraph.activation.entities import normalise_entity


def test_rules_find_technical_terms_files_identifiers():
    result = EntityExtractor(None).extract(
        "We moved from MongoDB to PostgreSQL 16; see `load_config` in settings.py and the "
        "user_events table, the FastAPI app and our JsonlStore class."
    )
    ents = set(result.entities)
    assert {
        "mongodb",
        "postgresql 16",
        "load_config",
        "settings.py",
        "user_events",
        "fastapi",
        "jsonlstore",
    } <= ents
    assert "postgresql" not in ents  # contained in 'postgresql 16'
    assert result.method == "rules"
    assert result.labels["settings.py"] == "FILE"


def test_rules_fallback_finds_capitalised_names_but_not_sentence_starts():
    ents = EntityExtractor(None).extract("Actually my colleague Marcus moved to Oslo.").entities
    assert "marcus" in ents and "oslo" in ents
    assert "actually" not in ents


def test_ambiguous_words_need_capitals():
    assert "go" in EntityExtractor(None).extract("The scheduler is written in Go now.").entities
    assert "go" not in EntityExtractor(None).extract("Let's go with option B.").entities


def test_normalisation():
    assert normalise_entity("the Dr. Haas's") == "haas"
    assert normalise_entity("  Acme   Corp, ") == "acme corp"


def test_spacy_entities_with_kept_labels_and_vague_dates_dropped(nlp):
    result = EntityExtractor(nlp).extract(
        "Sarah from Acme flies to Berlin on March 3rd; we meet next week for ten years of Rust."
    )
    ents = set(result.entities)
    assert {"sarah", "acme", "berlin", "march 3rd"} <= ents
    assert "next week" not in ents and "ten years" not in ents
    assert result.method == "spacy+rules"
    assert result.labels["berlin"] == "GPE"


def test_spacy_and_rules_deduplicate(nlp):
    ents = (
        EntityExtractor(nlp).extract("We use Kubernetes. Kubernetes is great, kubernetes!").entities
    )
    assert ents.count("kubernetes") == 1
