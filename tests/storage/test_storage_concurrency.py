"""Several processes share one JSONL store: nothing is lost, nothing is duplicated."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys

import storage_workers

from cortexgraph.storage import JSONLStore

WRITERS = 4
PER_WRITER = 150
TOUCHES = 150


def test_concurrent_writers_and_compaction_lose_nothing(tmp_path):
    path = tmp_path / "stm"
    shared = JSONLStore(path).save("shared memory everyone touches", now=1_700_000_000)
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(WRITERS + 1)  # all begin together, after the slow spawn imports
    procs = [
        ctx.Process(
            target=storage_workers.write_memories,
            args=(str(path), w, PER_WRITER, shared.id, TOUCHES, start),
        )
        for w in range(WRITERS)
    ]
    procs.append(
        ctx.Process(target=storage_workers.compact_repeatedly, args=(str(path), 20, start))
    )
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0

    store = JSONLStore(path)
    contents = sorted(m.content for m in store.list())
    expected = sorted(
        [f"worker {w} memory {i}" for w in range(WRITERS) for i in range(PER_WRITER)]
        + ["shared memory everyone touches"]
    )
    assert contents == expected  # every record, none twice
    # Read-modify-write under the lock: no touch was lost to a race.
    assert store.get(shared.id).use_count == WRITERS * TOUCHES
    assert store.stats().quarantined_lines == 0
    store.compact()
    lines = (path / "memories.jsonl").read_text().splitlines()
    ids = [json.loads(line)["id"] for line in lines]
    assert len(ids) == len(set(ids)) == len(expected)


def test_second_store_sees_appends_updates_and_deletes_of_the_first(tmp_path):
    a, b = JSONLStore(tmp_path), JSONLStore(tmp_path)
    m = a.save("written by a", now=1)
    assert b.get(m.id) == m
    a.touch(m.id, now=2)
    assert b.get(m.id).use_count == 1
    n = b.save("written by b", now=3)
    a.add_relation(m.id, n.id)
    assert len(b.relations(memory_id=n.id)) == 1
    b.delete(m.id)
    assert m.id not in a and a.relations() == []


def test_rewrite_by_another_store_is_noticed_even_if_inode_is_reused(tmp_path, monkeypatch):
    """ext4 hands a freed inode number straight back, so after a compaction the file may have
    the inode a reader remembers and be longer than its offset, yet be a different file."""
    import os

    def replace_keeping_inode(src, dst):  # what inode reuse looks like to a reader
        with open(src, "rb") as f:
            data = f.read()
        with open(dst, "r+b" if os.path.exists(dst) else "wb") as f:
            f.write(data)
            f.truncate()
        os.unlink(src)

    a, b = JSONLStore(tmp_path), JSONLStore(tmp_path)
    first = [a.save(f"first {i}", now=1).id for i in range(3)]
    a.add_relation(first[1], first[2])
    assert len(b) == 3
    monkeypatch.setattr("cortexgraph.storage.jsonl_store.os.replace", replace_keeping_inode)
    b.delete(first.pop(0))  # so the rewritten file's lines no longer line up with a's offset
    b.compact()
    later = [b.save(f"a much longer memory written later, {i}", now=2).id for i in range(10)]
    assert sorted(m.id for m in a.list()) == sorted(first + later)
    assert a.stats().quarantined_lines == 0
    extra = a.save("after compaction", now=6)
    assert {m.id for m in JSONLStore(tmp_path).list()} == {*first, *later, extra.id}


def test_another_process_sees_our_records(tmp_path):
    store = JSONLStore(tmp_path)
    m = store.save("from the parent process", tags=["p"], now=10)
    code = (
        "import sys, json; from cortexgraph.storage import JSONLStore; s = JSONLStore(sys.argv[1]); "
        "n = s.save('from the child', now=11); print(json.dumps([x.content for x in s.list()]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(_repo_root()),
    )
    assert json.loads(out.stdout) == ["from the parent process", "from the child"]
    assert sorted(x.content for x in store.list()) == ["from the child", m.content]


def _repo_root():
    from pathlib import Path

    return Path(__file__).resolve().parents[2]
