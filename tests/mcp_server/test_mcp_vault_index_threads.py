"""Tool calls and the hooks' recall endpoint read the vault's index from worker threads; a
refresh rewrites it in place, so it must wait for a reading in another thread to end."""

from __future__ import annotations

import threading
from pathlib import Path

from mcp_common import make_settings

from cortexgraph.mcp_server.state import ServerState


def test_a_refresh_waits_until_another_threads_reading_ends(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, ltm_vault_path=tmp_path / "vault")  # not made for us
    vault = settings.vault_path
    vault.mkdir(parents=True)
    (vault / "a.md").write_text("# A\n\nfirst words\n", encoding="utf-8")
    state = ServerState(settings)
    reading, release, second_read = threading.Event(), threading.Event(), threading.Event()
    seen: list[list[str]] = []

    def reader() -> None:
        with state.fresh_ltm_index() as index:
            assert index is not None
            seen.append(sorted(index.notes))
            reading.set()
            release.wait(30)
            seen.append(sorted(index.notes))  # what it read is what it still reads

    def second() -> None:
        with state.fresh_ltm_index() as index:
            assert index is not None
            seen.append(sorted(index.notes))
            second_read.set()

    first = threading.Thread(target=reader)
    first.start()
    assert reading.wait(30)
    (vault / "b.md").write_text("# B\n\na note written meanwhile\n", encoding="utf-8")
    other = threading.Thread(target=second)
    other.start()
    assert not second_read.wait(0.3)  # held: its refresh has not run
    release.set()
    first.join(30)
    other.join(30)
    assert seen == [["a.md"], ["a.md"], ["a.md", "b.md"]]


def test_without_a_vault_there_is_no_index_to_read(tmp_path: Path) -> None:
    state = ServerState(make_settings(tmp_path, ltm_vault_path=tmp_path / "vault"))
    with state.fresh_ltm_index() as index:
        assert index is None


def test_recall_does_not_wait_out_a_long_tool_call_on_the_vault(tmp_path: Path) -> None:
    """A hook waits 1 s for the server; a tool call holding the vault longer (a first vault
    embedding) must not make it fall back to keywords: recall answers with the memories."""
    from cortexgraph import recall_endpoint as endpoint
    from cortexgraph.mcp_server.recall_endpoint import search

    settings = make_settings(tmp_path)
    (settings.vault_path / "Billing.md").write_text(
        "# Billing\n\nThe billing migration runs in March.\n", encoding="utf-8"
    )
    state = ServerState(settings)
    state.store.save("The billing migration moves invoices to PostgreSQL.")
    holding, release = threading.Event(), threading.Event()

    def long_tool_call() -> None:
        with state.fresh_ltm_index():
            holding.set()
            release.wait(60)

    holder = threading.Thread(target=long_tool_call)
    holder.start()
    assert holding.wait(30)
    answered: list[dict] = []
    asker = threading.Thread(
        target=lambda: answered.append(search(state, endpoint.SearchRequest("billing", 5)))
    )
    asker.start()
    asker.join(30)  # the holder is still holding: only a search that gave up on the vault ends
    try:
        assert not asker.is_alive()
        [result] = answered[0]["results"]
        assert result["memory"]["content"].startswith("The billing migration moves")
        assert "note" not in result
    finally:
        release.set()
        holder.join(30)
    # once the vault is free, its notes are recalled again
    paths = {
        r["note"]["path"]
        for r in search(state, endpoint.SearchRequest("billing", 5))["results"]
        if "note" in r
    }
    assert paths == {"Billing.md"}
