"""`cortexgraph-consolidate --dry-run` on a store with an unreadable line: not a byte of the
store, its issue repository, its run record or the vault changes (the line is not moved to
quarantine), and the run says how many lines are unreadable and where a live run moves them."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cortexgraph.cli.consolidate import app
from cortexgraph.storage import open_store

BROKEN = '{"id": "half-written\n'


def _tree_bytes(*roots: Path) -> dict[str, bytes | None]:
    return {
        str(p): p.read_bytes() if p.is_file() else None
        for root in roots
        for p in sorted(root.rglob("*"))
    }


def test_a_dry_run_leaves_an_unreadable_line_in_place_and_says_where_it_would_go(
    prefect_harness, tmp_path, monkeypatch
):
    monkeypatch.setenv("CORTEXGRAPH_ENABLE_EMBEDDINGS", "false")
    store_dir, vault = tmp_path / "store", tmp_path / "vault"
    store = open_store(store_dir)
    for i in range(4):
        store.save(f"We chose PostgreSQL for the ledger, take {i % 2}", tags=["decision"])
    vault.mkdir()
    common = ["--storage-path", str(store_dir), "--vault", str(vault), "--json"]
    live = CliRunner().invoke(app, common)  # issues, the run record and its state exist
    assert live.exit_code == 0, live.output
    assert (store_dir / ".beads").is_dir() and (store_dir / "consolidation-runs.jsonl").is_file()
    memories = store_dir / "memories.jsonl"
    lines = memories.read_bytes().splitlines(keepends=True)
    memories.write_bytes(b"".join([lines[0], BROKEN.encode(), *lines[1:]]))
    before = _tree_bytes(store_dir, vault)

    result = CliRunner().invoke(app, [*common, "--dry-run"])

    assert result.exit_code == 0, result.output
    assert _tree_bytes(store_dir, vault) == before
    assert not (store_dir / "memories.quarantine.jsonl").exists()
    # the report is the JSON line; the runner mixes Prefect's log lines into the output
    report = next(line for line in result.output.splitlines() if line.startswith('{"'))
    notes = json.loads(report)["notes"]
    said = [n for n in notes if "unreadable" in n]
    assert len(said) == 1
    assert said[0].startswith(
        f"1 unreadable line(s) in {memories}, left in place by this read; the next live run "
        f"moves them to {store_dir / 'memories.quarantine.jsonl'} (first: "
    )
