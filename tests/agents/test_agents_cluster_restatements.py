"""A merge joins only restatements: one speaker's claim said again in one session.

Transcript lines ("[date] Speaker: text") as the MCP server saves conversation turns; a fixed
``now``; the hashing fake where only the rule matters, the real model where similarity does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from agents_helpers import NOW, add
from fakes import HashingEmbedder

from cortexgraph.agents.cluster_detector import ClusterAction, ClusterConfig, ClusterDetector
from cortexgraph.agents.restatement import line_of, refusal
from cortexgraph.agents.semantic_merge import SemanticMerge
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.models import Memory, MemoryStatus

DAY = "[2:05 pm on 8 May, 2023]"


def _merges(report) -> list[set[str]]:
    return [set(c.memory_ids) for c in report.clusters if c.action is ClusterAction.MERGE]


def test_a_question_and_its_answer_are_related_not_merged(store, embedder):
    q = add(store, f"{DAY} Caroline: Did you paint the sunset over the lake last weekend?")
    a = add(store, f"{DAY} Melanie: Yes, I did paint the sunset over the lake last weekend.")
    report = ClusterDetector(store, embedder).run(now=NOW, dry_run=True)
    assert _merges(report) == []
    assert {frozenset((p.id1, p.id2)) for p in report.related} == {frozenset((q.id, a.id))}
    assert dict(report.refused_by)["speakers"] == 1


def test_one_speakers_question_is_not_merged_with_her_statement(store, embedder):
    add(store, f"{DAY} Melanie: Do you paint the sunset over the lake every weekend?")
    add(store, f"{DAY} Melanie: I paint the sunset over the lake every weekend.")
    report = ClusterDetector(store, embedder).run(now=NOW, dry_run=True)
    assert _merges(report) == []
    assert dict(report.refused_by) == {"question": 1}


def test_the_same_words_on_two_days_are_two_events(store, embedder):
    # Unstamped lines saved on different days: "yesterday" is another day each time. Only
    # the very same words said again join across sessions.
    add(store, "Caroline: I went to the support group yesterday and it was so powerful.")
    add(store, "Caroline: Went to the support group yesterday, it was so powerful!", age_days=17)
    report = ClusterDetector(store, embedder).run(now=NOW, dry_run=True)
    assert _merges(report) == []
    assert dict(report.refused_by) == {"sessions": 1}
    same = add(store, "Caroline: I went to the support group yesterday, and it was so powerful!")
    old = add(
        store,
        "Caroline: I went to the support group yesterday and it was so powerful.",
        age_days=30,
    )
    merges = _merges(ClusterDetector(store, embedder).run(now=NOW, dry_run=True))
    assert any({same.id, old.id} <= m for m in merges)


def test_a_restatement_merges_without_the_reply_between_its_two_halves(store, embedder):
    first = add(store, f"{DAY} Jon: I am starting a dance studio because dancing is my passion.")
    reply = add(store, f"{DAY} Gina: A dance studio because dancing is your passion, awesome!")
    again = add(store, f"{DAY} Jon: Starting a dance studio because dancing is my passion!")
    report = ClusterDetector(store, embedder).run(now=NOW, dry_run=True)
    assert _merges(report) == [{first.id, again.id}]
    assert reply.id in {i for p in report.related for i in (p.id1, p.id2)}


def test_a_merge_run_links_the_related_pairs_it_did_not_merge(store, embedder):
    q = add(store, f"{DAY} Caroline: Did you paint the sunset over the lake last weekend?")
    a = add(store, f"{DAY} Melanie: Yes, I did paint the sunset over the lake last weekend.")
    found = ClusterDetector(store, embedder).run(now=NOW)
    report = SemanticMerge(store).run(now=NOW, clusters=found.clusters, related=found.related)
    assert report.related_linked == 1 and report.count("merged") == 0
    (rel,) = store.relations(memory_id=q.id)
    assert (rel.relation_type, {rel.from_memory_id, rel.to_memory_id}) == (
        "related",
        {q.id, a.id},
    )
    again = SemanticMerge(store).run(now=NOW, clusters=(), related=found.related)
    assert again.related_linked == 0  # already related: nothing added twice


class _BatchBiased:
    """A model whose vector of a text moves with its batchmates (as the int8 graph's did):
    here every vector leans towards the batch's first text."""

    name = "batch-biased"

    def __init__(self) -> None:
        self.inner = HashingEmbedder()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vecs = self.inner.embed(texts)
        if len(texts) > 1:
            vecs = vecs + 0.6 * vecs[0]
        return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


# Two pairs sharing 4 of 8 words (cosine 0.5 on their own vectors): a batch led by one of a
# pair lifted that pair to 0.79, over the merge bar. And one pair sharing 7 of 8 (0.875).
TEXTS = [
    "alpha beta gamma delta epsilon zeta eta theta",
    "alpha beta gamma delta iota kappa lambda mu",
    "nu xi omicron pi rho sigma tau upsilon",
    "nu xi omicron pi phi chi psi omega",
    "one two three four five six seven eight",
    "one two three four five six seven nine",
]


def _merged_texts(order: list[str]) -> list[tuple[str, ...]]:
    """The merges of one run over ``order``, its memories' ids in that order."""
    store = InMemoryStore()
    store.put_many(
        Memory(id=f"m{k}", content=text, created_at=int(NOW), last_used=int(NOW))
        for k, text in enumerate(order)
    )
    report = ClusterDetector(store, _BatchBiased()).run(now=NOW, dry_run=True)
    by_id = {m.id: m.content for m in store.list()}
    return sorted(tuple(sorted(by_id[i] for i in c)) for c in _merges(report))


def test_merge_decisions_do_not_depend_on_batch_order():
    runs = [_merged_texts(order) for order in (TEXTS, TEXTS[2:] + TEXTS[:2])]
    assert runs[0] == runs[1] == [tuple(sorted(TEXTS[4:]))]


@pytest.fixture(scope="module")
def minilm():
    from cortexgraph.storage.embeddings import default_embedder

    model = default_embedder()
    if model is None:
        pytest.skip("the embedding model package is not installed")
    return model


def test_two_feelings_about_one_event_are_not_merged_with_the_real_model(minilm):
    # The example: merged at cohesion 0.75 when the date and speaker were compared too.
    store = InMemoryStore()
    day = "[1:56 pm on 8 May, 2023] Caroline:"
    add(store, f"{day} I went to a LGBTQ support group yesterday and it was so powerful.")
    add(store, f"{day} The support group has made me feel accepted and given me courage.")
    report = ClusterDetector(store, minilm).run(now=NOW, dry_run=True)
    assert _merges(report) == []


def test_a_reworded_restatement_still_merges_with_the_real_model(minilm):
    store = InMemoryStore()
    day = "[4:06 pm on 23 July, 2023] Gina:"
    a = add(store, f"{day} Yeah Jon! Let's make a difference and show them what we got.")
    b = add(store, f"{day} Let's go for it, Jon! Together we can make a difference!")
    add(store, "[4:06 pm on 23 July, 2023] Jon: Let's make a difference together, Gina!")
    report = ClusterDetector(store, minilm).run(now=NOW, dry_run=True)
    assert _merges(report) == [{a.id, b.id}]
    assert all(m.status is MemoryStatus.ACTIVE for m in store.list())  # a dry run


def test_two_notes_stating_the_same_numbers_merge_below_the_mean_bar(minilm):
    # The demo set's wording (ours): MiniLM puts them at 0.67, under the 0.75 merge bar; the
    # same time and the time it replaced, said again, make them one fact.
    store = InMemoryStore()
    a = add(store, "Billing daily standup is now at 9:45 instead of 10.")
    b = add(
        store, "Aisha moved billing standup to 9:45 so it doesn't clash with her sales sync at 10."
    )
    # Two notes of one topic at the same similarity, stating no numbers: not merged.
    add(store, "Docs search uses Algolia DocSearch; Jonas added custom ranking for the API pages.")
    add(store, "Algolia approved DocSearch for the docs site; the crawler config is in the repo.")
    report = ClusterDetector(store, minilm).run(now=NOW, dry_run=True)
    assert _merges(report) == [{a.id, b.id}]
    off = replace(ClusterConfig(), same_numbers_merge=False)
    assert _merges(ClusterDetector(store, minilm, config=off).run(now=NOW, dry_run=True)) == []


def test_two_transcript_lines_stating_the_same_numbers_keep_the_line_bar(minilm):
    # Lines of one conversation share its numbers as they share its topic (0.78 here).
    store = InMemoryStore()
    day = "[1:56 pm on 8 May, 2023] Aisha:"
    add(store, f"{day} Billing daily standup is now at 9:45 instead of 10.")
    add(
        store,
        f"{day} I moved billing standup to 9:45 so it doesn't clash with my sales sync at 10.",
    )
    assert _merges(ClusterDetector(store, minilm).run(now=NOW, dry_run=True)) == []


SHARED = Path("/work/shared/data/locomo_dev/locomo_dev.json")
PAIRS = Path(__file__).resolve().parents[1] / "fixtures" / "locomo_restatements" / "pairs.jsonl"


@pytest.fixture(scope="module")
def labelled_lines():
    """The labelled pairs with their turns' text, read from the shared LoCoMo copy."""
    if not SHARED.exists():
        pytest.skip(f"LoCoMo dev data not at {SHARED} (CC BY-NC: never copied into the repo)")
    turns = {}
    for sample in json.loads(SHARED.read_text(encoding="utf-8")):
        conv = sample["conversation"]
        for key, value in conv.items():
            if key.startswith("session_") and isinstance(value, list):
                when = conv.get(f"{key}_date_time", "")
                for t in value:
                    turns[(sample["sample_id"], t["dia_id"])] = (
                        f"[{when}] {t['speaker']}: {t['text']}"
                    )
    rows = [json.loads(x) for x in PAIRS.read_text(encoding="utf-8").splitlines() if x.strip()]
    return [
        (
            r,
            line_of(Memory(id="a", content=turns[(r["sample_id"], r["a"])])),
            line_of(Memory(id="b", content=turns[(r["sample_id"], r["b"])])),
        )
        for r in rows
    ]


def test_the_rule_keeps_every_labelled_reply_apart_and_lets_restatements_through(
    labelled_lines,
):
    assert len(labelled_lines) == 400
    for row, a, b in labelled_lines:
        why = refusal(a, b, "most")
        if row["reason"] == "different speakers":
            assert why == "speakers", row
        if row["label"] == "restatement":
            assert why is None, row


def test_lines_share_one_string_per_distinct_word():
    """A consolidation run holds every active memory's parsed line at once: a word said in a
    thousand lines is one string, not a thousand (15 MB of word strings at 10k memories)."""
    from cortexgraph.agents.restatement import utterance

    first = utterance("Ana: we moved the Billing ledger to Postgres")
    second = utterance("Tom: did the billing LEDGER move?")
    for word in ("billing", "ledger"):  # lowered from two spellings each
        a, b = (w for line in (first, second) for w in line.words if w == word)
        assert a is b, word


def test_only_a_transcript_line_keeps_its_words():
    """Only lines with a speaker have a session, so only theirs are compared ("the same
    words"): a note's are never read (a third of reading 2,142 lines in a 10k run)."""
    from cortexgraph.agents.restatement import utterance

    note = utterance("We moved the Billing ledger to Postgres.")
    line = utterance("[1:56 pm on 8 May, 2023] Ana: We moved the Billing ledger to Postgres.")
    assert note.words == () and note.speaker is None
    assert line.words == ("we", "moved", "the", "billing", "ledger", "to", "postgres")
    # Whether a line asks is read as before, with or without a question mark to split on.
    assert not utterance("Ana: no question here. None at all").ends_in_question
    assert utterance("Ana: fine. Did it move? [shares a photo: a ledger]").ends_in_question
    assert utterance("Did it move? Where to? It did.").mostly_questions


def test_lines_read_in_bulk_are_the_lines_read_one_by_one(store):
    from cortexgraph.agents.restatement import lines_of

    texts = [
        f"{DAY} Caroline: Did you paint the sunset? I did!",
        "Caroline: see you [shares a photo: a lake]",
        "Note: the ledger uses Postgres 16.",
        "  plain fact, no speaker  ",
        "[8 May, 2023] Dr. Haas: Is it done? Is it? Yes.",
    ]
    memories = [add(store, t) for t in texts]
    assert lines_of(memories) == [line_of(m) for m in memories]
    assert lines_of([]) == []
