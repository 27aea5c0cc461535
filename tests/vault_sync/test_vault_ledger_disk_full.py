"""The vault's write ledger on a full disk (the kernel's file-size limit, as in
tests/storage/test_storage_disk_full.py): a journal line that could not be written whole is
not left half written, where the next line appended to it made one damaged line and was lost."""

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
