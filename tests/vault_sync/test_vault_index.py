"""The LTM index on a messy vault: nothing crashes, everything is indexed or skipped with a
reason, rebuilds are incremental, nothing is printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cortexgraph.vault_sync import LTMIndex, check_vault
from cortexgraph.vault_sync.ltm_index import INDEX_FILE


def test_messy_vault_is_indexed_without_crashing(messy_vault: Path, capfd) -> None:
    idx = LTMIndex(messy_vault)
    report = idx.refresh()
    assert capfd.readouterr().out == ""
    assert set(idx.notes) == {
        "Daily/2024-01-01.md",
        "Kafka migration.md",
        "broken-yaml.md",
        "list-frontmatter.md",
        "unclosed.md",
        "template.md",
        "Projects/Index.md",
        "Archive/Index.md",
        "empty.md",
        "From cortexgraph one.md",
    }
    reasons = {s.path: s.reason for s in report.skipped}
    assert reasons[".obsidian/"] == "Obsidian settings folder"
    assert reasons[".trash/"] == "Obsidian trash"
    assert reasons["attachments/diagram.png"].startswith("attachment")
    assert reasons["board.canvas"].startswith("attachment")
    assert report.broken_frontmatter == 3  # broken-yaml, list-frontmatter, unclosed

    daily = idx.get("Daily/2024-01-01.md")
    assert daily.title == "Monday"
    assert daily.frontmatter["date"] == "2024-01-01"  # a bare date: a string, not a crash
    assert daily.frontmatter["reviewed"] == ["2024-01-02", "2024-01-03"]
    assert daily.frontmatter["meta"]["weather"] == {"temp": 3, "sky": "grey"}
    assert daily.tags == ("daily", "journal/2024", "meeting")
    assert daily.wikilinks == ("Index", "Kafka migration")

    kafka = idx.get("Kafka migration.md")
    assert kafka.frontmatter == {} and kafka.frontmatter_error is None
    assert kafka.tags == ("project/kafka", "infra")  # nested kept; code and `inline` ignored
    assert kafka.wikilinks == ("Daily/2024-01-01", "Does not exist")  # embeds are not links

    broken = idx.get("broken-yaml.md")
    assert broken.frontmatter_error.startswith("invalid YAML")
    assert "Body of a note whose YAML is broken" in broken.content  # nothing lost
    assert idx.get("template.md").frontmatter["title"] == "{{title}}"
    assert idx.get("Projects/Index.md").tags == ("alpha", "beta")
    assert idx.get("Projects/Index.md").aliases == ("Projects home",)
    legacy = idx.get("From cortexgraph one.md")
    assert legacy.memory_id == "3f2b8c1e-9d4a-4e7b-8f1a-2c3d4e5f6a7b"
    assert legacy.tags == ("legacy",)


def test_duplicate_names_and_links(messy_vault: Path) -> None:
    idx = LTMIndex.open(messy_vault)
    assert idx.resolve_link("Projects/Index").path == "Projects/Index.md"
    assert idx.resolve_link("Archive/Index").path == "Archive/Index.md"
    assert idx.resolve_link("kafka MIGRATION").path == "Kafka migration.md"
    assert idx.resolve_link("Daily/2024-01-01").path == "Daily/2024-01-01.md"
    assert idx.backlinks("Kafka migration.md") == ["Daily/2024-01-01.md", "Projects/Index.md"]
    assert idx.broken_links() == [("Kafka migration.md", "Does not exist")]


def test_check_reports_broken_frontmatter_links_and_conflicts(messy_vault: Path) -> None:
    (messy_vault / "x (cortexgraph conflict).md").write_text("---\nconflict_of: abc\n---\nours\n")
    kinds = {(i.path, i.kind) for i in check_vault(LTMIndex.open(messy_vault))}
    assert ("broken-yaml.md", "broken-frontmatter") in kinds
    assert ("unclosed.md", "broken-frontmatter") in kinds
    assert ("Kafka migration.md", "broken-link") in kinds
    assert ("x (cortexgraph conflict).md", "conflict-copy") in kinds
    assert ("Daily/2024-01-01.md", "broken-link") not in kinds


def test_refresh_is_incremental(messy_vault: Path) -> None:
    first = LTMIndex(messy_vault).refresh()
    assert first.reparsed == 10
    stored = messy_vault / ".cortexgraph" / INDEX_FILE
    before = stored.stat().st_mtime_ns

    again = LTMIndex.open(messy_vault, refresh=False)
    report = again.refresh()
    assert (report.reparsed, report.unchanged, report.removed) == (0, 10, 0)
    assert stored.stat().st_mtime_ns == before  # nothing changed, nothing rewritten

    assert "empty.md" in again.text_index()  # built now, so the next refresh patches it
    note = messy_vault / "Kafka migration.md"
    note.write_text(note.read_text() + "\nNew line about #streaming\n")
    (messy_vault / "empty.md").unlink()
    (messy_vault / "Daily" / "new.md").write_text("# New\n")
    report = again.refresh()
    assert (report.reparsed, report.removed, report.notes) == (2, 1, 10)
    assert "streaming" in again.get("Kafka migration.md").tags
    assert "Daily/new.md" in again.text_index().scores("new")
    assert again.get("empty.md") is None and "empty.md" not in again.text_index()
    fresh = LTMIndex(messy_vault)
    fresh.rebuild()
    assert again.text_index().scores("kafka streaming") == fresh.text_index().scores(
        "kafka streaming"
    )

    # Same size, new mtime: still re-read.
    st = note.stat()
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert again.refresh().reparsed == 1


def test_large_notes_are_indexed_truncated(messy_vault: Path) -> None:
    big = messy_vault / "huge.md"
    big.write_text("# Huge\n\n" + "word " * 300_000 + "\n#tail-tag\n")
    idx = LTMIndex(messy_vault, max_note_bytes=100_000)
    idx.refresh()
    record = idx.get("huge.md")
    assert record.truncated and len(record.content) <= 100_000
    assert record.title == "Huge"
    assert any(i.kind == "truncated" for i in check_vault(idx))


def test_damaged_index_file_is_rebuilt(messy_vault: Path) -> None:
    LTMIndex(messy_vault).refresh()
    (messy_vault / ".cortexgraph" / INDEX_FILE).write_text('{"version": 1}\n{not json\n')
    idx = LTMIndex.open(messy_vault)
    assert len(idx) == 10


def test_index_never_lives_inside_notes(messy_vault: Path) -> None:
    LTMIndex(messy_vault).refresh()
    again = LTMIndex.open(messy_vault)
    assert all(not p.startswith(".cortexgraph") for p in again.notes)


def test_obsidiantools_loads_with_the_first_link_read_not_with_the_package() -> None:
    # obsidiantools imports pandas (~0.8 s): the CLI and the flow import the vault package
    # on every run, and most runs never read a note's links.
    code = (
        "import json, sys\n"
        "import cortexgraph.vault_sync\n"
        "at_import = [m for m in ('obsidiantools', 'pandas') if m in sys.modules]\n"
        "from cortexgraph.vault_sync.markdown_parse import wikilinks\n"
        "links = wikilinks('see [[A#h|x]] and [[B]] ![[img.png]]')\n"
        "print(json.dumps([at_import, links, 'obsidiantools' in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(out.stdout) == [[], ["A", "B"], True]
