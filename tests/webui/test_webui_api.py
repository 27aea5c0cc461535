"""The web view's API without a browser: what it answers, and what it refuses."""

from __future__ import annotations

from fastapi.testclient import TestClient

from cortexgraph.settings import load_settings
from cortexgraph.webui.app import create_app


def _client(seeded, host="127.0.0.1") -> TestClient:
    settings = load_settings(
        storage_path=seeded["storage"], ltm_vault_path=seeded["vault"], enable_embeddings=False
    )
    return TestClient(create_app(settings, use_embeddings=False), base_url=f"http://{host}")


def test_api_answers_search_graph_curve_reviews_runs(seeded):
    client = _client(seeded)
    a, b, _c, d = seeded["ids"]
    hits = client.get("/api/search", params={"q": "postgres billing"}).json()["results"]
    assert {h["memory_id"] for h in hits} >= {a, b, d}
    assert any(h["source"] == "both" for h in hits)  # the promoted memory and its note, once
    graph = client.get("/api/graph").json()
    kinds = {n["kind"] for n in graph["nodes"]}
    assert "note" in kinds and graph["edges"]
    curve = client.get(f"/api/memory/{a}").json()
    scores = [p["score"] for p in curve["curve"]]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    reviews = client.get("/api/reviews").json()["reviews"]
    assert [r["id"] for r in reviews] == [seeded["issue"]]
    assert client.get("/api/runs").json()["runs"][0]["total_seconds"] == 1.5
    assert client.get("/api/memory/nope").status_code == 404


def test_changes_need_the_header_and_a_local_host(seeded):
    client = _client(seeded)
    refused = client.post(f"/api/reviews/{seeded['issue']}/approve")
    assert refused.status_code == 403
    assert _client(seeded, host="evil.example").get("/api/runs").status_code == 400
    rejected = client.post(
        f"/api/reviews/{seeded['issue']}/reject", headers={"X-CortexGraph": "1"}
    ).json()
    assert rejected["decision"] == "rejected"
    again = client.post(f"/api/reviews/{seeded['issue']}/reject", headers={"X-CortexGraph": "1"})
    assert again.status_code == 400 and "already closed" in again.json()["error"]
    assert client.get("/api/reviews").json()["reviews"] == []


def test_no_other_origin_may_frame_the_page(seeded):
    # Issue 30 (Low): Approve/Reject could be clickjacked from a page that framed the view.
    client = _client(seeded)
    for path in ("/", "/api/reviews"):
        answer = client.get(path)
        assert answer.headers["X-Frame-Options"] == "DENY"
        assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"]
