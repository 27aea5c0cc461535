"""The web view's memory page shows the record without the previous save's text (a ranking
signal, ``neighbour_text``), whatever the memory's own context is."""

from __future__ import annotations

from fastapi.testclient import TestClient

from cortexgraph.settings import load_settings
from cortexgraph.storage import open_store
from cortexgraph.webui.app import create_app


def test_the_memory_page_leaves_the_neighbour_text_out(tmp_path):
    store = open_store(tmp_path / "store")
    m = store.save(
        "Yes, and he already knows how to sit!",
        context="pet chat",
        neighbour="We adopted a puppy named Rex last spring",
    )
    settings = load_settings(
        storage_path=tmp_path / "store", ltm_vault_path=tmp_path / "vault", enable_embeddings=False
    )
    client = TestClient(create_app(settings, use_embeddings=False), base_url="http://127.0.0.1")
    page = client.get(f"/api/memory/{m.id}")
    assert page.status_code == 200
    shown = page.json()["memory"]
    assert shown["content"] == "Yes, and he already knows how to sit!"
    assert shown["meta"]["context"] == "pet chat"
    assert "neighbour_text" not in shown and "puppy" not in page.text


def test_the_list_and_the_history_leave_the_neighbour_text_out(tmp_path):
    store = open_store(tmp_path / "store")
    m = store.save("He can sit already", neighbour="We adopted a puppy named Rex")
    store.update(m.id, content="He can sit and stay")
    settings = load_settings(
        storage_path=tmp_path / "store", ltm_vault_path=tmp_path / "vault", enable_embeddings=False
    )
    client = TestClient(create_app(settings, use_embeddings=False), base_url="http://127.0.0.1")
    listed = client.get("/api/memories")
    history = client.get(f"/api/memory/{m.id}/history")
    assert listed.json()["items"][0]["id"] == m.id and history.json()["history"]
    assert "puppy" not in listed.text and "puppy" not in history.text
