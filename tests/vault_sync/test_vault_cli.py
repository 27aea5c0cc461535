"""`cortexgraph vault ...` and `cortexgraph graph` end to end, on a real JSONL store."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cortexgraph.cli import graph_cmd, vault_cmd
from cortexgraph.storage import open_store
from cortexgraph.storage.models import MemoryStatus
from cortexgraph.vault_sync import parse_note_text

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def env(tmp_path: Path, monkeypatch):
    vault = tmp_path / "vault"
    shutil.copytree(FIXTURES / "messy_vault", vault)
    stm = tmp_path / "stm"
    store = open_store(stm)
    memory = store.save(  # weak and three weeks old: not eligible for promotion by itself
        "Invoices are archived for ten years",
        tags=["finance", "legal"],
        strength=0.3,
        now=time.time() - 21 * 86400,
    )
    monkeypatch.setenv("LTM_VAULT_PATH", str(vault))
    monkeypatch.setenv("CORTEXGRAPH_STORAGE_PATH", str(stm))
    monkeypatch.setenv("CORTEXGRAPH_ENABLE_EMBEDDINGS", "false")
    monkeypatch.delenv("LTM_PROMOTED_FOLDER", raising=False)
    return vault, stm, memory


def run(app, *args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_index_stats_and_check(env) -> None:
    _vault, _, _ = env
    res = run(vault_cmd.app, "index")
    assert res.exit_code == 0, res.output
    assert "10 notes indexed" in res.output and "attachment" in res.output
    again = run(vault_cmd.app, "index")
    assert "0 read, 10 unchanged" in again.output
    stats = json.loads(run(vault_cmd.app, "stats", "--json").output)
    assert stats["notes"] == 10 and stats["broken_links"] == 1 and stats["cortexgraph_notes"] == 1
    check = run(vault_cmd.app, "check")
    assert check.exit_code == 1
    assert "broken-frontmatter" in check.output and "Does not exist" in check.output


def test_promote_then_search_finds_it_once(env) -> None:
    vault, stm, memory = env
    res = run(vault_cmd.app, "promote", memory.id)
    assert res.exit_code == 1 and "not eligible" in res.output  # fresh memory, no force
    res = run(vault_cmd.app, "promote", memory.id, "--force")
    assert res.exit_code == 0, res.output
    note = vault / "cortexgraph" / "Invoices are archived for ten years.md"
    assert parse_note_text(note.read_text()).metadata["id"] == memory.id
    stored = open_store(stm).get(memory.id)
    assert stored.status == MemoryStatus.PROMOTED
    assert stored.promoted_to == "cortexgraph/Invoices are archived for ten years.md"

    out = run(vault_cmd.app, "search", "invoices archived", "--json", "--verbose")
    results = json.loads(out.output)
    assert [r["memory_id"] for r in results].count(memory.id) == 1
    assert results[0]["source"] == "both" and results[0]["note_path"] == stored.promoted_to


def test_search_finds_a_promoted_note_by_the_words_a_person_added(env) -> None:
    vault, stm, memory = env
    assert run(vault_cmd.app, "promote", memory.id, "--force").exit_code == 0
    note = vault / str(open_store(stm).get(memory.id).promoted_to)
    note.write_text(note.read_text() + "\nScanned copies go to the tax adviser each March.\n")

    out = run(vault_cmd.app, "search", "tax adviser scanned", "--json", "--verbose")
    [hit] = [r for r in json.loads(out.output) if r["memory_id"] == memory.id]
    assert hit["note_path"] == note.relative_to(vault).as_posix()
    assert hit["preview"].endswith("Scanned copies go to the tax adviser each March.")


def test_promote_with_vault_override_and_unknown_id(env, tmp_path: Path) -> None:
    _, _, memory = env
    other = tmp_path / "other-vault"
    other.mkdir()  # a vault named by --vault must exist (tests/cli/test_cli_first_hour.py)
    res = run(vault_cmd.app, "promote", memory.id, "--force", "--vault", str(other))
    assert res.exit_code == 0 and (other / "cortexgraph").is_dir()
    missing = run(vault_cmd.app, "promote", "0000-not-here", "--force")
    assert missing.exit_code == 2 and "no memory" in missing.output


def test_graph_png_and_html(env, tmp_path: Path) -> None:
    _, _, memory = env
    run(vault_cmd.app, "promote", memory.id, "--force")
    page = tmp_path / "g.html"
    res = run(graph_cmd.app, "--output", str(page))
    assert res.exit_code == 0, res.output
    text = page.read_text()
    assert text.startswith("<!doctype html>") and "<svg" in text and "Kafka migration" in text
    assert "http" not in text.split("<svg", 1)[0].replace("http://www.w3.org", "")
    png = tmp_path / "g.png"
    assert run(graph_cmd.app, "--output", str(png)).exit_code == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = CliRunner().invoke(graph_cmd.app, ["--output", str(tmp_path / "g.txt")])
    assert bad.exit_code != 0
