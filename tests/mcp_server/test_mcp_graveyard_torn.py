"""gc's record of what it took (``gc-removed.jsonl``, appended as UTF-8) with a torn last line.

A crash or a full disk in the middle of an append can cut a line inside a multi-byte
character. The file was read whole as UTF-8, so one cut "é" made every reader fail with an
untyped UnicodeDecodeError: memory_history and undo_consolidation(action="gc") answered
"Error executing tool ..." for every memory. The lines before the torn one still count.
"""

from __future__ import annotations

from pathlib import Path

from mcp_helpers import OLD, session_payloads

from cortexgraph.storage import open_store


def test_a_torn_multibyte_line_leaves_the_entries_before_it(tmp_path: Path) -> None:
    store = open_store(tmp_path / "stm")
    gone = store.save("Café meetings moved to Thursdays", now=OLD).id
    del store
    (collected,) = session_payloads(tmp_path, ("gc", {"dry_run": False, "archive_instead": False}))
    assert gone in collected["memory_ids"]
    graveyard = tmp_path / "stm" / "gc-removed.jsonl"
    torn = '{"memory": {"id": "x", "content": "Caf\u00e9'.encode()[:-1]  # cut inside "é"
    with graveyard.open("ab") as fh:
        fh.write(torn)

    history, restored = session_payloads(
        tmp_path,
        ("memory_history", {"memory_id": gone}),
        ("undo_consolidation", {"action": "gc", "memory_id": gone}),
    )
    assert history["events"][-1]["source"] == "gc", history["events"]
    assert restored["success"]
    assert open_store(tmp_path / "stm").get(gone).content == "Café meetings moved to Thursdays"
