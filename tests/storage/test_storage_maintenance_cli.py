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


T0 = 1_700_000_000
TURNS = [
    "We adopted a puppy named Rex last spring",
    "Yes, and he already knows how to sit!",
    "My sister is coming over on Sunday",
    "Great, does she like dogs?",
]


def _saved_the_old_way(path):
    """A store as earlier versions wrote it: each MCP save's context is the turn before."""
    store = JSONLStore(path)
    turns, before = [], None
    for i, text in enumerate(TURNS):
        turns.append(store.save(text, context=before, now=T0 + 10 * i))
        before = text
    own = store.save("The vet visit is on Monday", context="pet care chat", now=T0 + 50)
    # Equal to an earlier memory's text, but saved hours later: no save gave it that context.
    late = store.save("Rex chewed a shoe", context=TURNS[0], now=T0 + 3 * 3600)
    # A merge of two turns and the vet memory: its context joins theirs, as a merge writes it.
    sources = [turns[1], turns[3], own]
    joined = "\n".join(s.meta.context for s in sorted(sources, key=lambda s: s.created_at))
    merged = store.save("Rex sits; the vet visit is Monday", context=joined, now=T0 + 10)
    for s in sources:
        store.add_relation(merged.id, s.id, "consolidated_from")
    return store, turns, own, late, merged


def _ranking(store, query, leave_out):
    return [
        r.memory.id for r in store.search(query, top_k=10, status=None) if r.memory.id != leave_out
    ]


def test_repair_context_moves_the_turn_before_out_of_context_once(tmp_path):
    store, turns, own, late, merged = _saved_the_old_way(tmp_path)
    before = {m.id: m for m in store.list()}
    queries = ["puppy Rex", "sister Sunday", "vet pet care"]
    ranked = {q: _ranking(store, q, merged.id) for q in queries}
    files = {p.name: p.read_bytes() for p in tmp_path.glob("*.jsonl")}

    args = ["repair-context", "--storage-path", str(tmp_path), "--json"]
    dry = runner.invoke(app, [*args, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.output)["contexts_moved"] == 3
    assert {p.name: p.read_bytes() for p in tmp_path.glob("*.jsonl")} == files

    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["scanned"], data["contexts_moved"], data["merged_contexts_cleaned"]) == (7, 3, 1)

    after = {m.id: m for m in JSONLStore(tmp_path).list()}
    for t in turns[1:]:
        assert after[t.id].meta.context is None
        assert after[t.id].neighbour_text == before[t.id].meta.context
    assert after[own.id].meta.context == "pet care chat"  # the caller's own context stays
    assert after[late.id].meta.context == TURNS[0]
    assert after[merged.id].meta.context == "pet care chat"  # only its sources' own contexts
    assert after[merged.id].neighbour_text is None
    # Nothing else changed, and every memory but the merge (whose context lost the turns
    # before its sources) ranks where it did.
    for mid, m in after.items():
        assert m.with_changes(meta=before[mid].meta, neighbour_text=None) == before[mid]
    reopened = JSONLStore(tmp_path)
    assert {q: _ranking(reopened, q, merged.id) for q in queries} == ranked

    again = runner.invoke(app, args)
    assert json.loads(again.output)["contexts_moved"] == 0
    assert json.loads(again.output)["merged_contexts_cleaned"] == 0
    table = runner.invoke(app, ["repair-context", "--storage-path", str(tmp_path)])
    assert table.exit_code == 0 and "contexts_moved" in table.output
