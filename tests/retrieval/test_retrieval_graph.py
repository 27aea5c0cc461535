"""graph_query: bounded neighbourhoods of an entity as triples."""

from __future__ import annotations

import pytest
from retrieval_helpers import NOW

from cortexgraph.retrieval.graph import graph_query
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.vault_sync.ltm_index import LTMIndex


def chain(store):
    """postgres <- a -causes-> b -supports-> c ; b also mentions 'billing'."""
    a = store.save("We moved billing to Postgres", entities=["postgres"], now=NOW - 3)
    b = store.save("Invoices got 3x faster", entities=["billing"], now=NOW - 2)
    c = store.save("Finance closed the quarter two days early", entities=["finance"], now=NOW)
    store.add_relation(a.id, b.id, "causes", now=NOW)
    store.add_relation(b.id, c.id, "supports", now=NOW)
    return a, b, c


def refs(result):
    return {(t.subject, t.predicate, t.object) for t in result.triples}


def test_depth_limits_how_far_the_graph_reaches(store):
    a, b, c = chain(store)
    one = graph_query(store, "Postgres", depth=1)
    assert (f"m:{a.id[:8]}", "mentions", "e:postgres") in refs(one)
    assert (f"m:{a.id[:8]}", "causes", f"m:{b.id[:8]}") in refs(one)
    assert f"m:{c.id[:8]}" not in {r for t in refs(one) for r in (t[0], t[2])}
    two = graph_query(store, "postgres", depth=2)
    assert (f"m:{b.id[:8]}", "supports", f"m:{c.id[:8]}") in refs(two)
    assert one.memory_ids[f"m:{a.id[:8]}"] == a.id
    text = two.text()
    assert text.startswith("entity: postgres (depth 2")
    assert f"m:{c.id[:8]} Finance closed the quarter" in text


def test_relation_filter_keeps_one_predicate(store):
    _a, b, c = chain(store)
    only = graph_query(store, "postgres", relation="supports", depth=2)
    assert {t.predicate for t in only.triples} <= {"supports", "mentions"}
    assert (f"m:{b.id[:8]}", "causes", f"m:{c.id[:8]}") not in refs(only)


def test_hub_entities_are_bounded(store):
    for i in range(80):
        store.save(f"Caroline said thing {i}", entities=["caroline", f"topic{i}"], now=NOW + i)
    result = graph_query(store, "caroline", depth=2, max_nodes=30, max_fanout=10, max_triples=25)
    assert result.truncated
    assert len(result.triples) <= 25 and len(result.labels) <= 30
    newest = store.list()[-1]
    assert any(t.subject == f"m:{newest.id[:8]}" for t in result.triples)  # newest first


def test_vault_wikilinks_and_notes_about_the_entity(store, vault):
    index = LTMIndex.open(vault)
    m = store.save("Alice approved the Atlas budget", entities=["alice"], now=NOW)
    result = graph_query(store, "alice", depth=1, ltm_index=index)
    triples = refs(result)
    assert ("n:People/Alice.md", "about", "e:alice") in triples
    assert ("n:People/Alice.md", "links_to", "n:Projects/Atlas.md") in triples
    assert ("n:Projects/Atlas.md", "links_to", "n:People/Alice.md") in triples
    assert (f"m:{m.id[:8]}", "mentions", "e:alice") in triples


def test_unknown_entity_and_bad_arguments(store):
    assert not graph_query(store, "nobody").found
    assert graph_query(store, "nobody").text() == "entity: nobody (no memories or notes)"
    with pytest.raises(InvalidInputError):
        graph_query(store, "x", depth=0)
    with pytest.raises(InvalidInputError):
        graph_query(store, "x", depth=9)
    with pytest.raises(InvalidInputError):
        graph_query(store, "  ")
