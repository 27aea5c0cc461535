"""Torn and corrupt lines never stop a load and are never silently dropped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cortexgraph.storage import JSONLStore

NOW = 1_704_067_200


def _seed(path: Path) -> tuple[JSONLStore, list[str]]:
    store = JSONLStore(path)
    ids = [store.save(f"memory {i}", tags=["t"], now=NOW).id for i in range(5)]
    store.add_relation(ids[0], ids[1], now=NOW)
    return store, ids


def _quarantined(path: Path, name: str = "memories") -> list[dict]:
    qfile = path / f"{name}.quarantine.jsonl"
    return [json.loads(line) for line in qfile.read_text().splitlines()] if qfile.exists() else []


def test_torn_last_line_is_quarantined_and_next_append_starts_fresh(tmp_path):
    _, ids = _seed(tmp_path)
    torn = b'{"id": "4d1c1f52-0000-4000-8000-000000000000", "content": "half a rec'
    with (tmp_path / "memories.jsonl").open("ab") as f:
        f.write(torn)  # a writer killed mid-line: no newline
    store = JSONLStore(tmp_path)
    assert sorted(m.id for m in store.list()) == sorted(ids)
    assert len(store.relations()) == 1
    assert store.stats().quarantined_lines == 1
    q = _quarantined(tmp_path)
    assert q[0]["line"] == torn.decode() and "JSONDecodeError" in q[0]["reason"]
    new = store.save("after the crash", now=NOW)
    raw = (tmp_path / "memories.jsonl").read_bytes()
    assert torn not in raw and raw.endswith(b"\n")
    assert all(json.loads(line) for line in raw.splitlines())
    again = JSONLStore(tmp_path)
    assert sorted(m.id for m in again.list()) == sorted([*ids, new.id])
    assert again.stats().quarantined_lines == 1  # reported, not re-quarantined


def test_valid_but_unterminated_last_line_does_not_glue(tmp_path):
    store, ids = _seed(tmp_path)
    path = tmp_path / "memories.jsonl"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))  # killed just before the newline
    new = store.save("next", now=NOW)
    assert sorted(m.id for m in JSONLStore(tmp_path).list()) == sorted([*ids, new.id])
    assert _quarantined(tmp_path) == []


def test_garbage_and_bad_field_lines_are_quarantined_with_reasons(tmp_path):
    _, ids = _seed(tmp_path)
    path = tmp_path / "memories.jsonl"
    lines = path.read_text().splitlines()
    bad_field = json.loads(lines[0]) | {"id": "aaaaaaaa-0000-4000-8000-000000000001", "strength": 7}
    not_object = "[1, 2, 3]"
    lines[2:2] = ["this line was edited by hand", json.dumps(bad_field), not_object, "{}"]
    path.write_text("\n".join(lines) + "\n")
    store = JSONLStore(tmp_path)
    assert sorted(m.id for m in store.list()) == sorted(ids)
    assert store.stats().quarantined_lines == 4
    reasons = " | ".join(q["reason"] for q in _quarantined(tmp_path))
    assert "JSONDecodeError" in reasons and "strength" in reasons and "string id" in reasons
    assert len(path.read_text().splitlines()) == len(lines) - 4


def test_bad_newest_version_falls_back_to_the_last_good_one(tmp_path):
    store, ids = _seed(tmp_path)
    store.update(ids[0], content="good second version")
    path = tmp_path / "memories.jsonl"
    newest = json.loads(path.read_text().splitlines()[-1]) | {"created_at": "yesterday"}
    with path.open("a") as f:
        f.write(json.dumps(newest) + "\n")
    again = JSONLStore(tmp_path)
    assert again.get(ids[0]).content == "good second version"
    assert "created_at" in _quarantined(tmp_path)[0]["reason"]


def test_bad_relation_line_is_quarantined_separately(tmp_path):
    _, _ids = _seed(tmp_path)
    with (tmp_path / "relations.jsonl").open("a") as f:
        f.write('{"id": "r-1", "from_memory_id": "x", "to_memory_id": "y", "strength": 9}\n')
    store = JSONLStore(tmp_path)
    assert len(store.relations()) == 1 and len(store) == 5
    assert store.stats().quarantined_lines == 1
    assert "strength" in _quarantined(tmp_path, "relations")[0]["reason"]


def test_open_store_notices_a_torn_line_written_after_it_loaded(tmp_path):
    store, ids = _seed(tmp_path)
    with (tmp_path / "memories.jsonl").open("ab") as f:
        f.write(b'{"id": "torn')
    assert sorted(m.id for m in store.list()) == sorted(ids)
    assert store.stats().quarantined_lines == 1
    store.save("fine", now=NOW)
    assert len(JSONLStore(tmp_path)) == 6


def test_quarantine_is_reported_on_stderr(tmp_path):
    _seed(tmp_path)
    with (tmp_path / "memories.jsonl").open("ab") as f:
        f.write(b"not json at all\n")
    code = "import sys; from cortexgraph.storage import JSONLStore; print(len(JSONLStore(sys.argv[1])))"
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(root),
    )
    assert out.stdout.strip() == "5"
    assert "moved 1 unreadable line(s)" in out.stderr
    assert "memories.quarantine.jsonl" in out.stderr
