"""A relation or an issue another process writes *during* a consolidation run is seen by the
next run: the run's state does not record the relations or issue file as seen when it moved
for more than the run's own writes (``cortexgraph.run_state.files_seen``), so the next run
opens the store instead of answering "nothing changed". The run's own relations and issue
changes still count as seen: the run after it opens nothing.

Through the flow's Python API (``run_pipeline``, the session's Prefect test server) with a
real second writer: a process started between two agents' steps.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from cortexgraph.flows.consolidation import run_pipeline
from cortexgraph.flows.pipeline_setup import RunOptions
from cortexgraph.run_state import STATE_FILE
from cortexgraph.settings import load_settings
from cortexgraph.storage import open_store

NOT_OPENED = "store not opened"

RELATE = (
    "import sys; from cortexgraph.storage import open_store; s = open_store(sys.argv[1]); "
    "s.add_relation(sys.argv[2], sys.argv[3], 'contradicts', metadata={'by': 'a person'})"
)
ISSUE = (
    "import sys; from cortexgraph.storage.beads import open_tracker; "
    "open_tracker(sys.argv[1], search_parents=False, init=False)"
    ".create('Check the standup notes', labels=('person',))"
)


def opened_store(report) -> bool:
    return not any(NOT_OPENED in n for n in report.notes)


def files_recorded(store_dir) -> bool:
    with np.load(store_dir / STATE_FILE) as data:
        return "files" in data.files


def beside(at: str, *argv: str):
    """An ``on_step`` listener that runs another process once ``at``'s step is done."""

    def listen(name, report, seconds):
        if name == at:
            subprocess.run([sys.executable, "-c", *argv], check=True)

    return listen


def test_a_relation_another_process_adds_during_a_run_is_seen_by_the_next(
    prefect_harness, demo_dirs
):
    """Added after the run's last read of the relations (a relation added earlier makes the
    store read its files again whole, which the state sees by itself)."""
    store_dir, vault = demo_dirs
    settings = load_settings(
        storage_path=store_dir, ltm_vault_path=vault, beads_enabled=False, enable_embeddings=False
    )
    options = RunOptions(use_embeddings=False)
    a, b = sorted(m.id for m in open_store(store_dir).list())[:2]

    first = run_pipeline(
        settings, replace(options, on_step=beside("relations", RELATE, str(store_dir), a, b))
    )
    assert first.reports["relations"].discovered  # and relations of its own before it
    assert any(r.metadata.get("by") == "a person" for r in open_store(store_dir).relations())
    assert not files_recorded(store_dir)

    assert opened_store(run_pipeline(settings, options))  # the next run looks
    assert not opened_store(run_pipeline(settings, options))


@pytest.mark.parametrize("at", ["decay", "relations"])
def test_an_issue_another_process_opens_during_a_run_is_seen_by_the_next(
    prefect_harness, demo_dirs, at
):
    store_dir, vault = demo_dirs
    settings = load_settings(
        storage_path=store_dir, ltm_vault_path=vault, beads_enabled=True, enable_embeddings=False
    )
    options = RunOptions(use_embeddings=False)
    run_pipeline(settings, options)  # makes the tracker, with the run's own issues in it
    assert files_recorded(store_dir)  # its own issue batch counts as seen
    open_store(store_dir).save("Dana moved the standup to ten")  # something for a run to do

    run = run_pipeline(settings, replace(options, on_step=beside(at, ISSUE, str(store_dir))))
    assert opened_store(run)
    assert not files_recorded(store_dir)

    assert opened_store(run_pipeline(settings, options))  # the next run looks
    assert not opened_store(run_pipeline(settings, options))


def test_a_relations_file_that_shrank_and_grew_between_two_looks_counts_as_moved(tmp_path):
    # files_seen stats the file, then reads the lines it grew by. A hand truncation below its
    # size at the run's open, then growth before the read, gives an end before the start: that
    # is no run's own append (a read of a negative count would take the rest of the file).
    from cortexgraph.run_files import _tail_ids

    lines = (
        b'{"id": "r1", "source": "a", "target": "b"}\n{"id": "r2", "source": "b", "target": "c"}\n'
    )
    path = tmp_path / "relations.jsonl"
    path.write_bytes(lines)
    inode = path.stat().st_ino
    first = lines.index(b"\n") + 1
    assert _tail_ids(path, inode, first, len(lines)) == {"r2"}
    assert _tail_ids(path, inode, len(lines), first) is None
