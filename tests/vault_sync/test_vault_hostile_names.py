"""Hostile names in the vault (issue 15, Low): Windows device names in every spelling, entity
names that would break out of a wikilink or a heading, and entity notes that are symlinks to
files outside the vault."""

from __future__ import annotations

import logging
import re
import unicodedata
from pathlib import Path

import pytest

from cortexgraph.storage import InMemoryStore
from cortexgraph.vault_sync import ObsidianNoteSink, promote_memory
from cortexgraph.vault_sync.note_format import LinkTarget, markdown_text
from cortexgraph.vault_sync.note_names import entity_note_stem, safe_filename, safe_folder

NOW = 1_750_000_000.0
_DEVICES = {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"} | {
    f"{port}{n}" for port in ("COM", "LPT") for n in "0123456789"
}
WIKILINK = re.compile(r"\[\[([^\[\]\n]*)\]\]")


def windows_device(filename: str) -> bool:
    """What Windows opens as a device instead of a file: the part before the first dot, less
    trailing spaces, is a device name (superscript digits count as digits)."""
    head = unicodedata.normalize("NFKC", filename.split(".")[0]).rstrip(" ").upper()
    return head in _DEVICES


HOSTILE_NAMES = [
    "nul.txt",
    "NUL.tar.gz",
    "LPT1.md",
    "lpt9",
    "COM¹",
    "com²",
    "COM³.log",
    "CONIN$",
    "conout$.md",
    "Con.",
    "nul ",
    "nul .txt",
    "aux...",
    "  con  ",
    "con:",
    "prn. .md",
    "COM0",
    "LPT¹ report",
    "nul\tx",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_windows_device_names_are_neutralised(name: str) -> None:
    stem = safe_filename(name)
    for filename in (stem, f"{stem}.md", f"{stem} 2.md"):
        assert not windows_device(filename), filename
    assert not stem.endswith((" ", ".")) and stem == stem.strip()
    letters = re.sub(r"[^A-Za-z]", "", unicodedata.normalize("NFKC", name)).lower()
    assert re.sub(r"[^A-Za-z]", "", stem).lower().startswith(letters[:3])  # still readable
    assert all(not windows_device(part) for part in safe_folder(f"{name}/{name}").parts)


def test_ordinary_names_are_left_alone() -> None:
    for name in ("console", "Null hypothesis", "com10", "lpt", "auxiliary.md", "CONNECT"):
        assert safe_filename(name) == name


def _sink_with(store: InMemoryStore, vault: Path, content: str, entities: list[str]):
    sink = ObsidianNoteSink(vault, "cortexgraph")
    m = store.save(content, entities=entities, now=NOW - 86400)
    out = promote_memory(store, sink, m.id, now=NOW, force=True)
    return m, out


def test_a_memory_titled_like_a_device_gets_a_safe_file(vault: Path) -> None:
    store = InMemoryStore()
    _, out = _sink_with(store, vault, "LPT1.md", [])
    assert not windows_device(Path(out.path).name)
    assert (vault / out.path).is_file()


HOSTILE_ENTITIES = ["x]] [[y", "a|b", "C#", "^blockid", "two\nlines", "[[Kafka]]", "#tag"]


def _outside_links(body: str) -> str:
    return WIKILINK.sub("", body)


def test_entity_names_cannot_break_links_or_headings(vault: Path) -> None:
    store = InMemoryStore()
    _, out = _sink_with(store, vault, "We chose Kafka for the event bus", HOSTILE_ENTITIES)
    body = (vault / out.path).read_text(encoding="utf-8").split("---", 2)[2]
    related = body.split("## Related", 1)[1]
    links = WIKILINK.findall(related)
    assert len(links) == len(HOSTILE_ENTITIES)
    assert "[[" not in _outside_links(related) and "]]" not in _outside_links(related)
    assert len([x for x in related.splitlines() if x.startswith("- ")]) == len(HOSTILE_ENTITIES)
    for link in links:  # target|label: one pipe at most, no line break
        assert link.count("|") <= 1 and "\n" not in link
    for entity in HOSTILE_ENTITIES:
        note = vault / "cortexgraph" / "entities" / f"{entity_note_stem(entity)}.md"
        text = note.read_text(encoding="utf-8")
        heading = next(x for x in text.splitlines() if x.startswith("# "))
        rest = heading[2:]
        # one line; no unescaped link, tag or block-id marker
        assert re.search(r"(?<!\\)[\[\]]", rest) is None, heading
        assert re.search(r"(?<!\\)[#^]", rest) is None, heading
        body = text.split("\n---\n", 1)[1]  # the frontmatter title is data, not markdown
        assert len(WIKILINK.findall(body)) == 1  # the managed "Mentioned in" link only


def test_entity_named_like_our_block_marker_keeps_one_managed_block(vault: Path) -> None:
    store = InMemoryStore()
    marker = "<!-- /cortexgraph:mentions -->"
    _sink_with(store, vault, "First note about the marker", [marker])
    _sink_with(store, vault, "Second note about the marker", [marker])
    note = vault / "cortexgraph" / "entities" / f"{entity_note_stem(marker)}.md"
    text = note.read_text(encoding="utf-8")
    assert text.count("<!-- cortexgraph:mentions -->") == 1
    assert len(WIKILINK.findall(text)) == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x]] [[y", "x\\]\\] \\[\\[y"),
        ("C# and ^id", "C\\# and \\^id"),
        ("a\nb\r\nc\u2028d", "a b c d"),
        ("<!-- x -->", "\\<!-- x -->"),
        ("a -> b", "a -> b"),
        ("C:\\path \\[", "C:\\path \\\\\\["),
    ],
)
def test_markdown_text_escapes(text: str, expected: str) -> None:
    assert markdown_text(text) == expected


def test_link_label_cannot_end_the_link() -> None:
    assert LinkTarget("x y", label="x]] [[y").wikilink() == "[[x y]]"
    assert LinkTarget("a b", label="a|b").wikilink() == "[[a b]]"
    assert LinkTarget("C", label="C#").wikilink() == "[[C|C#]]"
    assert LinkTarget("two lines", label="two\nlines").wikilink() == "[[two lines]]"


def test_symlinked_entity_note_pointing_outside_is_refused(
    vault: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = tmp_path / "outside.md"
    secret.write_text("TOP SECRET\n", encoding="utf-8")
    entities = vault / "cortexgraph" / "entities"
    entities.mkdir(parents=True)
    (entities / "Secret.md").symlink_to(secret)
    store = InMemoryStore()
    with caplog.at_level(logging.WARNING):
        m, out = _sink_with(store, vault, "A memory about the Secret project", ["Secret", "Kafka"])
    assert secret.read_text(encoding="utf-8") == "TOP SECRET\n"  # never written through
    assert (entities / "Secret.md").is_symlink()  # nor replaced
    assert (entities / "Kafka.md").is_file()  # the other entity note is written
    assert (vault / out.path).is_file() and store.get(m.id).promoted_to == out.path
    for note in vault.rglob("*.md"):  # never read through into the vault
        if not note.is_symlink():
            assert "TOP SECRET" not in note.read_text(encoding="utf-8")
    assert any("outside the vault" in r.getMessage() for r in caplog.records)


def test_symlinked_entities_folder_pointing_outside_is_refused(
    vault: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (vault / "cortexgraph").mkdir()
    (vault / "cortexgraph" / "entities").symlink_to(elsewhere)
    store = InMemoryStore()
    with caplog.at_level(logging.WARNING):
        _, out = _sink_with(store, vault, "A memory about Kafka", ["Kafka"])
    assert list(elsewhere.iterdir()) == []
    assert (vault / out.path).is_file()
    assert any("outside the vault" in r.getMessage() for r in caplog.records)


def test_symlinked_entity_note_inside_the_vault_is_followed(vault: Path) -> None:
    entities = vault / "cortexgraph" / "entities"
    entities.mkdir(parents=True)
    target = vault / "People" / "Kafka notes.md"
    target.parent.mkdir()
    target.write_text("# Kafka\n\nMy own notes.\n", encoding="utf-8")
    (entities / "Kafka.md").symlink_to(target)
    store = InMemoryStore()
    _sink_with(store, vault, "We chose Kafka for the event bus", ["Kafka"])
    assert (entities / "Kafka.md").is_symlink()
    text = target.read_text(encoding="utf-8")
    assert "My own notes." in text and "[[Kafka for event bus]]" in text  # the note's title


def test_entity_names_that_differ_only_in_punctuation_keep_notes_of_their_own(
    vault: Path,
) -> None:
    """Issue 30 (Low): "C#" and "C" shared entities/C.md, so each memory's Related link opened
    a note that listed the other language's memories too."""
    store = InMemoryStore()
    pairs = [("C#", "We write the billing service in C#"), ("C", "The firmware is plain C")]
    pairs += [("a|b", "The a|b split test ran"), ("a b", "The a b pair was labelled")]
    notes = {}
    for entity, content in pairs:
        _, out = _sink_with(store, vault, content, [entity])
        notes[entity] = Path(out.path).stem
    stems = {entity: entity_note_stem(entity) for entity, _ in pairs}
    assert len(set(stems.values())) == len(pairs), stems
    assert stems["C#"] == "C sharp"
    for entity, _ in pairs:
        text = (vault / "cortexgraph" / "entities" / f"{stems[entity]}.md").read_text("utf-8")
        mentioned = set(WIKILINK.findall(text.split("\n---\n", 1)[1]))
        others = {notes[e] for e, _ in pairs if e != entity}
        assert any(notes[entity] in link for link in mentioned), (entity, mentioned)
        assert not any(o in link for o in others for link in mentioned), (entity, mentioned)
        # the memory note's Related link opens this entity's own note
        body = (vault / "cortexgraph" / f"{notes[entity]}.md").read_text("utf-8")
        assert f"[[{stems[entity]}|" in body or f"[[{stems[entity]}]]" in body, body


def test_the_conflict_copy_of_a_note_with_a_long_title_says_what_it_is(
    store: InMemoryStore, sink: ObsidianNoteSink, vault: Path
) -> None:
    """The copy's name was the note's, cut back to the 120-byte limit with the "(cortexgraph
    conflict ...)" part cut off: "<title> 2.md", which reads as another note of that title."""
    m = store.save("Deploys happen on Tuesdays", extra={"title": "Wörter " * 30}, now=NOW)
    rel = promote_memory(store, sink, m.id, now=NOW, force=True).path
    note = vault / rel
    note.write_text(note.read_text() + "My own words.\n")  # edited in Obsidian
    store.update(m.id, content="Deploys happen on Wednesdays")
    copy = promote_memory(store, sink, m.id, now=NOW + 1, force=True).conflict_path
    assert copy is not None
    stem = Path(copy).stem
    assert stem.endswith("(cortexgraph conflict 2025-06-15 150641)"), stem
    assert stem.startswith("Wörter Wörter") and len(stem.encode()) <= 120
    assert "My own words." in note.read_text()
