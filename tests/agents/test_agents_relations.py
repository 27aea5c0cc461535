from __future__ import annotations

import pytest
from agents_fakes import NOW, add

from agents.relationship_discovery import RelationshipConfig, RelationshipDiscovery, jaccard
from storage.models import MemoryStatus


def test_strength_and_confidence_formulas(store):
    a = add(store, "a", entities=["Alice", "Ledger", "Postgres"], tags=["db", "team"])
    b = add(store, "b", entities=["alice", "ledger", "Kafka"], tags=["db"])
    d = RelationshipDiscovery(store).score(a, b)
    assert d.shared_entities == ("alice", "ledger") and d.shared_tags == ("db",)
    assert d.strength == pytest.approx(0.7 * 2 / 4 + 0.3 * 1 / 2, abs=1e-4)
    assert d.confidence == pytest.approx(1 - 0.5**2.5, abs=1e-4)
    assert jaccard(set(), set()) == 0.0


def test_creates_relations_above_thresholds_once(store):
    a = add(store, "a", entities=["Alice", "Ledger"])
    b = add(store, "b", entities=["Alice", "Ledger", "Kafka"])
    c = add(store, "c", entities=["Alice"])  # shares only one entity with each
    agent = RelationshipDiscovery(store)
    report = agent.run(now=NOW)
    assert [{d.from_id, d.to_id} for d in report.discovered] == [{a.id, b.id}]
    (rel,) = store.relations()
    assert rel.relation_type == "related" and rel.metadata["shared_entities"] == ["alice", "ledger"]
    assert rel.strength == report.discovered[0].strength
    again = agent.run(now=NOW)
    assert again.discovered == () and again.skipped_existing == 1
    assert len(store.relations()) == 1
    assert c.id not in {rel.from_memory_id, rel.to_memory_id}


def test_min_shared_and_min_confidence(store):
    a = add(store, "a", entities=["Alice"], tags=["db"])
    b = add(store, "b", entities=["Alice"], tags=["db"])  # 1 entity + 1 tag: conf 0.646
    add(store, "c", entities=["Alice"])  # 1 entity, no tag: conf 0.5
    cfg = RelationshipConfig(min_shared_entities=1, min_confidence=0.6)
    report = RelationshipDiscovery(store, cfg).run(now=NOW, dry_run=True)
    assert [{d.from_id, d.to_id} for d in report.discovered] == [{a.id, b.id}]
    cfg = RelationshipConfig(min_shared_entities=1, min_confidence=0.5)
    assert len(RelationshipDiscovery(store, cfg).run(now=NOW, dry_run=True).discovered) == 3


def test_dry_run_creates_nothing(store):
    add(store, "a", entities=["Alice", "Ledger"])
    add(store, "b", entities=["Alice", "Ledger"])
    report = RelationshipDiscovery(store).run(now=NOW, dry_run=True)
    assert len(report.discovered) == 1 and report.discovered[0].relation_id is None
    assert store.relations() == []
    assert report.graph.edges == 1  # the summary shows the graph as it would be


def test_existing_relation_of_any_type_blocks_a_duplicate(store):
    a = add(store, "a", entities=["Alice", "Ledger"])
    b = add(store, "b", entities=["Alice", "Ledger"])
    store.add_relation(b.id, a.id, "supports", now=NOW)
    report = RelationshipDiscovery(store).run(now=NOW)
    assert report.discovered == () and report.skipped_existing == 1


def test_common_entities_are_skipped_and_archived_ignored(store):
    for i in range(5):
        add(store, f"m{i}", entities=["Everyone", "Project"])
    gone = add(store, "archived", entities=["X", "Y"])
    add(store, "live", entities=["X", "Y"])
    store.update(gone.id, status=MemoryStatus.ARCHIVED)
    report = RelationshipDiscovery(store, RelationshipConfig(max_entity_frequency=4)).run(now=NOW)
    assert report.common_entities_skipped == ("everyone", "project")
    assert report.discovered == ()


def test_graph_summary(store):
    ms = [
        add(store, f"m{i}", entities=["Alice", "Ledger"] if i < 3 else [f"e{i}"]) for i in range(5)
    ]
    report = RelationshipDiscovery(store).run(now=NOW)
    g = report.graph
    assert (g.nodes, g.edges, g.components, g.largest_component, g.isolated) == (5, 3, 1, 3, 2)
    assert {mid for mid, deg, _ in g.most_connected} == {m.id for m in ms[:3]}
    assert all(deg == 2 for _, deg, _ in g.most_connected)
