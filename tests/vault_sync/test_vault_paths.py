from __future__ import annotations

from pathlib import Path

import pytest

from cortexgraph.vault_sync.errors import UnsafePathError
from cortexgraph.vault_sync.note_names import safe_filename, safe_folder, unique_note_path
from cortexgraph.vault_sync.paths import ensure_inside


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("We chose PostgreSQL", "We chose PostgreSQL"),
        ('a<b>c:d"e/f\\g|h?i*j', "a b c d e f g h i j"),
        ("links [[x]] #tag ^block", "links x tag block"),
        ("../../etc/passwd", "etc passwd"),
        ("/etc/passwd", "etc passwd"),
        ("C:\\Windows\\system32", "C Windows system32"),
        ("  .hidden. ", "hidden"),
        ("CON", "CON_"),
        ("nul.txt", "nul_.txt"),
        ("com1", "com1_"),
        ("Café — 東京 notes", "Café — 東京 notes"),
        ("", "untitled"),
        ("...", "untitled"),
        ("tab\tand\nnewline", "tab and newline"),
    ],
)
def test_safe_filename(title: str, expected: str) -> None:
    assert safe_filename(title) == expected


def test_safe_filename_bounds_utf8_length_without_splitting_characters() -> None:
    name = safe_filename("東" * 200)
    assert len(name.encode("utf-8")) <= 120
    assert set(name) == {"東"}


def test_safe_folder_refuses_escapes() -> None:
    assert safe_folder("cortexgraph/ltm") == Path("cortexgraph/ltm")
    assert safe_folder("") == Path()
    for bad in ("../outside", "a/../../b", "/abs", "C:/x", "\\\\server\\share"):
        with pytest.raises(UnsafePathError):
            safe_folder(bad)


def test_ensure_inside_follows_symlinks(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "out").symlink_to(tmp_path)
    assert ensure_inside(vault, Path("a/b.md")) == vault.resolve() / "a/b.md"
    with pytest.raises(UnsafePathError):
        ensure_inside(vault, Path("out/../../x.md"))
    with pytest.raises(UnsafePathError):
        ensure_inside(vault, Path("../x.md"))


def test_unique_note_path_adds_suffix_case_insensitively(tmp_path: Path) -> None:
    (tmp_path / "Note.md").write_text("x")
    (tmp_path / "note 2.md").write_text("x")
    assert unique_note_path(tmp_path, "NOTE").name == "NOTE 3.md"
    assert unique_note_path(tmp_path, "Other").name == "Other.md"
