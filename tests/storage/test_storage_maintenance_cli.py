"""``cortexgraph-maintenance stats|compact`` against a real directory."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cortexgraph.cli.maintenance import app
from cortexgraph.storage import JSONLStore

runner = CliRunner()


def _seed(path):
    store = JSONLStore(path)
    a = store.save("alpha", tags=["t"], now=1_700_000_000)
    b = store.save("beta", now=1_700_000_000)
    for i in range(4):
        store.touch(a.id, now=1_700_000_100 + i)
    store.add_relation(a.id, b.id)
    store.delete(store.save("gamma").id)
    return store


def test_stats_json_reports_counts(tmp_path):
    _seed(tmp_path)
    result = runner.invoke(app, ["stats", "--storage-path", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["memories"], data["relations"], data["quarantined_lines"]) == (2, 1, 0)
    assert data["file_bytes"] == sum(p.stat().st_size for p in tmp_path.glob("*.jsonl"))


def test_stats_table_is_human_readable(tmp_path):
    _seed(tmp_path)
    result = runner.invoke(app, ["stats", "--storage-path", str(tmp_path)])
    assert result.exit_code == 0 and "quarantined_lines" in result.output


def test_compact_rewrites_and_keeps_records(tmp_path):
    store = _seed(tmp_path)
    before = {m.id: m for m in store.list()}
    result = runner.invoke(app, ["compact", "--storage-path", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["memories_kept"], data["relations_kept"]) == (2, 1)
    assert data["lines_before"] == 2 + 4 + 1 + 2 and data["lines_after"] == 3
    assert len((tmp_path / "memories.jsonl").read_text().splitlines()) == 2
    assert {m.id: m for m in JSONLStore(tmp_path).list()} == before


def test_storage_path_from_environment(tmp_path, monkeypatch):
    _seed(tmp_path)
    monkeypatch.setenv("CORTEXGRAPH_STORAGE_PATH", str(tmp_path))
    result = runner.invoke(app, ["stats", "--json"])
    assert result.exit_code == 0 and json.loads(result.output)["memories"] == 2


def test_path_that_is_a_file_is_a_clear_error(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    result = runner.invoke(app, ["stats", "--storage-path", str(f)])
    assert result.exit_code == 2
    assert "is a file, not a directory" in result.output
