"""The review pages' API: the memory list with filters and paging, a memory's history with
the undo of each change, the vault notes it links to, and weak search hits labelled."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cortexgraph.settings import load_settings
from cortexgraph.storage import open_store
from cortexgraph.storage.decay import DAY
from cortexgraph.webui.app import create_app

CHANGE = {"X-CortexGraph": "1"}


def _client(seeded: dict, **overrides: object) -> TestClient:
    settings = load_settings(
        storage_path=seeded["storage"],
        ltm_vault_path=seeded["vault"],
        enable_embeddings=False,
        **overrides,
    )
    return TestClient(create_app(settings, use_embeddings=False), base_url="http://127.0.0.1")


def _ids(answer: dict) -> set[str]:
    return {item["id"] for item in answer["items"]}


def test_memory_list_filters_by_status_tag_entity_and_age_and_pages(seeded):
    a, b, c, d = seeded["ids"]
    now = seeded["now"]
    old = open_store(seeded["storage"]).save("An old note on CI caches", now=now - 40 * DAY).id
    client = _client(seeded)

    def get(**params) -> dict:
        answer = client.get("/api/memories", params=params)
        assert answer.status_code == 200, answer.text
        return answer.json()

    everything = get()
    assert everything["total"] == 5 and _ids(everything) == {a, b, c, d, old}
    assert everything["choices"]["tags"] == ["billing", "testing"]
    assert "PostgreSQL" in everything["choices"]["entities"]
    assert _ids(get(status="promoted")) == {d}
    assert _ids(get(status="active", tag="billing")) == {a, b}
    assert _ids(get(entity="postgresql")) == {d}
    assert _ids(get(min_age_days=30)) == {old}
    assert old not in _ids(get(max_age_days=7))
    first, second = get(limit=2), get(limit=2, offset=2)
    assert first["total"] == 5 and len(first["items"]) == len(second["items"]) == 2
    assert not _ids(first) & _ids(second)
    assert all("neighbour_text" not in item for item in first["items"])
    assert client.get("/api/memories", params={"status": "lost"}).status_code == 400
    assert client.get("/api/memories", params={"limit": 0}).status_code == 400


def test_memory_page_offers_unpromote_and_lists_its_note_then_undo_works(seeded):
    d = seeded["ids"][3]
    client = _client(seeded)
    page = client.get(f"/api/memory/{d}/history").json()
    promoted = [e for e in page["history"] if e["event"] == "promoted"]
    assert promoted and promoted[-1]["undo"]["action"] == "promote"
    note = page["notes"][0]
    assert note["why"] == "promoted to" and note["path"].endswith(".md")
    assert (Path(seeded["vault"]) / note["path"]).exists()
    assert {"entity PostgreSQL"} == {n["why"] for n in page["notes"][1:]}

    refused = client.post(f"/api/memory/{d}/undo/promote")
    assert refused.status_code == 403
    done = client.post(f"/api/memory/{d}/undo/promote", headers=CHANGE)
    assert done.status_code == 200, done.text
    assert open_store(seeded["storage"]).get(d).status.value == "active"
    assert not (Path(seeded["vault"]) / note["path"]).exists()
    after = client.get(f"/api/memory/{d}/history").json()
    assert not any("undo" in e for e in after["history"])
    again = client.post(f"/api/memory/{d}/undo/promote", headers=CHANGE)
    assert again.status_code == 400


def test_an_approved_merge_is_undone_from_a_source_memory_page(seeded):
    a, b, c, _d = seeded["ids"]
    client = _client(seeded)
    approved = client.post(f"/api/reviews/{seeded['issue']}/approve", headers=CHANGE)
    assert approved.status_code == 200, approved.text
    page = client.get(f"/api/memory/{a}/history").json()
    merged = [e for e in page["history"] if e["event"] == "merged into"][-1]
    target = merged["undo"]["target"]
    assert merged["undo"]["action"] == "merge" and target not in (a, b)
    assert any(e["event"] == "issue closed" for e in page["history"])
    undone = client.post(f"/api/memory/{target}/undo/merge", headers=CHANGE)
    assert undone.status_code == 200, undone.text
    store = open_store(seeded["storage"])
    assert {store.get(a).status.value, store.get(b).status.value} == {"active"}
    assert c in {r["id"] for r in client.get(f"/api/memory/{a}/history").json()["relations"]}
    assert client.post(f"/api/memory/{a}/undo/explode", headers=CHANGE).status_code == 400
    assert client.get("/api/memory/..%2Fetc/history").status_code in (400, 404)


def test_search_labels_weak_hits_and_says_when_none_is_strong(seeded):
    # the related expansion is off by default; on here, for the link-only hit below
    client = _client(seeded, search_related_weight=0.15)
    good = client.get("/api/search", params={"q": "postgres billing invoices"}).json()
    assert good["strong"] >= 1 and not good["results"][0]["weak"]
    assert good["results"][0]["relevance"] >= good["relevance_floor"]
    nonsense = client.get("/api/search", params={"q": "zorblax quindle frumious"}).json()
    assert nonsense["strong"] == 0
    assert all(r["weak"] for r in nonsense["results"])
    # A memory found only through its link to a hit matches no word of the query: weak.
    linked = client.get("/api/search", params={"q": "hermetic testcontainers"}).json()
    by_id = {r["memory_id"]: r for r in linked["results"]}
    a, _b, c, _d = seeded["ids"]
    assert not by_id[c]["weak"] and by_id[a]["weak"] and linked["strong"] == 1


def test_with_the_model_a_nonsense_query_is_all_weak_and_a_paraphrase_is_strong(seeded):
    settings = load_settings(storage_path=seeded["storage"], ltm_vault_path=seeded["vault"])
    app = create_app(settings, use_embeddings=True)
    if app.state.cortexgraph.embedder is None:
        pytest.skip("no sentence model here: the lexical case is tested above")
    client = TestClient(app, base_url="http://127.0.0.1")
    nonsense = client.get("/api/search", params={"q": "purple elephant dancing"}).json()
    assert nonsense["results"] and nonsense["strong"] == 0  # hits, none of them strong
    paraphrase = client.get("/api/search", params={"q": "which database holds the bills"}).json()
    assert paraphrase["strong"] >= 2 and not paraphrase["results"][0]["weak"]


def test_what_gc_archived_and_then_deleted_is_restored_from_its_page(seeded):
    from cortexgraph.agents.undo import collect_garbage
    from cortexgraph.storage.graveyard import Graveyard

    c = seeded["ids"][2]
    store, graveyard = open_store(seeded["storage"]), Graveyard(seeded["storage"])
    now = seeded["now"]
    collect_garbage(store, [c], delete=False, now=now, grace_days=7, graveyard=graveyard)
    client = _client(seeded)
    assert _ids(client.get("/api/memories", params={"status": "archived"}).json()) == {c}
    archived = client.get(f"/api/memory/{c}/history").json()["history"]
    assert [e["undo"]["action"] for e in archived if "undo" in e] == ["gc"]
    later = now + 8 * DAY
    collect_garbage(store, [], delete=True, now=later, grace_days=7, graveyard=graveyard)
    gone = client.get(f"/api/memory/{c}/history").json()
    assert not gone["exists"] and gone["history"][-1]["event"] == "deleted by gc"
    assert gone["history"][-1]["undo"] == {"action": "gc", "target": c, "label": "Restore from gc"}
    assert client.get(f"/api/memory/{c}").status_code == 404
    restored = client.post(f"/api/memory/{c}/undo/gc", headers=CHANGE)
    assert restored.status_code == 200, restored.text
    assert open_store(seeded["storage"]).get(c).status.value == "active"
