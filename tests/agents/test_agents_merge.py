from __future__ import annotations

import pytest
from agents_helpers import NOW, add

from cortexgraph.agents.cluster_detector import (
    Cluster,
    ClusterAction,
    ClusterDetector,
    cluster_id_for,
)
from cortexgraph.agents.common import LABEL_CLUSTER, AgentError
from cortexgraph.agents.merge_ops import PROVENANCE_KEY
from cortexgraph.agents.semantic_merge import MergeConfig, MergeMode, SemanticMerge
from cortexgraph.agents.sentences import union_sentences
from cortexgraph.storage.models import MemoryStatus


def test_union_keeps_every_distinct_sentence_and_collapses_near_identical():
    u = union_sentences(
        [
            "We use PostgreSQL for the ledger. Backups of the ledger run nightly.",
            "we use postgresql for the ledger! Backups of the ledger database run nightly.",
            "Alice owns the ledger.",
        ]
    )
    assert u.sentences == (
        "We use PostgreSQL for the ledger.",
        "Backups of the ledger database run nightly.",  # the fuller variant replaced it
        "Alice owns the ledger.",
    )
    assert u.collapsed == 2
    assert union_sentences(["Backups run nightly.", "Backups run nightly at 02:00."]).collapsed == 0


def test_union_does_not_collapse_sentences_that_differ_in_substance():
    u = union_sentences(["The deploy is on Monday.", "The deploy is on Friday."])
    assert len(u.sentences) == 2 and u.collapsed == 0


def _three(store):
    a = add(
        store,
        "The ledger uses PostgreSQL. It runs on db-1.",
        age_days=5,
        use_count=2,
        strength=1.2,
        tags=["db", "ledger"],
        entities=["PostgreSQL"],
    )
    b = add(
        store,
        "the ledger uses postgresql! Replicas live on db-2.",
        age_days=3,
        used_days_ago=0.5,
        use_count=1,
        tags=["ledger", "infra"],
        entities=["db-2"],
    )
    c = add(
        store,
        "The ledger uses PostgreSQL.",
        age_days=1,
        use_count=4,
        strength=0.8,
        tags=["db"],
        entities=["PostgreSQL", "ledger"],
    )
    return a, b, c


def _cluster(*ms, cohesion=0.9):
    ids = tuple(m.id for m in ms)
    return Cluster(cluster_id_for(ids), ids, cohesion, ClusterAction.MERGE)


def test_apply_merge_keeps_all_information(store):
    a, b, c = _three(store)
    other = add(store, "Unrelated note about lunch")
    rel = store.add_relation(other.id, b.id, "supports", strength=0.4, now=NOW)
    internal = store.add_relation(a.id, c.id, "related", now=NOW)
    report = SemanticMerge(store).run(now=NOW, clusters=[_cluster(a, b, c)])
    (o,) = report.outcomes
    assert o.status == "merged" and report.archived == 3
    merged = store.get(o.merged_id)
    assert merged.content == ("The ledger uses PostgreSQL. It runs on db-1. Replicas live on db-2.")
    assert merged.tags == ("db", "ledger", "infra")
    assert set(merged.entities) == {"PostgreSQL", "db-2", "ledger"}
    assert merged.created_at == a.created_at
    assert merged.last_used == max(a.last_used, b.last_used, c.last_used)
    assert merged.use_count == 7
    assert merged.strength == pytest.approx(1.2 + 0.2 * 0.9)
    assert merged.status is MemoryStatus.ACTIVE
    for s in (a, b, c):
        src = store.get(s.id)
        assert src.status is MemoryStatus.ARCHIVED and src.meta.extra["merged_into"] == merged.id
    prov = store.relations(memory_id=merged.id, relation_type="consolidated_from")
    assert {r.to_memory_id for r in prov} == {a.id, b.id, c.id}
    assert all(r.from_memory_id == merged.id for r in prov)
    moved = store.relations(memory_id=other.id)
    assert len(moved) == 1 and moved[0].to_memory_id == merged.id
    assert moved[0].relation_type == "supports" and moved[0].strength == 0.4
    assert moved[0].metadata["repointed_from"] == rel.id
    assert store.relations(memory_id=a.id, relation_type="related")[0].id == internal.id


def test_strength_is_capped(store):
    a = add(store, "one fact", strength=1.95)
    b = add(store, "one fact!", strength=1.9)
    (o,) = (
        SemanticMerge(store, config=MergeConfig(cohesion_bonus=0.5))
        .run(now=NOW, clusters=[_cluster(a, b, cohesion=1.0)])
        .outcomes
    )
    assert store.get(o.merged_id).strength == 2.0


def test_undo_restores_sources_and_relations(store):
    a, b, c = _three(store)
    other = add(store, "Unrelated note about lunch")
    rel = store.add_relation(other.id, b.id, "supports", strength=0.4, now=NOW)
    before = {m.id: m for m in store.list()}
    agent = SemanticMerge(store)
    (o,) = agent.run(now=NOW, clusters=[_cluster(a, b, c)]).outcomes
    assert agent.undo(o.merged_id, now=NOW, dry_run=True) == (a.id, b.id, c.id)
    assert store.find(o.merged_id) is not None  # a dry undo changes nothing
    agent.undo(o.merged_id, now=NOW)
    assert store.find(o.merged_id) is None
    assert {m.id: m for m in store.list()} == before
    assert [r.id for r in store.relations(memory_id=other.id)] == [rel.id]
    with pytest.raises(AgentError):
        agent.undo(other.id, now=NOW)


def test_preview_and_dry_run_write_nothing(store, tracker):
    a, b, c = _three(store)
    issue = tracker.create(
        "merge",
        labels=[LABEL_CLUSTER, "action:merge"],
        metadata={"memory_ids": [a.id, b.id], "cohesion": 0.9},
    )
    before = (store.list(), store.relations())
    for agent, dry in (
        (SemanticMerge(store, tracker), True),
        (SemanticMerge(store, tracker, MergeConfig(mode="preview")), False),
    ):
        report = agent.run(now=NOW, dry_run=dry, clusters=[_cluster(a, b, c)])
        assert {o.status for o in report.outcomes} == {"previewed"}
        assert len(report.outcomes) == 2  # the open issue and the cluster handed in
        assert "It runs on db-1." in report.outcomes[0].content + report.outcomes[1].content
    assert (store.list(), store.relations()) == before
    assert tracker.get(issue.id).status == "open"


def test_link_mode_relates_without_merging(store):
    a, b, c = _three(store)
    store.add_relation(a.id, b.id, "related", now=NOW)
    report = SemanticMerge(store, config=MergeConfig(mode=MergeMode.LINK)).run(
        now=NOW, clusters=[_cluster(a, b, c)]
    )
    assert report.outcomes[0].status == "linked"
    assert len(store.relations(relation_type="related")) == 3  # a-b existed; a-c, b-c added
    assert all(m.status is MemoryStatus.ACTIVE for m in store.list())


def test_consumes_issues_claims_and_closes(store, tracker, embedder):
    a = add(store, "Standup moved to 9:30 from Monday")
    b = add(store, "standup moved to 9:30 from monday.")
    ClusterDetector(store, embedder, tracker).run(now=NOW)
    (issue,) = tracker.query(labels=[LABEL_CLUSTER, "action:merge"], status="open")
    report = SemanticMerge(store, tracker).run(now=NOW)
    (o,) = report.outcomes
    assert o.status == "merged" and o.issue_id == issue.id and report.issues_closed == 1
    closed = tracker.get(issue.id)
    assert closed.status == "closed" and closed.assignee == "semantic-merge"
    assert tracker.close_reason(issue.id) == f"merged into {o.merged_id}"
    assert {store.get(a.id).status, store.get(b.id).status} == {MemoryStatus.ARCHIVED}
    assert SemanticMerge(store, tracker).run(now=NOW).outcomes == ()  # nothing left to do


def test_issue_claimed_by_someone_else_is_skipped(store, tracker):
    a, b, _ = _three(store)
    issue = tracker.create(
        "merge",
        labels=[LABEL_CLUSTER, "action:merge"],
        metadata={"memory_ids": [a.id, b.id], "cohesion": 0.9},
    )
    tracker.claim(issue.id, "a-person")
    tracker.update(issue.id, status="open")  # open but assigned to someone else
    (o,) = SemanticMerge(store, tracker).run(now=NOW).outcomes
    assert o.status == "skipped" and store.get(a.id).status is MemoryStatus.ACTIVE


def test_stale_issue_is_closed_as_skipped(store, tracker):
    a, b, _ = _three(store)
    store.update(b.id, status=MemoryStatus.ARCHIVED)
    issue = tracker.create(
        "merge",
        labels=[LABEL_CLUSTER, "action:merge"],
        metadata={"memory_ids": [a.id, b.id], "cohesion": 0.9},
    )
    (o,) = SemanticMerge(store, tracker).run(now=NOW).outcomes
    assert o.status == "skipped"
    assert tracker.get(issue.id).status == "closed"
    assert "fewer than two" in tracker.close_reason(issue.id)


def test_merged_memory_provenance_lists_sources(store):
    a, b, c = _three(store)
    (o,) = SemanticMerge(store).run(now=NOW, clusters=[_cluster(a, b, c)]).outcomes
    prov = store.get(o.merged_id).meta.extra[PROVENANCE_KEY]
    assert [s["id"] for s in prov["sources"]] == [a.id, b.id, c.id]
    assert prov["cohesion"] == 0.9


# Three wordings of one fact, the first short and exact; the merged memory holds all three,
# and ranked below "the ThinkPad was ordered for Priya" for the first query (BM25 reads a
# long merged text as a weaker match of its words).
SOURCES = (
    "Sam's laptop is a ThinkPad X1 Carbon running Fedora.",
    "Sam works on a Lenovo laptop with Linux; he set it up himself over a weekend and keeps "
    "dotfiles in a git repository with scripts for every machine he owns.",
    "His machine is a Lenovo that runs Linux, configured by hand over a weekend, with dotfiles "
    "and install scripts kept in git for all of his computers.",
)
OTHERS = (
    "The ThinkPad X1 Carbon was ordered for Priya.",
    "Fedora 40 is the build image.",
    "Sam's desktop runs Windows for games.",
    "The office printer is a Brother laser.",
)
QUERIES = (
    "What laptop does Sam use, a ThinkPad X1 Carbon?",
    "Does Sam run Fedora on his laptop?",
    "Where does Sam keep his dotfiles?",
)


def test_a_merged_memory_ranks_at_least_as_well_as_its_best_source(store):
    from cortexgraph.vault_sync.unified_search import search_unified

    sources = [add(store, text) for text in SOURCES]
    for text in OTHERS:
        add(store, text)

    def stm(q: str) -> list[str]:
        return [r.memory.id for r in store.search(q, top_k=10, now=NOW)]

    def unified(q: str) -> list[str]:
        return [r.memory_id for r in search_unified(store, None, q, limit=10, now=NOW)]

    ids = {m.id for m in sources}
    before = {
        (how.__name__, q): min(how(q).index(i) for i in ids if i in how(q))
        for how in (stm, unified)
        for q in QUERIES
    }
    cluster = Cluster(cluster_id_for(tuple(ids)), tuple(sorted(ids)), 0.8, ClusterAction.MERGE)
    (outcome,) = SemanticMerge(store).run(now=NOW, clusters=[cluster]).outcomes
    assert outcome.status == "merged"
    for how in (stm, unified):
        for q in QUERIES:
            ranked = how(q)
            assert not ids & set(ranked)  # the archived sources are not shown
            assert ranked.index(outcome.merged_id) <= before[(how.__name__, q)], q


def test_a_merged_memory_ranks_no_higher_than_its_best_source(store):
    """Its own text holds both sources' words, so scored as a text it matched the query better
    than either source, and rose above a memory that had outranked them both."""
    from cortexgraph.vault_sync.unified_search import search_unified

    a = add(store, "Sam's laptop is a ThinkPad X1.")
    b = add(store, "Sam's laptop runs Fedora Linux.")
    other = add(store, "Priya's ThinkPad X1 runs Fedora Linux at work.")
    for text in OTHERS:
        add(store, text)
    query = "ThinkPad X1 laptop with Fedora Linux"

    def stm() -> list[str]:
        return [r.memory.id for r in store.search(query, top_k=5, now=NOW)]

    def unified() -> list[str | None]:
        return [r.memory_id for r in search_unified(store, None, query, limit=5, now=NOW)]

    assert stm()[0] == other.id and unified()[0] == other.id
    ids = tuple(sorted((a.id, b.id)))
    cluster = Cluster(cluster_id_for(ids), ids, 0.8, ClusterAction.MERGE)
    (outcome,) = SemanticMerge(store).run(now=NOW, clusters=[cluster]).outcomes
    assert stm()[:2] == [other.id, outcome.merged_id]
    assert unified()[:2] == [other.id, outcome.merged_id]


def test_one_outdated_source_does_not_make_the_merged_memory_outdated(store):
    """The merged memory carries its sources' markers; a superseded source must not demote it
    below its other source, nor lift the successor to that source's place."""
    later = add(store, "Sam's laptop now runs Arch Linux at home.")
    a = add(store, "Sam's laptop is a ThinkPad X1 Carbon.")
    b = add(
        store, "Sam's ThinkPad X1 Carbon laptop runs Fedora.", extra={"superseded_by": later.id}
    )
    for text in OTHERS:
        add(store, text)
    query = "What laptop is Sam's ThinkPad X1 Carbon?"

    def ranked() -> list[str]:
        return [r.memory.id for r in store.search(query, top_k=5, now=NOW)]

    before = ranked()
    assert before[0] == a.id
    ids = tuple(sorted((a.id, b.id)))
    cluster = Cluster(cluster_id_for(ids), ids, 0.8, ClusterAction.MERGE)
    (outcome,) = SemanticMerge(store).run(now=NOW, clusters=[cluster]).outcomes
    assert store.get(outcome.merged_id).meta.extra.get("superseded_by") == later.id
    assert ranked()[0] == outcome.merged_id
    assert ranked().index(later.id) == before.index(later.id)  # still lifted by b's match
