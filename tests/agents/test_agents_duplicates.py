from __future__ import annotations

import itertools

import numpy as np
from agents_helpers import NOW, add

from cortexgraph.agents.cluster_detector import ClusterAction, ClusterConfig, ClusterDetector
from cortexgraph.agents.cluster_grouping import strongest_per_row
from cortexgraph.agents.duplicates import DetailExtractor, agree, conflict, numbers_in

WORDS = "the billing team decided to use kafka for invoice events after the long review"


def test_numbers_are_normalised_and_trivial_ones_ignored():
    assert numbers_in("standup moved from 10:00 to 9:45, a 1:1 at 14:00") == {"10", "9:45", "14"}
    assert numbers_in("no digits here") == frozenset()


def test_swapped_numbers_or_names_conflict_added_details_do_not(store):
    a = add(store, "Sam chose Redis for billing. Ticket 4411.", entities=["Sam", "Redis"])
    b = add(store, "Sam chose Redis for billing. Ticket 9120.", entities=["Sam", "Redis"])
    c = add(store, "Aisha chose Redis for billing. Ticket 4411.", entities=["Aisha", "Redis"])
    d = add(store, "Sam picked Redis for billing (ticket 4411, PR 212).", entities=["Sam", "Redis"])
    e = add(store, "sam chose redis for billing", entities=[])  # names found in the text
    ex = DetailExtractor([a, b, c, d, e])
    da, db, dc, dd, de = (ex.details(m) for m in (a, b, c, d, e))
    assert "numbers differ" in conflict(da, db)
    assert "names differ" in conflict(da, dc)
    assert conflict(da, dd) is None  # d adds a number, swaps none
    assert de.names == {"sam", "redis"} and conflict(da, de) is None


def test_names_written_as_code_are_names(store):
    # Two notes on tenant isolation, about different tables: the entities (billing-service,
    # PostgreSQL) are the same, the snake_case and dotted names are what differs.
    tables = add(
        store,
        "Dunning tables: dunning_runs and dunning_steps, both with tenant_id + RLS policy.",
        entities=["billing-service"],
    )
    policy = add(
        store,
        "Every billing table has a tenant_id column and an RLS policy keyed on "
        "current_setting('app.tenant_id').",
        entities=["billing-service"],
    )
    reworded = add(
        store, "dunning_runs and dunning_steps carry tenant_id and an RLS policy, e.g. v2.3."
    )
    ex = DetailExtractor([tables, policy, reworded])
    dt, dp, dr = (ex.details(m) for m in (tables, policy, reworded))
    assert {"dunning_runs", "dunning_steps", "tenant_id"} <= dt.names
    assert {"current_setting", "app.tenant_id"} <= dp.names
    assert not {"e.g", "v2.3", "2.3"} & dr.names
    assert "names differ" in conflict(dt, dp)
    assert conflict(dt, dr) is None
    before = DetailExtractor([tables, policy], identifiers=False)
    assert conflict(before.details(tables), before.details(policy)) is None


def test_same_numbers_agree_only_when_both_state_them(store):
    ex = DetailExtractor([])
    standup = ex.details(add(store, "Billing standup is now at 9:45 instead of 10."))
    moved = ex.details(add(store, "Aisha moved standup to 9:45 to miss her 10:00 sales sync."))
    other = ex.details(add(store, "Standup is at 9:30 now."))
    plain = ex.details(add(store, "Standup moved earlier."))
    assert agree(standup, moved)
    assert not agree(standup, other) and not agree(plain, plain)


def test_guard_keeps_facts_that_differ_in_a_number_apart(store, embedder):
    a = add(store, f"{WORDS} ticket 4411")
    b = add(store, f"{WORDS} ticket 9120")
    c = add(store, f"{WORDS} ticket 4411 again")
    cfg = ClusterConfig(link_threshold=0.8)
    report = ClusterDetector(store, embedder, config=cfg).run(now=NOW, dry_run=True)
    clustered = [set(cl.memory_ids) for cl in report.clusters]
    assert clustered == [{a.id, c.id}] and report.refused_conflicts >= 1
    off = ClusterConfig(link_threshold=0.8, guard_details=False)
    unguarded = ClusterDetector(store, embedder, config=off).run(now=NOW, dry_run=True)
    assert [set(cl.memory_ids) for cl in unguarded.clusters] == [{a.id, b.id, c.id}]


def test_no_cluster_chains_two_conflicting_memories_through_a_third(store, embedder):
    # b is close to both; a and c swap the number, so at most one of them joins b.
    a = add(store, f"{WORDS} budget 40")
    b = add(store, f"{WORDS} budget")
    c = add(store, f"{WORDS} budget 60")
    report = ClusterDetector(store, embedder, config=ClusterConfig(link_threshold=0.8)).run(
        now=NOW, dry_run=True
    )
    (cl,) = report.clusters
    assert b.id in cl.memory_ids and len({a.id, c.id} & set(cl.memory_ids)) == 1
    assert cl.action is ClusterAction.MERGE


def test_strongest_per_row_keeps_each_members_best_links():
    i = np.array([0, 0, 0, 1, 2])
    j = np.array([1, 2, 3, 2, 3])
    s = np.array([0.9, 0.8, 0.7, 0.95, 0.6], dtype=np.float32)
    ki, kj, ks = strongest_per_row(i, j, s, 1)
    kept = set(zip(ki.tolist(), kj.tolist(), strict=True))
    # 0's best is (0,1); 1's best (1,2); 2's best (1,2); 3's best (0,3)
    assert kept == {(0, 1), (1, 2), (0, 3)}
    assert sorted(ks.tolist()) == sorted([np.float32(0.9), np.float32(0.95), np.float32(0.7)])


def test_a_merge_is_not_reopened_with_memories_it_already_weighed(store, embedder):
    from cortexgraph.agents.merge_ops import PROVENANCE_KEY

    merged_extra = {PROVENANCE_KEY: {"sources": [], "merged_at": int(NOW - 3600)}}
    merged = add(store, f"{WORDS} budget", age_days=2, extra=merged_extra)
    older = add(store, f"{WORDS} budget!", age_days=1)  # existed when the merge happened
    report = ClusterDetector(store, embedder, config=ClusterConfig(link_threshold=0.8)).run(
        now=NOW, dry_run=True
    )
    assert report.clusters == () and report.refused_conflicts == 1
    newer = add(store, f"{WORDS} budget.", age_days=0)  # arrived after it: judged now
    report = ClusterDetector(store, embedder, config=ClusterConfig(link_threshold=0.8)).run(
        now=NOW, dry_run=True
    )
    (cl,) = report.clusters
    assert newer.id in cl.memory_ids and len(cl.memory_ids) == 2
    assert {merged.id, older.id} & set(cl.memory_ids)


def test_a_loosely_related_memory_never_rides_into_a_tight_pairs_merge(store, embedder):
    a = add(store, "alpha beta gamma delta epsilon zeta eta theta iota kappa")
    b = add(store, "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda")
    add(store, "alpha beta gamma delta epsilon zeta omega psi chi phi")
    cfg = ClusterConfig(link_threshold=0.55, merge_cohesion=0.9, review_cohesion=0.55)
    (core,) = ClusterDetector(store, embedder, config=cfg).run(now=NOW, dry_run=True).clusters
    assert set(core.memory_ids) == {a.id, b.id} and core.action is ClusterAction.MERGE


def test_complete_linkage_never_chains_two_unlike_memories_through_a_third(store, embedder):
    # a-b and b-c share 6 of 8 words (cosine 0.75), a-c only 4 (0.5): single linkage made
    # one group of the three; every pair of a cluster must now be linked.
    a = add(store, "w1 w2 w3 w4 w5 w6 a1 a2")
    b = add(store, "w1 w2 w3 w4 w5 w6 b1 b2")
    c = add(store, "w1 w2 w3 w4 b1 b2 c1 c2")
    cfg = ClusterConfig(link_threshold=0.7, merge_cohesion=0.7, review_cohesion=0.7)
    report = ClusterDetector(store, embedder, config=cfg).run(now=NOW, dry_run=True)
    (cl,) = report.clusters
    assert b.id in cl.memory_ids and len(cl.memory_ids) == 2
    assert not {a.id, c.id} <= set(cl.memory_ids)


def test_names_are_the_vocabularys_words_and_adjacent_word_pairs(store):
    """A known entity is named when the text holds it as a word or two adjacent words, in
    order; an entry of three words never matches (the text's names are single words and
    pairs), the same as joining every pair of words would find."""
    known = add(
        store,
        "known names",
        entities=["Omar Silva", "new york", "Kafka", "a b c", "york new", "app.tenant_id"],
    )
    text = "omar silva met a b c in New York; kafka and app.tenant_id, omar"
    note = add(store, text)
    names = DetailExtractor([known, note]).details(note).names
    words = text.lower().replace(";", "").replace(",", "").split()
    joined = {*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))}
    vocabulary = {e.lower() for e in known.entities}
    assert names == (joined & vocabulary) | {"app.tenant_id"}
    assert names == {"omar silva", "new york", "kafka", "app.tenant_id"}
