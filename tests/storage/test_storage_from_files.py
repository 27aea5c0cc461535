"""InMemoryStore.from_files: a dry run's view of a JSONL store, read without writing a byte."""

from __future__ import annotations

from pathlib import Path

from cortexgraph.storage import InMemoryStore, open_store


def _files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.is_file()}


def test_from_files_reads_live_records_and_writes_nothing(tmp_path: Path) -> None:
    live = open_store(tmp_path)
    a = live.save("Alpha fact about Postgres", tags=["db"], now=1_700_000_000)
    b = live.save("Beta fact about Redis", now=1_700_000_000)
    gone = live.save("Gamma, deleted later", now=1_700_000_000)
    live.add_relation(a.id, b.id, "related", now=1_700_000_000)
    live.add_relation(a.id, gone.id, "related", now=1_700_000_000)
    live.delete(gone.id)
    live.update(b.id, content="Beta fact about Redis 7")
    with (tmp_path / "memories.jsonl").open("a") as f:
        f.write('{"id": "torn-line", "content": \n')  # a hand edit gone wrong
    before = _files(tmp_path)

    copy = InMemoryStore.from_files(tmp_path)

    assert _files(tmp_path) == before
    assert sorted(m.id for m in copy.list()) == sorted([a.id, b.id])
    assert copy.get(b.id).content == "Beta fact about Redis 7"
    assert [(r.from_memory_id, r.to_memory_id) for r in copy.relations()] == [(a.id, b.id)]
    assert copy.search("postgres", now=1_700_000_000)[0].memory.id == a.id
    # the torn line is left where it is, and named with where a live open would move it
    [torn] = copy.unreadable
    assert (torn.path, torn.count) == (tmp_path / "memories.jsonl", 1)
    assert torn.quarantine == tmp_path / "memories.quarantine.jsonl"
    assert torn.first_reason.startswith("JSONDecodeError")


def test_from_files_of_an_empty_directory_is_an_empty_store(tmp_path: Path) -> None:
    assert len(InMemoryStore.from_files(tmp_path)) == 0
    assert InMemoryStore.from_files(tmp_path).unreadable == ()
    assert list(tmp_path.iterdir()) == []
