"""A run whose similarity is another than the last run's (issue 32).

Without an embedding model a run's cluster step weighs TF-IDF (``--no-embeddings``, or a model
that failed to load that hour). The next run with the model must judge what the TF-IDF run
judged as a full run with the model does, though those memories did not change since.
"""

from __future__ import annotations

from agents_helpers import NOW, add
from fakes import HashingEmbedder, RecordingSink

from cortexgraph.agents import incremental
from cortexgraph.agents.memory_tracker import InMemoryIssueTracker
from cortexgraph.agents.pipeline import Pipeline, run_agents
from cortexgraph.storage import InMemoryStore

SYNONYMS = {"automobil": "car", "fix": "repair", "garag": "workshop"}


def _pipeline(store, embedder):
    return Pipeline(store, embedder=embedder, sink=RecordingSink(), tracker=InMemoryIssueTracker())


def _clusters(report):
    return {(c.memory_ids, c.action) for c in report.reports["cluster"].clusters}


def test_the_model_back_judges_what_tfidf_judged():
    store = InMemoryStore()
    add(store, "the car was repaired at the workshop", age_days=2)
    add(store, "automobile fixed in the garage", age_days=1)
    add(store, "We deploy on Tuesdays.", age_days=1)
    model = HashingEmbedder(synonyms=SYNONYMS)
    first = _pipeline(store, None)  # TF-IDF: the two share no word that weighs
    changes = incremental.begin(first, None, NOW)
    report = run_agents(first, now=NOW, scope=first.scope, dry_run=False)
    assert report.reports["cluster"].method == "tfidf" and not _clusters(report)
    state = incremental.state_after(first, changes, report, NOW)

    later = NOW + 3600
    full = run_agents(_pipeline(store, model), now=later, dry_run=True)
    assert _clusters(full)  # the model says they are one fact
    nxt = _pipeline(store, model)
    incremental.begin(nxt, state, later)
    again = run_agents(nxt, now=later, dry_run=True, scope=nxt.scope)
    assert _clusters(again) == _clusters(full)


class _Broken(HashingEmbedder):
    """The model that failed to load this hour."""

    def embed(self, texts):
        raise RuntimeError("model file missing")


def test_a_run_whose_model_failed_does_not_end_clean_and_the_next_judges_again():
    store = InMemoryStore()
    add(store, "the car was repaired at the workshop", age_days=2)
    add(store, "We deploy on Tuesdays.", age_days=1)
    model = HashingEmbedder(synonyms=SYNONYMS)
    first = _pipeline(store, model)
    with store.recording_writes() as writes:
        changes = incremental.begin(first, None, NOW, embeddings=True)
        report = run_agents(first, now=NOW, scope=first.scope)
        state = incremental.state_after(first, changes, report, NOW, writes, {"f": (1, 2, 3)})
    assert state["similarity"] == "embeddings:hashing-test" and "files" in state

    add(store, "automobile fixed in the garage", age_days=0.5)
    broken = _pipeline(store, _Broken(synonyms=SYNONYMS))
    with store.recording_writes() as writes:
        changes = incremental.begin(broken, state, NOW + 3600, embeddings=True)
        report = run_agents(broken, now=NOW + 3600, scope=broken.scope)
        after = incremental.state_after(
            broken, changes, report, NOW + 3600, writes, {"f": (1, 2, 3)}
        )
    assert report.reports["cluster"].method == "tfidf" and not _clusters(report)
    assert "files" not in after  # the next run after no change opens the store

    later = NOW + 7200
    full = run_agents(_pipeline(store, model), now=later, dry_run=True)
    assert _clusters(full)
    nxt = _pipeline(store, model)
    incremental.begin(nxt, after, later, embeddings=True)
    again = run_agents(nxt, now=later, dry_run=True, scope=nxt.scope)
    assert _clusters(again) == _clusters(full)
