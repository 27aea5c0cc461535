"""The five consolidation labels as 1.x documents them, and the cluster options 1.x users set."""

from __future__ import annotations

import itertools

from agents_helpers import NOW, add
from fakes import RecordingSink

from cortexgraph.agents.cluster_detector import ClusterConfig, ClusterDetector
from cortexgraph.agents.common import LABEL_CLUSTER, LABEL_MERGE, LABEL_PROMOTE, LABEL_RELATIONS
from cortexgraph.agents.ltm_promoter import LTMPromoter
from cortexgraph.agents.pipeline import Pipeline, pipeline_config, run_agents
from cortexgraph.agents.relationship_discovery import RelationshipConfig, RelationshipDiscovery
from cortexgraph.storage.decay import DecayConfig


def _paraphrases(store):
    return [
        add(store, "The team prefers tabs over spaces in every Python file"),
        add(store, "In every Python file the team prefers tabs over spaces"),
        add(store, "Every Python file: the team prefers tabs, not spaces"),
    ]


def test_merge_requests_are_tracked_under_merge_and_closed_by_the_merge(store, tracker, embedder):
    ids = {m.id for m in _paraphrases(store)}
    pipe = Pipeline(store, embedder=embedder, tracker=tracker, sink=RecordingSink())
    report = run_agents(pipe, now=NOW, agents=["cluster", "merge"])
    (issue,) = tracker.query(labels=[LABEL_MERGE])
    assert LABEL_CLUSTER in issue.labels and set(issue.metadata["memory_ids"]) == ids
    assert report.reports["merge"].count("merged") == 1
    assert issue.id in {o.issue_id for o in report.reports["merge"].outcomes}
    assert tracker.query(labels=[LABEL_MERGE], status="closed")[0].id == issue.id


def test_min_cluster_size_drops_smaller_groups(store, embedder):
    _paraphrases(store)
    add(store, "Deploys go out on Thursday afternoons only")
    add(store, "Deploys go out only on Thursday afternoons")
    sizes = sorted(c.size for c in ClusterDetector(store, embedder).run(now=NOW).clusters)
    assert sizes == [2, 3]
    cfg = ClusterConfig(min_cluster_size=3)
    assert [c.size for c in ClusterDetector(store, embedder, config=cfg).run(now=NOW).clusters] == [
        3
    ]


def test_pipeline_config_carries_the_settings_options():
    cfg = pipeline_config(
        DecayConfig(),
        link_threshold=0.83,
        max_cluster_size=8,
        min_cluster_size=3,
        decay_memory_issues=True,
    )
    assert (
        cfg.cluster.link_threshold,
        cfg.cluster.max_cluster_size,
        cfg.cluster.min_cluster_size,
    ) == (0.83, 8, 3)
    assert cfg.decay.memory_issues
    assert pipeline_config(DecayConfig()).cluster.link_threshold == 0.65  # the tuned default


def test_duplicate_pairs_are_pairs_and_guarded(store, embedder):
    a, b, _ = _paraphrases(store)
    x = add(store, "Sam chose Redis for billing, ticket 4411")
    y = add(store, "Sam chose Redis for billing, ticket 9120")  # swapped number: not a duplicate
    method, pairs = ClusterDetector(store, embedder).duplicate_pairs(0.5)
    found = {frozenset((p.id1, p.id2)) for p in pairs}
    assert frozenset((a.id, b.id)) in found and frozenset((x.id, y.id)) not in found
    assert method == "embeddings:hashing-test"
    assert [p.similarity for p in pairs] == sorted((p.similarity for p in pairs), reverse=True)


class ConflictSink(RecordingSink):
    def write_note(self, memory, **kw):

        ref = super().write_note(memory, **kw)
        return type(
            "Written",
            (),
            {
                "memory_id": ref.memory_id,
                "path": ref.path,
                "created": False,
                "conflict_path": "cortexgraph/x (cortexgraph conflict).md",
            },
        )()


def test_promotions_that_need_a_person_go_under_promote(store, tracker):
    ok = add(store, "core fact", use_count=3, strength=1.5)
    bad = add(store, "another core fact", use_count=3, strength=1.5)
    LTMPromoter(store, RecordingSink(fail_for={bad.id}), tracker=tracker).run(now=NOW)
    (failed,) = tracker.query(labels=[LABEL_PROMOTE])
    assert failed.metadata["memory_id"] == bad.id and "disk full" in failed.description
    assert ok.id not in {i.metadata["memory_id"] for i in tracker.query(labels=[LABEL_PROMOTE])}
    edited = add(store, "a third core fact", use_count=3, strength=1.5)
    report = LTMPromoter(store, ConflictSink(), tracker=tracker).run(now=NOW)
    assert report.issues_opened >= 1
    conflict = [
        i for i in tracker.query(labels=[LABEL_PROMOTE]) if i.metadata["memory_id"] == edited.id
    ]
    assert conflict and "conflict" in conflict[0].metadata["conflict_path"]


def test_relations_worth_a_look_go_under_relations(store, tracker):
    # two groups of five, each a chain; a new pair joins them
    def group(tag):
        ms = [
            add(store, f"{tag} note {k}", entities=[f"{tag}{k}", f"{tag}{k + 1}"]) for k in range(5)
        ]
        for m1, m2 in itertools.pairwise(ms):
            store.add_relation(m1.id, m2.id, "supports", now=NOW)
        return ms

    left, right = group("alpha"), group("beta")
    a = store.update(left[0].id, entities=["alpha0", "alpha1", "bridge-x", "bridge-y"])
    b = store.update(right[0].id, entities=["beta0", "beta1", "bridge-x", "bridge-y"])
    p = add(store, "The ledger service listens on port 5432", entities=["ledger", "postgres"])
    q = add(store, "The ledger service listens on port 6432", entities=["ledger", "postgres"])
    # related, different numbers about different things: not a contradiction
    add(store, "Go/no-go for wave 3 is Thursday at 15:00", entities=["wave-3", "go-no-go"])
    add(
        store,
        "Wave 3 covers the remaining 40 tenants; go/no-go decides it",
        entities=["wave-3", "go-no-go"],
    )
    cfg = RelationshipConfig(min_entity_ceiling=50)
    report = RelationshipDiscovery(store, cfg, tracker).run(now=NOW)
    kinds = {
        i.metadata["kind"]: set(i.metadata["memory_ids"])
        for i in tracker.query(labels=[LABEL_RELATIONS])
    }
    assert kinds == {"bridge": {a.id, b.id}, "contradiction": {p.id, q.id}}
    assert report.issues_opened == 2 and len(tracker.query(labels=[LABEL_RELATIONS])) == 2
    RelationshipDiscovery(store, cfg, tracker).run(now=NOW, dry_run=True)
    assert len(tracker.query(labels=[LABEL_RELATIONS])) == 2
