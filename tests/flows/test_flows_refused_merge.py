"""A merge the store's limits refuse waits for a person; it does not make every run work.

Two long memories that say one thing, each within CORTEXGRAPH_MAX_CONTENT_BYTES, whose merged
text is not: the merge is refused (agents.merge_ops.MergeTooLargeError) and its issue stays
open for a person. Every later run took the cluster up again as unfinished work: it opened
the store (no "nothing changed" answer, ever again), planned the same merge, was refused
again, and claimed and reopened the issue, one beads commit an hour for nothing. A refused
merge is now left as it is until one of its memories changes (or the weekly full run).

Through run_pipeline (the flow on the session's Prefect server), with a real beads repository.
"""

from __future__ import annotations

from pathlib import Path

from cortexgraph.flows.consolidation import RunOptions, run_pipeline
from cortexgraph.settings import load_settings
from cortexgraph.storage import open_store
from cortexgraph.storage.beads import open_tracker
from cortexgraph.storage.decay import DAY

NOW = 1_760_000_000.0
LIMIT = 1_000
STEPS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
COMMON = " ".join(
    f"The deployment checklist step {w} must be signed off before the release goes out."
    for w in STEPS
)
LONG_A = COMMON + (
    " The reviewers preferred the calmer colour scheme overall, mostly because it tired their"
    " eyes less in long reviews."
)
LONG_B = COMMON + (
    " Everyone agreed the quieter layout reads better on phones, and that it kept the crowded"
    " status panel out of sight."
)


def test_a_refused_merge_is_not_taken_up_by_every_run(
    tmp_path: Path, prefect_harness, monkeypatch
) -> None:
    # The flow reads its settings at its start, as a deployment's run does: from the environment.
    monkeypatch.setenv("CORTEXGRAPH_MAX_CONTENT_BYTES", str(LIMIT))
    monkeypatch.setenv("CORTEXGRAPH_BEADS_ENABLED", "true")
    monkeypatch.setenv("CORTEXGRAPH_ENABLE_EMBEDDINGS", "false")
    settings = load_settings(storage_path=tmp_path / "store", ltm_vault_path=tmp_path / "vault")
    store = open_store(settings.storage_path, settings.store_config())
    a = store.save(LONG_A, now=NOW - 3 * DAY)
    b = store.save(LONG_B, now=NOW - 3 * DAY)
    store.save("Standup is at 9:30 every weekday.", now=NOW - DAY)
    assert max(len(LONG_A.encode()), len(LONG_B.encode())) < LIMIT

    first = run_pipeline(settings, RunOptions(now=NOW))
    [outcome] = first.reports["merge"].outcomes
    assert outcome.status == "refused" and set(outcome.source_ids) == {a.id, b.id}
    assert "limit is 1,000" in outcome.reason
    tracker = open_tracker(settings.storage_path, search_parents=False, init=False)
    [issue] = [i for i in tracker.query(status="open") if "action:merge" in i.labels]
    commits = len(tracker.history(limit=100))
    issues_file = tracker.path.read_bytes()

    # An hour later, nothing saved: the run answers from its state without opening the store,
    # and the refused merge's issue is as the first run left it (no claim, no reopen, no commit).
    later = run_pipeline(settings, RunOptions(now=NOW + 3600))
    assert any("store not opened" in n for n in later.notes), later.notes
    assert tracker.path.read_bytes() == issues_file
    assert len(tracker.history(limit=100)) == commits
    assert tracker.get(issue.id).status == "open"

    # A person shortens one of them: the next run merges them and closes the issue.
    short = COMMON + " The reviewers preferred the calmer colour scheme."
    store.update(b.id, content=short)
    merged = run_pipeline(settings, RunOptions(now=NOW + 7200))
    assert [o.status for o in merged.reports["merge"].outcomes] == ["merged"]
    assert tracker.get(issue.id).status == "closed"
