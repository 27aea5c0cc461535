"""A write that runs out of space: the caller is told, and the file is as it was.

A full disk is met as a short write (some bytes land, then ENOSPC). Appending those bytes and
leaving them made the next catch-up read the failed batch's complete lines back as another
process's records (memories the caller was told were not saved), and its cut line quarantined
as corruption. Each test runs in a child process under a file-size limit, which the kernel
enforces as it does a full disk: a short write, then an error (``child_env``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from child_env import run_with_file_size_limit

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")


def test_a_save_that_runs_out_of_space_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    out = run_with_file_size_limit(
        """
        from cortexgraph.storage import JSONLStore
        from cortexgraph.storage.errors import StorageError
        store = JSONLStore(Path(sys.argv[1]))
        kept = [store.save(f"kept memory {i}", now=1_700_000_000).id for i in range(3)]
        mem = Path(sys.argv[1]) / "memories.jsonl"
        before = mem.read_bytes()
        room_for(mem, 300)  # about one and a half of the five lines below
        from cortexgraph.storage.validation import new_memory
        try:
            store.put_many([new_memory("lost " + "x" * 150 + str(i)) for i in range(5)])
            refused = ""
        except StorageError as e:
            refused = str(e)
        unlimited()
        same = mem.read_bytes() == before
        after = store.save("saved once there was room", now=1_700_000_001).id
        print(json.dumps({"kept": kept, "after": after, "refused": refused, "same": same,
                          "seen": sorted(m.id for m in store.list())}))
        """,
        str(tmp_path),
    )
    assert "cannot write" in out["refused"]
    assert out["same"], "the failed batch's bytes were left in memories.jsonl"
    expected = sorted([*out["kept"], out["after"]])
    assert out["seen"] == expected  # the writer's own view: no half of the failed batch

    from cortexgraph.storage import JSONLStore

    reopened = JSONLStore(tmp_path)
    assert sorted(m.id for m in reopened.list()) == expected
    assert reopened.quarantined_lines == 0
    assert not list(tmp_path.glob("*.quarantine.jsonl"))


def test_a_deletion_that_runs_out_of_space_deletes_nothing(tmp_path: Path) -> None:
    """A deletion appends the relations' tombstones, then the memory's: the second failing
    must not leave the first, or the memory would stay with its links gone."""
    out = run_with_file_size_limit(
        """
        from cortexgraph.storage import JSONLStore
        from cortexgraph.storage.errors import StorageError
        store = JSONLStore(Path(sys.argv[1]))
        a = store.save("Sam chose PostgreSQL", now=1_700_000_000)
        b = store.save("Sam's ledger runs on PostgreSQL", now=1_700_000_000)
        rel = store.add_relation(a.id, b.id, "related")
        mem = Path(sys.argv[1]) / "memories.jsonl"
        room_for(mem, 0)  # relations.jsonl has room, memories.jsonl has none
        try:
            store.delete(a.id)
            refused = ""
        except StorageError as e:
            refused = str(e)
        unlimited()
        print(json.dumps({"refused": refused, "a": a.id, "rel": rel.id,
                          "relations": [r.id for r in store.relations(a.id)]}))
        """,
        str(tmp_path),
    )
    assert "cannot write" in out["refused"]
    assert out["relations"] == [out["rel"]]

    from cortexgraph.storage import JSONLStore

    reopened = JSONLStore(tmp_path)
    assert reopened.get(out["a"])
    assert [r.id for r in reopened.relations(out["a"])] == [out["rel"]]


def _store_with_a_torn_line(path: Path) -> list[str]:
    from cortexgraph.storage import JSONLStore

    store = JSONLStore(path)
    ids = [
        store.save(f"memory {i} about the billing ledger", now=1_700_000_000).id for i in range(20)
    ]
    with (path / "memories.jsonl").open("ab") as f:
        f.write(b'{"id": "torn by a crash", "con\n')
    return sorted(ids)


def test_a_store_with_an_unreadable_line_still_opens_on_a_full_disk(tmp_path: Path) -> None:
    """Moving an unreadable line aside rewrites the file, which a full disk refuses: the store
    used to refuse to open, so every tool failed. Now it opens without the line, leaves the
    file as it is, and the first open with room moves the line (once)."""
    good = _store_with_a_torn_line(tmp_path)
    before = (tmp_path / "memories.jsonl").read_bytes()
    out = run_with_file_size_limit(
        """
        from cortexgraph.storage import JSONLStore, StoreConfig
        room_for(Path(sys.argv[1]) / "memories.jsonl", -100)  # less than it holds without the line
        store = JSONLStore(Path(sys.argv[1]), StoreConfig(snapshot_min_bytes=1))
        print(json.dumps({"ids": sorted(m.id for m in store.list())}))
        """,
        str(tmp_path),
    )
    assert out["ids"] == good
    assert (tmp_path / "memories.jsonl").read_bytes() == before
    assert not (tmp_path / "memories.quarantine.jsonl").exists()  # its entry taken back out
    assert not (tmp_path / ".cortexgraph-index.pickle").exists()  # no snapshot of those bytes

    from cortexgraph.storage import JSONLStore

    store = JSONLStore(tmp_path)
    assert sorted(m.id for m in store.list()) == good
    assert store.quarantined_lines == 1
    assert b"torn by a crash" not in (tmp_path / "memories.jsonl").read_bytes()


def test_a_compaction_on_a_full_disk_fails_before_it_drops_an_unmoved_line(
    tmp_path: Path,
) -> None:
    """A compaction writes the files from the view, which leaves the unmoved line out: it must
    move the line aside first, or fail and lose nothing."""
    good = _store_with_a_torn_line(tmp_path)
    out = run_with_file_size_limit(
        """
        from cortexgraph.storage import JSONLStore
        from cortexgraph.storage.errors import StorageError
        mem = Path(sys.argv[1]) / "memories.jsonl"
        room_for(mem, -100)
        store = JSONLStore(Path(sys.argv[1]))
        try:
            store.compact()
            refused = ""
        except StorageError as e:
            refused = str(e)
        torn_kept = b"torn by a crash" in mem.read_bytes()
        unlimited()
        report = store.compact()
        print(json.dumps({"refused": refused, "torn_kept": torn_kept,
                          "kept": report.memories_kept, "quarantined": store.quarantined_lines}))
        """,
        str(tmp_path),
    )
    assert out["refused"] and out["torn_kept"]
    assert out["kept"] == len(good) and out["quarantined"] == 1
    lines = (tmp_path / "memories.quarantine.jsonl").read_text().splitlines()
    assert len(lines) == 1 and "torn by a crash" in lines[0]


def test_an_embedding_cache_that_cannot_be_saved_is_a_warning_and_leaves_no_temp_file(
    tmp_path: Path,
) -> None:
    """The vector cache is an optimisation: on a full disk its save warns instead of failing
    the search or the run that called it (unified search saved it, and raised), removes the
    half-written temp file, and saves at the next chance."""
    out = run_with_file_size_limit(
        """
        import logging
        logging.basicConfig(level=logging.WARNING, format="%(message)s")
        sys.path.insert(0, "tests")
        from fakes import HashingEmbedder
        from cortexgraph.storage.embedding_cache import EmbeddingCache
        folder = Path(sys.argv[1])
        cache = EmbeddingCache(HashingEmbedder(), folder)
        cache.embed([f"text number {i} about the billing ledger" for i in range(200)])
        (folder / "room").write_bytes(b"")
        room_for(folder / "room", 20_000)  # less than 200 rows of 384 floats
        cache.save()
        left_while_full = sorted(p.name for p in folder.iterdir())
        unlimited()
        cache.save()
        print(json.dumps({"full": left_while_full,
                          "after": sorted(p.name for p in folder.iterdir()),
                          "rows": len(EmbeddingCache(HashingEmbedder(), folder))}))
        """,
        str(tmp_path),
    )
    lock = ".embeddings-hashing-test.lock"  # the writers' lock (storage/embedding_files.py)
    assert out["full"] == [lock, "room"]  # no cache file, no temp file
    assert out["after"] == [lock, ".embeddings-hashing-test.npz", "room"]
    assert out["rows"] == 200
