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


def test_articles_and_question_words_are_never_entities():
    """The demo's question "why did we choose postgres for billing" matched the entity "why"
    (of a PR-template memory) and "the" named three memories: search boosts such matches."""
    extractor = EntityExtractor(None)
    opening = extractor.extract("The shared Postgres on the old database is version 11.")
    template = extractor.extract("PR descriptions follow the template with Why / What / How.")
    assert "postgres" in opening.entities and "the" not in opening.entities
    assert not {"why", "what", "how"} & set(template.entities)


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


def test_names_differing_only_in_punctuation_or_case_are_one_entity():
    assert normalise_entity("Acme, Inc.") == normalise_entity("ACME Inc") == "acme inc"
    assert normalise_entity('"Summer Sounds"-') == normalise_entity("summer sounds")
    assert normalise_entity("St. Louis") == normalise_entity("st louis")
    # punctuation inside a word is part of the name
    assert [normalise_entity(x) for x in ("C++", "C#", "next.js", "O'Brien")] == [
        "c++",
        "c#",
        "next.js",
        "o'brien",
    ]


SECRET_TEXT = (
    "CI deploy uses key AKIAIOSFODNN7EXAMPLE and token ghp_abcdEFGH1234ijklMNOP5678qrstUVWX90; "
    "the admin password is Sup3rS3cret and the backup one sup3rs3cret, for the Billing service "
    "that Priya runs on k8s and ec2."
)


def test_secret_looking_tokens_never_become_entities(nlp):
    from cortexgraph.activation.entity_batch import BatchEntityFinder

    for ents in (
        EntityExtractor(None).extract(SECRET_TEXT).entities,
        EntityExtractor(nlp).extract(SECRET_TEXT).entities,
        BatchEntityFinder(nlp).find([SECRET_TEXT])[0],
        BatchEntityFinder(None).find([SECRET_TEXT])[0],
    ):
        joined = " ".join(ents)
        for fragment in ("akia", "ghp", "3rs3cret", "s3cret"):
            assert fragment not in joined, ents
        assert "k8s" in ents and "ec2" in ents  # short technical names stay


def test_batch_finder_reads_who_and_what_a_turn_names_not_only_its_speaker(nlp):
    from cortexgraph.activation.entity_batch import BatchEntityFinder

    texts = [
        "[1:56 pm on 8 May, 2023] Melanie: Thanks, Caroline! Luna and Oliver love the new "
        "house in Sweden, and we saw Matt Patterson play on 3 June.",
        "Alice leads the payments team at Acme Corp.",
    ]
    finder = BatchEntityFinder(nlp)
    turn, plain = finder.find(texts)
    assert finder.method == "spacy+rules"
    assert turn[0] == "melanie" and {"luna", "oliver", "sweden", "matt patterson"} <= set(turn)
    assert "caroline" not in turn  # addressed, not talked about
    assert not any("june" in e or "2023" in e for e in turn)  # dates say when, not who
    assert {"alice", "acme corp"} <= set(plain)
    rules = BatchEntityFinder(None)
    assert rules.method == "rules"
    assert {"alice", "acme corp"} <= set(rules.find(texts[1:])[0])


def test_spacy_loads_without_importing_torch():
    # thinc imports torch when it is installed: seconds of a consolidation run's entity step
    # for a pipeline that never uses it. A fresh process, so nothing imported torch before.
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from cortexgraph.activation import resources\n"
        "nlp = resources.spacy_pipeline()\n"
        "doc = next(nlp.pipe(['Alice met Bob in Paris']))\n"
        "print(sorted(e.text for e in doc.ents), 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("]")[-1].strip() == "False", out.stdout
    assert "Alice" in out.stdout
