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
