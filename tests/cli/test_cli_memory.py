"""search / list / show / edit through the real CLI, each with --json."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import NOW


def _seed(cli):
    store = cli.store()
    a = store.save("We chose PostgreSQL 16 for billing", tags=["billing", "decision"], now=NOW)
    b = store.save("Sam prefers hermetic tests with testcontainers", tags=["testing"], now=NOW)
    c = store.save("The old fax number", tags=["billing"], now=NOW)
    store.update(c.id, status="archived")
    store.add_relation(a.id, b.id, "related", now=NOW)
    return a, b, c


def _editor(tmp_path: Path, body: str) -> str:
    """An $EDITOR that rewrites the file it is given with ``body`` (a Python snippet)."""
    script = tmp_path / "editor.py"
    script.write_text("import json, sys\npath = sys.argv[1]\n" + body)
    return f"{sys.executable} {script}"


def test_search_list_show_json(cli):
    a, b, c = _seed(cli)
    hits = cli.json("search", "postgres billing")
    assert hits[0]["id"] == a.id and hits[0]["score"] > 0
    listed = {m["id"] for m in cli.json("list")}
    assert listed == {a.id, b.id}  # live memories by default
    assert {m["id"] for m in cli.json("list", "--status", "archived")} == {c.id}
    tagged = cli.json("list", "--tag", "billing", "--status", "all")
    assert {m["id"] for m in tagged} == {a.id, c.id}
    shown = cli.json("show", a.id)
    assert shown["memory"] == cli.store().get(a.id).to_json()
    assert shown["relations"][0]["to_memory_id"] == b.id
    table = cli("show", a.id).stdout
    assert "PostgreSQL 16" in table and "related" in table
    bad = cli("list", "--status", "lost", ok=False)
    assert bad.returncode == 2 and "unknown status" in bad.stderr


def test_edit_validates_and_saves(cli, tmp_path):
    a, _, _ = _seed(cli)
    editor = _editor(
        tmp_path,
        (
            "rec = json.load(open(path))\nrec['content'] = 'We chose PostgreSQL 17 for billing'\n"
            "rec['meta']['tags'] = ['billing', 'decision', 'edited']\n"
            "json.dump(rec, open(path, 'w'))\n"
        ),
    )
    out = cli.json("edit", a.id, EDITOR=editor)
    assert out["changed"] is True
    now = cli.store().get(a.id)
    assert now.content == "We chose PostgreSQL 17 for billing" and "edited" in now.tags
    assert cli.store().get(a.id).created_at == a.created_at  # the rest of the record kept


def test_edit_refuses_an_invalid_record_and_keeps_the_text(cli, tmp_path):
    a, _, _ = _seed(cli)
    before = cli.store().get(a.id).to_json()
    for body in (
        "open(path, 'w').write('{not json')\n",
        "rec = json.load(open(path))\nrec['id'] = 'another'\njson.dump(rec, open(path, 'w'))\n",
        "rec = json.load(open(path))\nrec['strength'] = 'strong'\n"
        "json.dump(rec, open(path, 'w'))\n",
    ):
        done = cli("edit", a.id, ok=False, EDITOR=_editor(tmp_path, body))
        assert done.returncode == 2, done.stderr
        assert "nothing changed" in done.stderr
        kept = done.stderr.split("your text is in ")[-1].split(")")[0].strip()
        assert Path(kept).exists()
        Path(kept).unlink()
    assert cli.store().get(a.id).to_json() == before


def test_edit_without_changes_stores_nothing(cli, tmp_path):
    a, _, _ = _seed(cli)
    size = (cli.storage / "memories.jsonl").stat().st_size
    out = cli.json("edit", a.id, EDITOR=_editor(tmp_path, "pass\n"))
    assert out["changed"] is False
    assert (cli.storage / "memories.jsonl").stat().st_size == size
    assert json.loads(json.dumps(out["memory"])) == cli.store().get(a.id).to_json()


def test_history_dates_an_edit_at_the_edit_not_the_last_use(cli, tmp_path):
    a, _, _ = _seed(cli)
    store = cli.store()
    store.touch(a.id, now=NOW)  # last used long before the edit (NOW is in 2025)
    editor = _editor(
        tmp_path,
        "rec = json.load(open(path))\nrec['content'] = 'We chose PostgreSQL 17 for billing'\n"
        "json.dump(rec, open(path, 'w'))\n",
    )
    before = time.time()
    cli.json("edit", a.id, EDITOR=editor)
    after = time.time()
    edits = [e for e in cli.json("history", a.id)["events"] if e["event"] == "edited"]
    assert len(edits) == 1, edits
    assert int(before) <= edits[0]["at"] <= after  # the edit's own time
    assert edits[0]["cause"] == "cortexgraph edit: content changed"
    assert cli.store().get(a.id).last_used == int(NOW)  # an edit is not a use


def test_a_fresh_search_shows_keyword_results_first_labelled_then_by_meaning(cli, monkeypatch):
    from cortexgraph.cli import memory_cmd
    from cortexgraph.storage.embeddings import model_path

    if model_path() is None:
        pytest.skip("the MiniLM model is not installed")
    store = cli.store()
    store.save("We picked Postgres 16 for the billing service", tags=["decision"], now=NOW)
    store.save("Sam likes hermetic tests", tags=["testing"], now=NOW)
    monkeypatch.setattr(memory_cmd, "FIRST_ANSWER_S", 0.0)  # the model is never ready at once
    text = cli("search", "which database was selected", CORTEXGRAPH_ENABLE_EMBEDDINGS="true").stdout
    keyword, _, meaning = text.partition("(by meaning and keywords)")
    assert "(keyword results; the meaning model is loading)" in keyword
    assert "Postgres 16" not in keyword  # no word in common: keywords cannot find it
    assert "Postgres 16" in meaning  # the meaning model can
    assert list(cli.storage.glob(".embeddings-*.npz"))  # kept for the next process

    monkeypatch.setattr(memory_cmd, "FIRST_ANSWER_S", 600.0)  # the model answers in time
    text = cli("search", "which database was selected", CORTEXGRAPH_ENABLE_EMBEDDINGS="true").stdout
    assert "keyword results" not in text and "Postgres 16" in text


def test_a_fresh_search_reads_the_store_once_for_keywords_and_meaning(cli, monkeypatch):
    """The meaning thread ranks over the store the keyword search opened (a second read of
    the files was most of what the first answer by meaning waited for)."""
    import cortexgraph.user_store as user_store
    from cortexgraph.cli import memory_cmd
    from cortexgraph.storage.embeddings import model_path

    if model_path() is None:
        pytest.skip("the MiniLM model is not installed")
    cli.store().save("We picked Postgres 16 for the billing service", now=NOW)
    opened: list[Path] = []
    real_open = user_store.open_user_store

    def counted(settings, dense=None):
        opened.append(settings.storage_path)
        return real_open(settings, dense)

    monkeypatch.setattr(user_store, "open_user_store", counted)
    monkeypatch.setattr(memory_cmd, "FIRST_ANSWER_S", 600.0)
    text = cli("search", "which database was selected", CORTEXGRAPH_ENABLE_EMBEDDINGS="true").stdout
    assert "Postgres 16" in text and "keyword results" not in text  # ranked by meaning
    assert len(opened) == 1, opened


def test_the_cli_imports_neither_the_vault_code_nor_numpy_before_a_command_runs():
    """`cortexgraph search` loads what it uses: the vault's code (and numpy, which it brings)
    is imported by the vault commands when they run."""
    import subprocess

    code = (
        "import sys; import cortexgraph.cli.main; "
        "print([m for m in ('cortexgraph.vault_sync', 'numpy') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
