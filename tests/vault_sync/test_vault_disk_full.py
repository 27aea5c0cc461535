"""The vault on a full disk (the kernel's file-size limit, as in
tests/storage/test_storage_disk_full.py): the write ledger loses no line, and the LTM index, a
cache of the notes, is searched even when it cannot be saved."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
from child_env import run_with_file_size_limit

from cortexgraph.vault_sync.ledger import WriteLedger

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")


def test_a_ledger_line_that_runs_out_of_space_loses_no_later_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = run_with_file_size_limit(
        """
        from cortexgraph.vault_sync.ledger import LedgerEntry, WriteLedger
        ledger = WriteLedger(Path(sys.argv[1]))
        ledger.set("kept", LedgerEntry("notes/Kept.md", "a" * 64, 1.0))
        room_for(ledger.journal, 40)
        try:
            ledger.set("lost", LedgerEntry("notes/" + "L" * 200 + ".md", "b" * 64, 2.0))
            refused = ""
        except OSError as e:
            refused = e.__class__.__name__
        unlimited()
        ledger.set("after", LedgerEntry("notes/After.md", "c" * 64, 3.0))
        print(json.dumps({"refused": refused, "entries": sorted(ledger.entries)}))
        """,
        str(tmp_path),
    )
    assert out["refused"]
    assert out["entries"] == ["after", "kept"]  # the writer's own view
    with caplog.at_level(logging.WARNING, logger="cortexgraph.vault_sync.ledger"):
        reread = WriteLedger(tmp_path)  # another process: the journal read from the start
    assert sorted(reread.entries) == ["after", "kept"]
    assert reread.entries["after"].path == "notes/After.md"
    assert not caplog.records


def test_a_vault_index_that_cannot_be_saved_still_answers(tmp_path: Path) -> None:
    """Refreshing the LTM index saves it; on a full disk that raised out of every unified
    search once a note had changed. Now the refreshed index answers and the save waits."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(30):
        (notes / f"Decision {i}.md").write_text(f"# Decision {i}\n\nThe ledger keeps {i} days.\n")
    from cortexgraph.vault_sync import LTMIndex

    stored = LTMIndex.open(tmp_path)
    before = stored.file.read_bytes()
    (notes / "Audit logs.md").write_text("# Audit logs\n\nAudit logs stay for a year.\n")
    out = run_with_file_size_limit(
        """
        from cortexgraph.storage import InMemoryStore
        from cortexgraph.vault_sync import LTMIndex, search_unified
        vault = Path(sys.argv[1])
        room_for(vault / "notes" / "Audit logs.md", 0)  # far less than the index file
        index = LTMIndex.open(vault)
        hits = search_unified(InMemoryStore(), index, "audit logs", limit=3)
        print(json.dumps({"notes": len(index.notes), "top": hits[0].note_path}))
        """,
        str(tmp_path),
    )
    assert out["notes"] == 31 and out["top"] == "notes/Audit logs.md"
    assert stored.file.read_bytes() == before  # the save waits for room
    assert LTMIndex.open(tmp_path).get("notes/Audit logs.md") is not None  # and then happens
