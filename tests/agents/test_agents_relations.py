from __future__ import annotations

import pytest
from agents_helpers import NOW, add

from cortexgraph.agents.relationship_discovery import (
    RelationshipConfig,
    RelationshipDiscovery,
    jaccard,
)
from cortexgraph.storage.models import MemoryStatus


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


def test_ubiquitous_entities_relate_nothing_rare_ones_do(store):
    # "Sam" is on every memory: sharing him (plus a tag) says nothing about two memories.
    for i in range(30):
        add(store, f"filler {i}", entities=["Sam", "billing", f"thing{i}"])
    a = add(store, "a", entities=["Sam", "billing", "Kafka", "Outbox"])
    b = add(store, "b", entities=["Sam", "billing", "Kafka", "Outbox"])
    cfg = RelationshipConfig(max_entity_share=0.5, min_entity_ceiling=2)
    report = RelationshipDiscovery(store, cfg).run(now=NOW, dry_run=True)
    assert report.common_entities_skipped == ("billing", "sam")
    assert [{d.from_id, d.to_id} for d in report.discovered] == [{a.id, b.id}]
    assert report.discovered[0].shared_entities == ("kafka", "outbox")
    # without the ceiling a common entity still pairs each memory with its nearest in time
    # only: O(n) pairs, not the 496 of every pair of the 32 memories
    loose = RelationshipConfig(max_entity_share=1.0, max_relations_per_memory=1000)
    assert 0 < len(RelationshipDiscovery(store, loose).run(now=NOW, dry_run=True).discovered) <= 62


def test_rare_shared_entity_weighs_more_than_a_common_one(store):
    for i in range(6):
        add(store, f"kafka {i}", entities=["Kafka", f"x{i}"])
    a = add(store, "a", entities=["Kafka", "Ledger", "Mei"])
    b = add(store, "b", entities=["Kafka", "Ledger", "Diego"])  # shares the common Kafka
    c = add(store, "c", entities=["Ledger", "Mei", "Oslo"])  # shares the rarer Mei
    agent = RelationshipDiscovery(store)
    report = agent.run(now=NOW, dry_run=True)
    strength = {frozenset((d.from_id, d.to_id)): d.strength for d in report.discovered}
    assert strength[frozenset((a.id, c.id))] > strength[frozenset((a.id, b.id))]
    plain = agent.score(a, b).strength  # without IDF weights both pairs score the same
    assert plain == pytest.approx(agent.score(a, c).strength)


def test_relations_per_memory_are_capped_strongest_first_across_runs(store):
    # spokes share two entities with the hub and only one with each other
    hub = add(store, "hub", entities=["Ledger", "Mei", *(f"k{i}" for i in range(6))], tags=["db"])
    spokes = [
        add(
            store,
            f"s{i}",
            entities=["Ledger", f"k{i}"] + (["Mei"] if i == 1 else []),
            tags=["db"] if i == 0 else [],
        )
        for i in range(6)
    ]
    cfg = RelationshipConfig(max_relations_per_memory=3)
    report = RelationshipDiscovery(store, cfg).run(now=NOW)
    hub_edges = [d for d in report.discovered if hub.id in (d.from_id, d.to_id)]
    assert len(hub_edges) == 3 and report.over_cap > 0
    linked = {d.from_id if d.to_id == hub.id else d.to_id for d in hub_edges}
    assert {spokes[0].id, spokes[1].id} <= linked  # the strongest pairs are kept
    for m in [hub, *spokes]:
        assert len(store.relations(memory_id=m.id, relation_type="related")) <= 3
    again = RelationshipDiscovery(store, cfg).run(now=NOW)  # earlier edges count toward the cap
    assert all(hub.id not in (d.from_id, d.to_id) for d in again.discovered)


def _conversation(store):
    """Two speakers over three sessions weeks apart; the pet is named in two of them."""
    lines = []
    for day, session in ((0, "8 May"), (20, "28 May"), (40, "17 June")):
        for i in range(12):
            speaker = ("Melanie", "Caroline")[i % 2]
            lines.append((day, f"[{session}] {speaker}: small talk number {i} about the weather"))
    lines.insert(5, (0, "[8 May] Melanie: We adopted a kitten last week, we call her Luna."))
    lines.append((40, "[17 June] Melanie: Yesterday our cat Luna knocked over the paint."))
    return [
        add(store, text, age_days=60 - day, entities=[text.split("] ")[1].split(":")[0]])
        for day, text in lines
    ]


def test_turns_in_different_sessions_naming_the_same_pet_are_related(store):
    from cortexgraph.activation.entity_batch import BatchEntityFinder

    memories = _conversation(store)
    first, last = memories[5], memories[-1]
    without = RelationshipDiscovery(store).run(now=NOW, dry_run=True)
    assert without.discovered == ()  # only the (too common) speakers: nothing to relate
    agent = RelationshipDiscovery(store, entity_finder=BatchEntityFinder(None))
    report = agent.run(now=NOW)
    assert report.entities_found == len(memories) and report.entity_method == "rules"
    pairs = {frozenset((d.from_id, d.to_id)): d for d in report.discovered}
    assert "luna" in pairs[frozenset((first.id, last.id))].shared_entities
    # A transcript line is about its speaker: the names it mentions are its mentions.
    assert store.get(last.id).entities == ("Melanie",)
    assert "luna" in {e.lower() for e in store.get(last.id).mentions}
    assert store.get(last.id).meta.extra["entities_found"] == "rules"
    again = agent.run(now=NOW, dry_run=True)  # read once: the next run reads only new ones
    assert again.entities_found == 0 and again.discovered == ()


def test_entity_step_of_a_dry_run_writes_nothing(store):
    from cortexgraph.activation.entity_batch import BatchEntityFinder

    memories = _conversation(store)
    before = [store.get(m.id) for m in memories]
    report = RelationshipDiscovery(store, entity_finder=BatchEntityFinder(None)).run(
        now=NOW, dry_run=True
    )
    assert len(report.discovered) == 1 and report.entities_found == len(memories)
    assert [store.get(m.id) for m in memories] == before and store.relations() == []


def test_entity_step_reads_at_most_its_batch_limit_newest_first(store):
    from cortexgraph.activation.entity_batch import BatchEntityFinder

    memories = _conversation(store)
    cfg = RelationshipConfig(entity_batch_limit=10)
    agent = RelationshipDiscovery(store, cfg, entity_finder=BatchEntityFinder(None))
    assert agent.run(now=NOW).entities_found == 10
    read = [m for m in memories if "entities_found" in store.get(m.id).meta.extra]
    unread = [m for m in memories if m not in read]
    assert len(read) == 10
    assert min(m.created_at for m in read) >= max(m.created_at for m in unread)
    assert agent.run(now=NOW).entities_found == 10  # the rest in the next runs


def test_no_entity_model_is_loaded_when_every_memory_was_read(store):
    # Loading spaCy costs seconds (torch's import with it): a run with nothing new skips it.
    from cortexgraph.activation.entity_batch import BatchEntityFinder
    from cortexgraph.storage.models import MemoryMeta

    loads: list[int] = []
    add(store, "Alice runs the ledger", entities=["Alice"])
    for m in store.list():
        store.put(m.with_changes(meta=MemoryMeta(extra={"entities_found": "spacy+rules"})))
    agent = RelationshipDiscovery(store)
    agent.entity_finder = BatchEntityFinder(lambda: loads.append(1))
    assert agent.read_entities() == (0, "none")
    assert agent.run(now=NOW).entities_found == 0
    assert loads == []


def test_the_pipeline_imports_networkx_only_when_a_graph_is_built() -> None:
    """networkx is 14 MB resident once imported: a server that has not run the relations
    agent (or ran only the cluster detector, whose peak it added to) does not hold it."""
    import subprocess
    import sys

    probe = (
        "import sys, cortexgraph.agents.pipeline, cortexgraph.agents.cluster_detector; "
        "print('networkx' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"


def test_names_found_in_a_transcript_line_do_not_change_how_search_ranks_it(store):
    # Search boosts a memory whose entity the question names; a reply that mentions Caroline
    # is not about her, and the entity step must not make it so.
    from cortexgraph.activation.entity_batch import BatchEntityFinder

    day = "[1:56 pm on 8 May, 2023]"
    add(store, f"{day} Caroline: I painted the lake at sunrise last week.", entities=["Caroline"])
    add(
        store,
        f"{day} Melanie: I saw the lake Caroline painted and Oscar loved it.",
        entities=["Melanie"],
    )
    note = add(store, "Alice leads the payments team at Acme Corp.")
    query = "What did Caroline paint at the lake?"

    def ranked() -> dict[str, float]:
        return {r.memory.id: r.score for r in store.search(query, now=NOW)}

    before = ranked()
    RelationshipDiscovery(store, entity_finder=BatchEntityFinder(None)).run(now=NOW)
    after = ranked()
    # BM25's corpus statistics move a little (the note's entities grew), no boost appears.
    assert after.keys() == before.keys()
    assert all(abs(after[i] / before[i] - 1) < 0.05 for i in before)
    assert "alice" in {e.lower() for e in store.get(note.id).entities}  # a note keeps them


def test_a_relations_run_builds_its_graph_without_networkx(tmp_path) -> None:
    """The summary and the bridge issues read components and degrees off a union-find: the
    run imports no networkx (two whole-store graphs a run cost ~1 s each at 100k memories).
    The figures are networkx's: a pair related both ways is one edge."""
    import subprocess
    import sys

    probe = f"""
import sys
from cortexgraph.agents.relationship_discovery import RelationshipDiscovery
from cortexgraph.agents.memory_tracker import InMemoryIssueTracker
from cortexgraph.storage import open_store
store = open_store({str(tmp_path)!r})
ms = [store.save(f"m{{i}}", entities=["Alice", "Ledger"] if i < 3 else [f"e{{i}}"])
      for i in range(6)]
store.add_relation(ms[4].id, ms[5].id, "related")
store.add_relation(ms[5].id, ms[4].id, "related")
g = RelationshipDiscovery(store, tracker=InMemoryIssueTracker()).run(now=2e9).graph
print(g.nodes, g.edges, g.components, g.largest_component, g.isolated,
      sorted(d for _, d, _ in g.most_connected), 'networkx' in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["6", "4", "2", "3", "1", "[1,", "1,", "2,", "2,", "2]", "False"]


def test_the_run_reports_the_entities_read_before_its_steps(store):
    # A live run reads entities before the cluster step (read_entities): its relations report
    # counts them, not the 0 its own step then finds left to read.
    from cortexgraph.activation.entity_batch import BatchEntityFinder

    memories = _conversation(store)
    agent = RelationshipDiscovery(store, entity_finder=BatchEntityFinder(None))
    assert agent.read_entities() == (len(memories), "rules")
    report = agent.run(now=NOW)
    assert (report.entities_found, report.entity_method) == (len(memories), "rules")
    again = agent.run(now=NOW)  # counted once, by the run that read them
    assert (again.entities_found, again.entity_method) == (0, "none")


def test_a_memory_edited_while_its_entities_were_read_is_read_again(store):
    # Another process (the MCP server) may edit a memory while a child reads it: the entities
    # found in the old text are not written over the new one.
    from cortexgraph.activation.entity_batch import BatchEntityFinder

    a = add(store, "Alice moved the ledger to Postgres")
    b = add(store, "Bob moved the payroll to Kafka")

    class EditsWhileReading(BatchEntityFinder):
        def find(self, texts):
            store.put(store.get(a.id).with_changes(content="The ledger moved from Alice to Carol"))
            return super().find(texts)

    agent = RelationshipDiscovery(store, entity_finder=EditsWhileReading(None))
    agent.read_entities()
    assert "entities_found" not in store.get(a.id).meta.extra
    assert store.get(a.id).content == "The ledger moved from Alice to Carol"
    assert store.get(b.id).meta.extra["entities_found"] == "rules"
    assert agent.read_entities() == (1, "rules")
    assert "carol" in store.get(a.id).entities


def test_the_graphs_component_sizes_are_read_from_its_roots():
    """The report's summary reads only the components' sizes: one per component, as many as
    ``components`` finds, without a root found for every memory."""
    from cortexgraph.agents.relation_graph import RelationGraph

    g = RelationGraph(["a", "b", "c", "d", "e"])
    for x, y in (("a", "b"), ("c", "b"), ("a", "c"), ("d", "x")):  # x: a node only an edge has
        g.add(x, y)
    assert sorted(g.component_sizes()) == [1, 2, 3]
    assert sorted(g.component_sizes()) == sorted(dict(g.components().values()).values())


def test_the_graph_says_which_pairs_are_related_already_either_way():
    """RelationshipDiscovery skips a pair the store relates in any direction by asking the
    graph it builds anyway, not a second set of every relation's ends."""
    from cortexgraph.agents.relation_graph import RelationGraph

    g = RelationGraph(["a", "b", "c"])
    g.add("b", "a")
    assert g.linked("a", "b") and g.linked("b", "a")
    assert not g.linked("a", "c")


class _ReadNames(dict[str, set[str]]):
    """A names map that records whose names were read."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.read: list[str] = []

    def __getitem__(self, key: str) -> set[str]:
        self.read.append(key)
        return super().__getitem__(key)


def test_an_incremental_run_asks_only_reached_memories_whether_they_can_pair() -> None:
    from cortexgraph.agents.entity_postings import EntityPostings

    names = _ReadNames(
        {
            "a": {"alice", "ledger"},
            "b": {"alice", "kafka", "common"},
            "c": {"common", "bob"},
            "d": {"zed"},
            "e": {"ledger", "kafka", "bob"},
        }
    )
    index = EntityPostings(names, {})
    common = frozenset({"common"})
    can_pair = index.reached(common, 2)
    asked = ["b", "c", "b", "a"]
    answers = [can_pair(mid) for mid in asked]
    assert (
        answers
        == [mid in index.eligible(common, 2) for mid in asked]
        == [
            True,
            False,
            True,
            True,
        ]
    )
    assert names.read == ["b", "c", "a"]  # each asked memory once, no other


def test_an_incremental_runs_postings_are_the_full_runs_with_names_made_when_asked(store):
    from cortexgraph.agents.entity_postings import EntityPostings, memory_names
    from cortexgraph.storage.models import MENTIONS_KEY

    add(store, "a", entities=["Redis", "redis", "Ledger"])  # one name in two spellings
    add(store, "b", entities=["ledger", "Kafka"])
    add(store, "c", entities=[])
    add(store, "Sam: see you", entities=["Sam"], extra={MENTIONS_KEY: ["Kafka", "Bob"]})
    memories = {m.id: m for m in store.list()}
    full = EntityPostings.of(memories)
    part = EntityPostings.of(memories, lazy=True)
    assert part.postings == full.postings
    assert part.postings["redis"] == [next(i for i, m in memories.items() if m.content == "a")]
    asked = next(iter(memories))
    assert part.names[asked] == memory_names(memories[asked])
    assert part.names._made.keys() == {asked}  # the others' names are not made
    assert set(part.names) == set(memories) and len(part.names) == len(memories)
    for common, least in ((frozenset({"ledger"}), 2), (frozenset(), 2), (frozenset(), 0)):
        assert part.eligible(common, least) == full.eligible(common, least)
    assert part.names._made.keys() == {asked}  # eligible made none of them
    assert {mid: part.names[mid] for mid in memories} == full.names
