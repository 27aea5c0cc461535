"""storage.store_files: the store directory's files by kind, and wiping a store."""

from __future__ import annotations

from pathlib import Path

from cortexgraph.storage import JSONLStore
from cortexgraph.storage.index_snapshot import SNAPSHOT_NAME
from cortexgraph.storage.store_files import disk_bytes_by_kind, file_kind, wipe

NOW = 1_700_000_000


def test_file_kind_names_each_file_of_a_store() -> None:
    assert file_kind("memories.jsonl") == "memories"
    assert file_kind("relations.jsonl") == "relations"
    assert file_kind("memories.quarantine.jsonl") == "quarantine"
    assert file_kind(SNAPSHOT_NAME) == "text_index"
    assert file_kind(".embeddings-minilm.npz") == "embeddings"
    assert file_kind("consolidation-runs.jsonl") == "other"


def test_disk_bytes_by_kind_leaves_git_and_beads_history_out(tmp_path: Path) -> None:
    (tmp_path / "memories.jsonl").write_text("x" * 10)
    (tmp_path / ".embeddings-m.npz").write_bytes(b"y" * 4)
    for history in (".git", ".beads"):
        (tmp_path / history).mkdir()
        (tmp_path / history / "issues.jsonl").write_text("z" * 100)
    assert disk_bytes_by_kind(tmp_path) == {"memories": 10, "embeddings": 4}
    assert disk_bytes_by_kind(tmp_path / "missing") == {}


def test_wipe_deletes_every_record_and_the_derived_files(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path)
    a = store.save("kayak trip in May", now=NOW)
    b = store.save("kayak repairs", now=NOW)
    store.add_relation(a.id, b.id, now=NOW)
    for name in (SNAPSHOT_NAME, ".embeddings-m.npz", "memories.quarantine.jsonl", "runs.jsonl"):
        (tmp_path / name).write_text("-")
    (tmp_path / "keep.txt").write_text("mine")

    report = wipe(store, tmp_path, also_remove=("runs.jsonl",))

    assert (report.memories_deleted, report.relations_deleted) == (2, 1)
    assert sorted(report.files_removed) == sorted(
        [SNAPSHOT_NAME, ".embeddings-m.npz", "memories.quarantine.jsonl", "runs.jsonl"]
    )
    assert len(store) == 0 and store.relations() == []
    assert len(JSONLStore(tmp_path)) == 0
    assert (tmp_path / "keep.txt").is_file()
