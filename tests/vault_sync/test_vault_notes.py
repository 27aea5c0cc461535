"""Writing notes: format, idempotence, moved notes, user-edit guard, collisions, traversal."""

from __future__ import annotations

from pathlib import Path

import pytest

from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.models import MemoryStatus
from cortexgraph.vault_sync import ObsidianNoteSink, parse_note_text, promote_memory
from cortexgraph.vault_sync.errors import UnsafePathError
from cortexgraph.vault_sync.note_format import OWN_FIELDS, body_checksum, obsidian_tag

NOW = 1_750_000_000.0  # a fixed clock: 2025-06-15 UTC


def _save(store: InMemoryStore, content: str, **kw):
    return store.save(content, now=NOW - 86400, **kw)


def _read(vault: Path, rel: str):
    return parse_note_text((vault / rel).read_text(encoding="utf-8"))


def test_note_has_every_field_and_the_related_section(store, sink, vault) -> None:
    other = _save(store, "Ledger writes must be idempotent")
    m = _save(
        store,
        "We chose PostgreSQL for the ledger",
        tags=["db", "machine learning", "#arch/decisions"],
        entities=["PostgreSQL"],
        source="chat",
        context="architecture review",
    )
    store.add_relation(m.id, other.id, "supports", now=NOW)
    promote_memory(store, sink, other.id, now=NOW, force=True)
    out = promote_memory(store, sink, m.id, reason="used 5 times", now=NOW)

    note = _read(vault, out.path)
    assert note.frontmatter_error is None
    assert list(note.metadata)[: len(OWN_FIELDS)] == list(OWN_FIELDS)
    meta = note.metadata
    assert meta["id"] == m.id
    assert meta["tags"] == ["db", "machine-learning", "arch/decisions"]
    assert meta["entities"] == ["PostgreSQL"]
    assert meta["source"] == "chat"
    assert meta["promotion_reason"] == "used 5 times"
    assert meta["cortexgraph"]["version"]
    assert meta["created"].startswith("2025-06-14")  # NOW - 1 day, UTC
    assert "We chose PostgreSQL for the ledger" in note.body
    assert "## Context\n\narchitecture review" in note.body
    assert "- [[Ledger writes must be idempotent]] (supports)" in note.body
    assert "- [[PostgreSQL]] (entity)" in note.body
    entity = (vault / "cortexgraph/entities/PostgreSQL.md").read_text()
    assert "[[We chose PostgreSQL for the ledger]]" in entity


def test_promotion_marks_the_memory_and_is_idempotent(store, sink, vault) -> None:
    m = _save(store, "Deploys happen on Tuesdays", tags=["ops"])
    first = promote_memory(store, sink, m.id, now=NOW, force=True)
    assert first.created
    marked = store.get(m.id)
    assert marked.status == MemoryStatus.PROMOTED
    assert marked.promoted_at == int(NOW)
    assert marked.promoted_to == first.path
    again = promote_memory(store, sink, m.id, now=NOW + 60, force=True)
    assert not again.created and again.path == first.path
    assert len(list((vault / "cortexgraph").glob("*.md"))) == 1
    assert store.get(m.id).promoted_at == int(NOW)  # the first promotion's time stays


def test_ineligible_memory_is_not_promoted_without_force(store, sink, vault) -> None:
    m = store.save("fresh but weak", strength=0.1, now=NOW - 30 * 86400)
    out = promote_memory(store, sink, m.id, now=NOW)
    assert not out.promoted
    assert store.get(m.id).status == MemoryStatus.ACTIVE
    assert not (vault / "cortexgraph").exists()


def test_dry_run_writes_nothing(store, sink, vault) -> None:
    m = _save(store, "dry run memory")
    out = promote_memory(store, sink, m.id, now=NOW, force=True, dry_run=True)
    assert out.promoted and out.dry_run
    assert not (vault / "cortexgraph").exists()
    assert store.get(m.id).status == MemoryStatus.ACTIVE


def test_a_moved_and_renamed_note_is_updated_in_place(store, sink, vault) -> None:
    m = _save(store, "Backups run nightly")
    path = vault / promote_memory(store, sink, m.id, now=NOW, force=True).path
    moved = vault / "Ops" / "My backup note.md"
    moved.parent.mkdir()
    path.rename(moved)
    store.update(m.id, use_count=9)
    out = promote_memory(store, sink, m.id, now=NOW + 10, force=True)
    assert out.path == "Ops/My backup note.md" and not out.created
    assert _read(vault, out.path).metadata["use_count"] == 9
    assert not path.exists()
    assert len(list(vault.rglob("*.md"))) == 1


def test_user_body_edit_is_kept_and_our_version_goes_to_a_conflict_copy(store, sink, vault):
    m = _save(store, "The API rate limit is 100 per minute", tags=["api"])
    rel = promote_memory(store, sink, m.id, now=NOW, force=True).path
    path = vault / rel
    head, body = path.read_text().split("\n---\n", 1)
    body = body.replace("100 per minute", "100 per minute (I checked: per key!)")
    head = head.replace("tags:\n- api", "tags:\n- api\n- mine")
    path.write_text(f"{head}\n---\n{body}\nMy own paragraph.\n")
    store.update(m.id, content="The API rate limit is 120 per minute", use_count=7)

    out = promote_memory(store, sink, m.id, now=NOW + 100, force=True)
    note = _read(vault, rel)
    assert "I checked: per key!" in note.body and "My own paragraph." in note.body
    assert "120 per minute" not in note.body
    assert note.metadata["use_count"] == 7  # our own frontmatter field was updated
    assert note.metadata["tags"] == ["api", "mine"]  # the person's tag survives
    assert out.conflict_path is not None
    conflict = _read(vault, out.conflict_path)
    assert "120 per minute" in conflict.body
    assert "id" not in conflict.metadata and conflict.metadata["conflict_of"] == m.id
    # Promoting again without news neither touches the body nor makes another copy.
    again = promote_memory(store, sink, m.id, now=NOW + 200, force=True)
    assert again.conflict_path is None and again.path == rel
    assert "My own paragraph." in _read(vault, rel).body
    assert len(list(path.parent.glob("*conflict*.md"))) == 1


def test_unedited_note_gets_new_content_and_user_frontmatter_keys_stay(store, sink, vault):
    m = _save(store, "Cache TTL is 5 minutes")
    rel = promote_memory(store, sink, m.id, now=NOW, force=True).path
    path = vault / rel
    path.write_text(path.read_text().replace("---\n", "---\nrating: 5\n", 1))
    store.update(m.id, content="Cache TTL is 10 minutes")
    out = promote_memory(store, sink, m.id, now=NOW + 1, force=True)
    note = _read(vault, rel)
    assert out.conflict_path is None
    assert "10 minutes" in note.body and "5 minutes" not in note.body
    assert note.metadata["rating"] == 5


def test_broken_yaml_by_a_person_is_not_overwritten(store, sink, vault) -> None:
    m = _save(store, "Secrets live in the vault")
    rel = promote_memory(store, sink, m.id, now=NOW, force=True).path
    path = vault / rel
    broken = path.read_text().replace("title: ", 'title: "oops ', 1)
    path.write_text(broken)
    # Without a parsable id the note is not found by id: a new note is written beside it.
    out = promote_memory(store, sink, m.id, now=NOW + 1, force=True)
    assert path.read_text() == broken
    assert out.path != rel


def test_titles_never_escape_the_vault_and_collisions_get_a_suffix(store, sink, vault, tmp_path):
    evil = [
        _save(store, "../../etc/passwd"),
        _save(store, "/etc/passwd"),
        _save(store, "..\\..\\windows\\system32"),
    ]
    paths = [promote_memory(store, sink, m.id, now=NOW, force=True).path for m in evil]
    for rel in paths:
        full = (vault / rel).resolve()
        assert vault.resolve() in full.parents
        assert rel.startswith("cortexgraph/")
    assert paths[0] == "cortexgraph/etc passwd.md"
    assert paths[1] == "cortexgraph/etc passwd 2.md"  # same title: suffix, not an overwrite
    assert not (tmp_path / "etc").exists()
    ids = {_read(vault, p).metadata["id"] for p in paths}
    assert ids == {m.id for m in evil}


def test_unsafe_folder_is_refused(vault) -> None:
    with pytest.raises(UnsafePathError):
        ObsidianNoteSink(vault, "../outside")


def test_no_temp_files_are_left_behind(store, sink, vault) -> None:
    for i in range(3):
        promote_memory(store, sink, _save(store, f"memory {i}").id, now=NOW, force=True)
    leftovers = [p for p in vault.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []


def test_relation_to_an_unpromoted_memory_makes_no_dangling_link(store, sink, vault) -> None:
    a, b = _save(store, "alpha fact"), _save(store, "beta fact")
    store.add_relation(a.id, b.id, "related", now=NOW)
    rel = promote_memory(store, sink, a.id, now=NOW, force=True).path
    assert "[[" not in _read(vault, rel).body


def test_entity_note_keeps_text_outside_the_managed_block(store, sink, vault) -> None:
    a = _save(store, "Kafka is our event bus", entities=["Kafka"])
    promote_memory(store, sink, a.id, now=NOW, force=True)
    entity = vault / "cortexgraph/entities/Kafka.md"
    entity.write_text(entity.read_text() + "\nMy notes about Kafka.\n")
    b = _save(store, "Kafka retention is 7 days", entities=["Kafka"])
    promote_memory(store, sink, b.id, now=NOW, force=True)
    text = entity.read_text()
    assert "My notes about Kafka." in text
    assert "[[Kafka is our event bus]]" in text and "[[Kafka retention is 7 days]]" in text


def test_obsidian_tag_and_checksum_helpers() -> None:
    assert obsidian_tag("#Machine Learning") == "Machine-Learning"
    assert obsidian_tag("a/b") == "a/b"
    assert obsidian_tag("1984") is None
    assert obsidian_tag("c++") == "c"
    assert body_checksum("x\r\ny\n\n") == body_checksum("x\ny")


def test_tags_and_aliases_a_person_wrote_as_one_string_survive_an_update(store, sink, vault):
    """`tags: ops, release-train` and `aliases: Deploy day` (what Obsidian reads as lists)
    were replaced by our lists on the next update: only a YAML list was merged."""
    m = _save(store, "Deploys happen on Tuesdays", tags=["ops"])
    rel = promote_memory(store, sink, m.id, now=NOW, force=True).path
    path = vault / rel
    text = path.read_text()
    text = text.replace("tags:\n- ops\n", "tags: ops, release-train\n")
    text = text.replace("aliases:\n- Deploys happen on Tuesdays\n", "aliases: Deploy day\n")
    path.write_text(text)
    store.update(m.id, use_count=5)
    promote_memory(store, sink, m.id, now=NOW + 1, force=True)
    meta = _read(vault, rel).metadata
    assert meta["use_count"] == 5
    assert meta["tags"] == ["ops", "release-train"]
    assert meta["aliases"] == ["Deploys happen on Tuesdays", "Deploy day"]


@pytest.mark.parametrize(
    "content",
    [
        "Links go between <!-- cortexgraph:related --> and the end marker; never edit them.",
        "A note pasted whole:\n\n<!-- cortexgraph:related -->\n- [[Other]]\n"
        "<!-- /cortexgraph:related -->\n\nThe end of the paste.",
    ],
    ids=["inline", "pasted-block"],
)
def test_a_memory_quoting_our_related_marker_keeps_a_persons_edit(store, sink, vault, content):
    """The managed Related list was found from the first marker anywhere in the body: one in
    the memory's own text made everything after it "ours", so a line the person added there
    was not seen as an edit and was overwritten, without a conflict copy."""
    m = _save(store, content)
    other = _save(store, "Ledger writes must be idempotent")
    rel = promote_memory(store, sink, m.id, now=NOW, force=True).path
    promote_memory(store, sink, other.id, now=NOW, force=True)
    store.add_relation(m.id, other.id, "related", now=NOW)
    promote_memory(store, sink, m.id, now=NOW + 1, force=True)
    path = vault / rel
    assert path.read_text().count("[[Ledger writes must be idempotent]]") == 1
    path.write_text(path.read_text().replace("\n## Related", "\nMy own line.\n\n## Related"))
    third = _save(store, "Backups run nightly")
    promote_memory(store, sink, third.id, now=NOW + 2, force=True)
    store.add_relation(m.id, third.id, "supports", now=NOW + 2)
    promote_memory(store, sink, m.id, now=NOW + 3, force=True)
    body = _read(vault, rel).body
    assert "My own line." in body
    assert all(line in body for line in content.splitlines())  # the memory's text, whole
    ours = body.rsplit("\n## Related\n", 1)[1]  # the managed list is the note's last
    assert "- [[Ledger writes must be idempotent]] (related)" in ours
    assert "- [[Backups run nightly]] (supports)" in ours
