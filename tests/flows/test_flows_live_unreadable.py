"""A live run (a deployment's, hourly) on a store with an unreadable line: the store's open moves
the line to quarantine, and the run's report - the ``consolidation-report`` artifact in the
Prefect UI, the run record - says so. Before, only a warning on the worker's stderr did, which a
scheduled run's user never reads: the dry run's note ("the next live run moves them to ...") was
the last word the user saw of the line."""

from __future__ import annotations

import pytest

from cortexgraph.flows.consolidation import RunOptions, run_pipeline
from cortexgraph.settings import load_settings
from cortexgraph.storage import open_store

BROKEN = b'{"id": "half-written", "content": \n'
NOW = 1_760_000_000.0 + 3600


def _latest_report_artifact() -> str:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["consolidation-report"])),
            sort=ArtifactSort.CREATED_DESC,
            limit=1,
        )
    return str(found[0].data)


def test_a_live_run_says_it_moved_an_unreadable_line_to_quarantine(prefect_harness, tmp_path):
    store_dir, vault = tmp_path / "store", tmp_path / "vault"
    store = open_store(store_dir)
    for i in range(3):
        store.save(f"We chose PostgreSQL for the ledger, take {i}", tags=["decision"])
    vault.mkdir()
    memories = store_dir / "memories.jsonl"
    with memories.open("ab") as f:
        f.write(BROKEN)
    settings = load_settings(storage_path=store_dir, ltm_vault_path=vault, beads_enabled=False)

    report = run_pipeline(settings, RunOptions(agents=("decay",), use_embeddings=False, now=NOW))

    quarantine = store_dir / "memories.quarantine.jsonl"
    assert quarantine.is_file()  # the open moved it
    said = [n for n in report.notes if "unreadable" in n]
    assert said == [f"moved 1 unreadable line(s) of the store to {quarantine}"], report.notes
    assert said[0] in _latest_report_artifact()
    # the next run finds nothing new in quarantine and says nothing about it
    again = run_pipeline(settings, RunOptions(agents=("decay",), use_embeddings=False, now=NOW))
    assert not [n for n in again.notes if "unreadable" in n]


def test_a_storage_path_that_is_a_file_still_fails_with_the_stores_own_words(
    prefect_harness, tmp_path
):
    """Counting the quarantine files before the open must not pre-empt the open's typed error
    (a NotADirectoryError from reading ``<file>/memories.quarantine.jsonl``)."""
    from cortexgraph.storage.errors import InvalidInputError

    not_a_dir = tmp_path / "store"
    not_a_dir.write_text("a file\n")
    settings = load_settings(
        storage_path=not_a_dir, ltm_vault_path=tmp_path / "vault", beads_enabled=False
    )
    with pytest.raises(InvalidInputError, match="is a file, not a directory"):
        run_pipeline(settings, RunOptions(agents=("decay",), use_embeddings=False, now=NOW))
