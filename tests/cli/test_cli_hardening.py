"""Issue 30 (hardening, third round) through the real CLI: import and restore stay inside their
folders, edit neither loses a change nor deletes by a forged key, stored text is printed as
text, and the tables' short ids are accepted. docs/reliability.md lists each promise."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest
from cli_helpers import NOW

from cortexgraph.storage.errors import InvalidInputError


def _export_file(path: Path, *lines: dict) -> Path:
    header = {"cortexgraph_export": 1, "created": 0}
    path.write_text("".join(json.dumps(x) + "\n" for x in (header, *lines)))
    return path


def _note(rel: str, text: str = "evil") -> dict:
    return {"kind": "note", "path": rel, "text": text}


def test_import_writes_only_md_notes_inside_the_vault_never_through_a_symlink(cli, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    cli.vault.mkdir(parents=True)
    (cli.vault / "linked").symlink_to(outside, target_is_directory=True)
    (cli.vault / "ln.md").symlink_to(outside / "target.md")
    hostile = [
        ".obsidian/plugins/evil/main.js",
        ".obsidian/community-plugins.json",
        ".git/hooks/post-commit",
        ".cortexgraph/write-ledger.journal",
        ".cortexgraph/x.md",
        "folder/.hidden/x.md",
        "linked/x.md",
        "ln.md",
        "notes/script.sh",
        "../escape.md",
        "/abs.md",
        "a\\..\\b.md",
        "C:x.md",
        "nul\x00.md",
    ]
    src = _export_file(
        tmp_path / "x.jsonl", *(_note(p) for p in hostile), _note("People/Sam.md", "# Sam\n")
    )
    report = cli.json("import", str(src))
    assert report["added"]["notes"] == 1
    assert (cli.vault / "People" / "Sam.md").read_text() == "# Sam\n"
    assert sorted(s["id"] for s in report["skipped"]) == sorted(hostile)
    assert list(outside.iterdir()) == []
    assert not (cli.vault / ".obsidian").exists() and not (cli.vault / ".git").exists()
    assert not (cli.vault / ".cortexgraph" / "x.md").exists()
    assert not (cli.vault / "notes").exists()
    assert not (tmp_path / "escape.md").exists()


def _tar(path: Path, *members: tuple[str, str, str]) -> Path:
    """(name, kind, data): kind "file" (data = text), "dir", "sym" or "hard" (data = target)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                raw = data.encode()
                info.size = len(raw)
                tar.addfile(info, io.BytesIO(raw))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE}[
                kind
            ]
            info.linkname = data
            tar.addfile(info)
    return path


def test_restore_refuses_every_link_member_and_a_store_file_that_is_a_folder(cli, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bash_profile").write_text("# profile\n")
    good = ("store/relations.jsonl", "file", "")
    archives = {
        "symlink out": [("store", "dir", ""), ("store/memories.jsonl", "sym", "../victim.txt")],
        "chain": [
            ("store", "dir", ""),
            ("store/memories.jsonl", "sym", "up3/home/.bash_profile"),
            ("store/up1", "sym", ".."),
            ("store/up2", "sym", "up1/.."),
            ("store/up3", "sym", "up2/.."),
        ],
        "symlink inside": [("store", "dir", ""), good, ("store/memories.jsonl", "sym", "x")],
        "hardlink": [("store", "dir", ""), good, ("store/memories.jsonl", "hard", "store/x")],
        "folder": [("store", "dir", ""), good, ("store/memories.jsonl", "dir", "")],
    }
    cli.store().save("kept as it was", now=NOW)
    before = (cli.storage / "memories.jsonl").read_bytes()
    for name, members in archives.items():
        archive = _tar(tmp_path / f"{name.replace(' ', '_')}.tar.gz", *members)
        done = cli("restore", str(archive), "--force", ok=False)
        assert done.returncode == 2, (name, done.stdout, done.stderr)
        assert "refused" in done.stderr and "Traceback" not in done.stderr, name
        assert (cli.storage / "memories.jsonl").read_bytes() == before, name
        assert not (cli.storage / "memories.jsonl").is_symlink(), name
    assert victim.read_text() == "precious\n"
    assert (home / ".bash_profile").read_text() == "# profile\n"
    assert not list(tmp_path.glob(".restore-*")) and not list(cli.storage.glob(".restore-*"))
    assert not list(tmp_path.glob("store.before-restore-*"))
    assert [m.content for m in cli.store().list()] == ["kept as it was"]


def _editor(tmp_path: Path, body: str) -> str:
    """An $EDITOR: a Python script whose ``body`` changes ``rec`` (the record as a dict), with
    ``path`` (the file) and ``store_path`` in scope."""
    script = tmp_path / "editor.py"
    script.write_text(
        "import json, sys\n"
        "from pathlib import Path\n"
        "path = Path(sys.argv[1])\n"
        "rec = json.loads(path.read_text())\n"
        f"store_path = {str(tmp_path / 'store')!r}\n"
        f"{body}\n"
        "if rec is not None:\n"
        "    path.write_text(json.dumps(rec))\n"
    )
    return f"{os.sys.executable} {script}"


def test_edit_adding_deleted_true_is_refused_and_the_memory_stays(cli, tmp_path):
    mid = cli.store().save("keep me", now=NOW).id
    done = cli("edit", mid, ok=False, EDITOR=_editor(tmp_path, "rec['_deleted'] = True"))
    assert done.returncode == 2 and "unknown field" in done.stderr, done.stderr
    assert cli.store().get(mid).content == "keep me"
    # Any other key the record does not have is refused the same way.
    done = cli("edit", mid, ok=False, EDITOR=_editor(tmp_path, "rec['colour'] = 'red'"))
    assert done.returncode == 2 and "'colour'" in done.stderr
    # And the store itself refuses a record carrying its tombstone key.
    store = cli.store()
    forged = store.get(mid).with_changes()
    object.__setattr__(forged, "unknown", {"_deleted": True})
    with pytest.raises(InvalidInputError, match="reserved key"):
        store.put(forged)
    assert cli.store().get(mid).content == "keep me"


def test_import_of_a_record_with_deleted_true_adds_nothing_it_cannot_keep(cli, tmp_path):
    forged = {"id": "11111111-2222-4333-8444-555555555555", "content": "forged", "_deleted": True}
    fine = {"id": "11111111-2222-4333-8444-555555555556", "content": "fine"}
    src = _export_file(
        tmp_path / "x.jsonl",
        {"kind": "memory", "record": forged},
        {"kind": "memory", "record": fine},
    )
    report = cli.json("import", str(src))
    assert report["added"]["memories"] == 1
    assert [(s["id"], "reserved key" in s["why"]) for s in report["skipped"]] == [
        (forged["id"], True)
    ]
    assert {m.id: m.content for m in cli.store().list()} == {fine["id"]: "fine"}


def test_edit_saves_only_if_the_memory_did_not_change_while_the_editor_was_open(cli, tmp_path):
    store = cli.store()
    mid = store.save("edited slowly", now=NOW).id
    # While the editor is open, five uses are recorded and the memory is archived.
    meanwhile = (
        "from cortexgraph.storage import open_store\n"
        "from cortexgraph.storage.models import MemoryStatus\n"
        "s = open_store(store_path)\n"
        f"[s.touch({mid!r}) for _ in range(5)]\n"
        f"s.update({mid!r}, status=MemoryStatus.ARCHIVED)\n"
        "rec['content'] = 'edited text'"
    )
    done = cli("edit", mid, ok=False, EDITOR=_editor(tmp_path, meanwhile))
    assert done.returncode == 2 and "changed while the editor was open" in done.stderr
    kept = cli.store().get(mid)
    assert (kept.use_count, kept.status.value, kept.content) == (5, "archived", "edited slowly")
    # With nobody else writing, the edit is saved.
    done = cli("edit", mid, EDITOR=_editor(tmp_path, "rec['content'] = 'edited text'"))
    assert "saved" in done.stdout and cli.store().get(mid).content == "edited text"


def test_edit_reports_a_bad_file_in_one_line(cli, tmp_path):
    mid = cli.store().save("bad files", now=NOW).id
    bodies = {
        "latin-1": "path.write_bytes(b'{\\xe9}'); rec = None",
        "deleted": "path.unlink(); rec = None",
        "folder": "path.unlink(); path.mkdir(); rec = None",
        "deep": "path.write_text('[' * 100000 + ']' * 100000); rec = None",
    }
    for name, body in bodies.items():
        done = cli("edit", mid, ok=False, EDITOR=_editor(tmp_path, body))
        assert done.returncode == 2, (name, done.stderr)
        assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) <= 3, name
    assert cli.store().get(mid).content == "bad files"


def test_rich_markup_in_stored_text_and_ids_is_printed_as_text(cli):
    store = cli.store()
    texts = [
        "[/INST] the prompt ends here",
        "binaries in [/usr/local/bin]",
        "[link=http://x]y[/link]",
    ]
    for t in texts:
        store.save(t, tags=["[/bold]"], now=NOW)
    listed = cli("list")
    for t in texts:
        assert t in listed.stdout.replace("\n", "")
    found = cli("search", "prompt", "--no-embeddings")
    assert "[/INST]" in found.stdout
    link = next(m for m in store.list() if m.content.startswith("[link"))
    shown = cli("show", link.id)
    assert "[link=http://x]y[/link]" in shown.stdout and "\x1b]8;" not in shown.stdout
    missing = cli("show", "[/]", ok=False)
    assert missing.returncode in (1, 2) and "Traceback" not in missing.stderr
    assert "[/]" in missing.stderr


def test_ids_accept_a_unique_prefix_of_six_or_more_characters(cli):
    store = cli.store()
    a = store.save("first memory", now=NOW)
    twins = [
        store.put(a.with_changes(id=f"abcdef{n}0-1111-4222-8333-444444444444", content=f"twin {n}"))
        for n in (1, 2)
    ]
    assert cli.json("show", a.id[:8])["memory"]["id"] == a.id
    assert cli.json("show", a.id[:6])["memory"]["id"] == a.id
    assert cli.json("history", a.id[:8])["memory_id"] == a.id
    ambiguous = cli("show", "abcdef", ok=False)
    assert ambiguous.returncode == 2 and "ambiguous" in ambiguous.stderr
    assert twins[0].id in ambiguous.stderr and twins[1].id in ambiguous.stderr
    short = cli("show", a.id[:5], ok=False)
    assert short.returncode == 1 and "6+" in short.stderr
    edited = cli(
        "edit", twins[0].id[:7], EDITOR=f'{os.sys.executable} -c "import sys"'
    )  # opens, unchanged
    assert "unchanged" in edited.stdout
    store.update(a.id, status="archived")
    assert cli.json("undo", "archive", a.id[:8])["memory_ids"] == [a.id]


def test_import_sizes_are_checked_before_anything_is_read(cli, tmp_path):
    from cortexgraph.storage.portable import read_bundle

    big = _tar(
        tmp_path / "big.tar.gz",
        ("manifest.json", "file", json.dumps({"cortexgraph_export": 1})),
        ("memories.jsonl", "file", " " * (3 << 20)),
    )
    assert big.stat().st_size < 64 << 10  # a small file that unpacks to 3 MB
    with pytest.raises(InvalidInputError, match="MAX_IMPORT_BYTES"):
        read_bundle(big, max_bytes=1 << 20)
    line = _export_file(tmp_path / "big.jsonl", _note("a.md", "x" * (2 << 20)))
    with pytest.raises(InvalidInputError, match="MAX_IMPORT_BYTES"):
        read_bundle(line, max_bytes=1 << 20)
    # Two members with one name: refused, not the first silently dropped.
    twice = _tar(
        tmp_path / "twice.tar.gz",
        ("manifest.json", "file", json.dumps({"cortexgraph_export": 1})),
        ("memories.jsonl", "file", ""),
        ("memories.jsonl", "file", ""),
    )
    done = cli("import", str(twice), ok=False)
    assert done.returncode == 2 and "two members" in done.stderr


def test_import_with_bad_issue_fields_or_a_nul_note_path_answers_in_one_line(cli, tmp_path):
    cli.store()
    src = _export_file(
        tmp_path / "x.jsonl",
        {"kind": "issue", "record": {"id": "cg-1", "title": "t", "priority": "high"}},
        {"kind": "issue", "record": {"id": "cg-2", "title": "t", "labels": 5}},
        {"kind": "issue", "record": "not an issue"},
        _note("a\x00b.md"),
        {"kind": "memory", "record": {"id": "11111111-2222-4333-8444-555555555555"}},
        {
            "kind": "memory",
            "record": {"id": "11111111-2222-4333-8444-555555555556", "content": "ok"},
        },
    )
    report = cli.json("import", str(src))
    assert report["added"]["memories"] == 1 and report["added"]["issues"] == 0
    assert sorted(s["kind"] for s in report["skipped"]) == [
        "issue",
        "issue",
        "issue",
        "memory",
        "note",
    ]


def test_vault_commands_print_note_titles_and_text_as_text(cli):
    cli.store()
    cli.vault.mkdir(parents=True)
    (cli.vault / "Prompt [INST] format.md").write_text(
        "# [/INST] and [/usr/local/bin]\n\nThe prompt ends with [/INST] [link=http://x]y[/link].\n"
    )
    done = cli("vault", "search", "prompt ends", "--no-embeddings", ok=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "[/INST]" in done.stdout and "Traceback" not in done.stderr


def test_full_ids_do_not_wrap_in_a_narrow_table(cli):
    # Issue 35, item 4: a folded id could not be copied from the table.
    store = cli.store()
    ids = [store.save(f"memory {i} with some words to fold", now=NOW + i).id for i in range(3)]
    listed = cli("list", COLUMNS="80")
    for memory_id in ids:
        assert memory_id in listed.stdout


def test_restore_counts_members_before_unpacking_anything(tmp_path):
    from cortexgraph.storage.backup import restore_store

    archive = _tar(
        tmp_path / "many.tar.gz",
        ("store", "dir", ""),
        *((f"store/f{i}.txt", "file", "x") for i in range(5)),
    )
    with pytest.raises(InvalidInputError, match="more than 3"):
        restore_store(archive, tmp_path / "target", max_members=3)
    assert not (tmp_path / "target").exists()  # the folder it made is gone again


def test_a_backup_leaves_out_links_and_a_restores_staging_so_it_restores(tmp_path):
    from cortexgraph.storage import JSONLStore
    from cortexgraph.storage.backup import backup_store, restore_store

    store_dir = tmp_path / "store"
    JSONLStore(store_dir).save("kept through backup and restore", now=NOW)
    (tmp_path / "private.txt").write_text("not the store's\n")
    (store_dir / "link.txt").symlink_to(tmp_path / "private.txt")
    (store_dir / ".restore-abc").mkdir()  # left by a killed restore
    (store_dir / ".restore-abc" / "x").write_text("half")
    backup_store(store_dir, tmp_path / "b.tar.gz")
    with tarfile.open(tmp_path / "b.tar.gz") as tar:
        names = tar.getnames()
    assert "store/link.txt" not in names and not any(".restore-" in n for n in names)
    restore_store(tmp_path / "b.tar.gz", tmp_path / "again")
    assert [m.content for m in JSONLStore(tmp_path / "again").list()] == [
        "kept through backup and restore"
    ]
