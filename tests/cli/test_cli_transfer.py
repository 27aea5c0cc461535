"""export / import / backup / restore through the real CLI; round trips compare every record."""

from __future__ import annotations

import pytest
from cli_helpers import NOW, Cli

from cortexgraph.storage.beads import issue_as_json, open_tracker


def _seed(cli: Cli) -> None:
    from cortexgraph.vault_sync import ObsidianNoteSink, promote_memory

    store = cli.store()
    ids = [
        store.save(
            f"memory number {i} about {topic}", tags=[topic], entities=["Sam"], now=NOW + i
        ).id
        for i, topic in enumerate(["billing", "testing", "postgres", "oncall"])
    ]
    store.add_relation(ids[0], ids[1], "related", now=NOW)
    store.add_relation(ids[2], ids[3], "supports", now=NOW)
    store.touch(ids[0], now=NOW + 100)
    with ObsidianNoteSink(cli.vault) as sink:
        promote_memory(store, sink, ids[2], reason="forced", now=NOW + 200, force=True)
    (cli.vault / "Hand written.md").write_text("# Mine\n\nA person's own note.\n")
    tracker = open_tracker(cli.storage, "cg")
    tracker.create(
        "Review 2 similar memories",
        labels=["consolidation:cluster"],
        metadata={"memory_ids": ids[:2]},
    )
    done = tracker.create("Fading memory", labels=["consolidation:decay"])
    tracker.close(done.id, "used again")


def _records(cli: Cli) -> tuple[dict, dict]:
    store = cli.store()
    return (
        {m.id: m.to_json() for m in store.list()},
        {r.id: r.to_json() for r in store.relations()},
    )


def _notes(cli: Cli) -> dict[str, str]:
    return {
        p.relative_to(cli.vault).as_posix(): p.read_text()
        for p in cli.vault.rglob("*.md")
        if ".cortexgraph" not in p.parts
    }


@pytest.mark.parametrize("name", ["export.jsonl", "export.tar.gz"])
def test_export_then_import_into_an_empty_store_keeps_every_record(tmp_path, name):
    source, target = Cli(tmp_path / "a"), Cli(tmp_path / "b")
    _seed(source)
    out = source.json("export", "-o", str(tmp_path / name))
    assert (out["memories"], out["relations"], out["issues"]) == (4, 2, 2)
    assert out["notes"] >= 3  # the promoted note, its entity note, the person's note
    report = target.json("import", str(tmp_path / name))
    assert report["added"] == {"memories": 4, "relations": 2, "notes": out["notes"], "issues": 2}
    assert report["skipped"] == []
    assert _records(target) == _records(source)
    assert _notes(target) == _notes(source)
    issues = open_tracker(target.storage, "cg").query()
    assert sorted(i.title for i in issues) == ["Fading memory", "Review 2 similar memories"]
    assert {i.title: i.status for i in issues}["Fading memory"] == "closed"
    # Importing the same file again adds nothing and says why.
    again = target.json("import", str(tmp_path / name))
    assert sum(again["added"].values()) == 0
    whys = {s["kind"]: s["why"] for s in again["skipped"]}
    assert "identical" in whys["memory"] and "identical" in whys["note"]


def test_import_reports_conflicts_and_duplicates_and_overwrites_nothing(tmp_path):
    source, target = Cli(tmp_path / "a"), Cli(tmp_path / "b")
    _seed(source)
    source.json("export", "-o", str(tmp_path / "x.jsonl"))
    target.json("import", str(tmp_path / "x.jsonl"))
    store = target.store()
    first = sorted(store.list(), key=lambda m: m.created_at)[0]
    store.update(first.id, content="changed here since")
    store.save("memory number 1 about testing", now=NOW)  # same text, another id
    edited = target.vault / "Hand written.md"
    edited.write_text("# Mine\n\nEdited after the import.\n")
    before = _records(target)
    # The source gets a new memory with the same text as one the target already holds.
    source.store().save("memory number 3 about oncall", now=NOW + 9)
    source.json("export", "-o", str(tmp_path / "y.jsonl"))
    report = target.json("import", str(tmp_path / "y.jsonl"))
    whys = [(s["kind"], s["id"], s["why"]) for s in report["skipped"]]
    assert (
        "memory",
        first.id,
        "conflict: another version of this id is stored (kept as it is)",
    ) in whys
    assert any(k == "memory" and w.startswith("duplicate: same content") for k, _, w in whys)
    assert any(
        k == "note" and i == "Hand written.md" and w.startswith("conflict") for k, i, w in whys
    )
    assert report["added"]["memories"] == 0
    assert _records(target) == before
    assert edited.read_text() == "# Mine\n\nEdited after the import.\n"


def test_import_of_a_file_that_is_not_an_export_fails_cleanly(cli, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"hello": 1}\n')
    done = cli("import", str(bad), ok=False)
    assert done.returncode == 2 and "not a cortexgraph export" in done.stderr


def test_backup_then_restore_keeps_every_record_and_the_issue_history(tmp_path):
    cli = Cli(tmp_path / "a")
    _seed(cli)
    records = _records(cli)
    issues = [issue_as_json(i) for i in open_tracker(cli.storage, "cg").query()]
    out = cli.json("backup", "-o", str(tmp_path / "b.tar.gz"))
    assert out["files"] > 5
    # Into a fresh place...
    other = Cli(tmp_path / "c")
    other.json("restore", str(tmp_path / "b.tar.gz"))
    assert _records(other) == records
    assert [issue_as_json(i) for i in open_tracker(other.storage, "cg").query()] == issues
    # ...and over the live store, which has changed since: refused without --force.
    cli.store().save("written after the backup", now=NOW + 999)
    refused = cli("restore", str(tmp_path / "b.tar.gz"), ok=False)
    assert refused.returncode == 2 and "--force" in refused.stderr
    done = cli.json("restore", str(tmp_path / "b.tar.gz"), "--force")
    assert _records(cli) == records
    aside = done["moved_aside"]
    assert (
        aside
        and "written after the backup"
        in (tmp_path / "a" / aside.split("/")[-1] / "memories.jsonl").read_text()
    )
