"""The previous save's text (``neighbour_text``, a ranking signal) through the real CLI:
`show` and `edit` never show it, an edit keeps it, and `vault refresh` takes it out of the
Context sections of notes written before it had a field of its own."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cli_helpers import NOW
from typer.testing import CliRunner

from cortexgraph.cli.maintenance import app as maintenance
from cortexgraph.vault_sync import ObsidianNoteSink, parse_note_text, promote_memory

BEFORE = "We adopted a puppy named Rex last spring"
REPLY = "Yes, and he already knows how to sit!"
SISTER = "My sister is coming over on Sunday"
REMARK = "My own remark: she is allergic to dogs."


def _editor(tmp_path: Path, body: str) -> str:
    script = tmp_path / "editor.py"
    script.write_text("import json, sys\npath = sys.argv[1]\n" + body)
    return f"{sys.executable} {script}"


def test_show_leaves_the_neighbour_text_out(cli):
    m = cli.store().save(REPLY, context="pet chat", neighbour=BEFORE, now=NOW)
    shown = cli.json("show", m.id)["memory"]
    assert "neighbour_text" not in shown and shown["meta"]["context"] == "pet chat"
    table = cli("show", m.id).stdout
    assert REPLY in table and "pet chat" in table and "puppy" not in table


def test_edit_shows_no_neighbour_text_and_keeps_it(cli, tmp_path):
    m = cli.store().save(REPLY, neighbour=BEFORE, now=NOW)
    seen = tmp_path / "seen.json"
    editor = _editor(
        tmp_path,
        f"text = open(path).read()\nopen({str(seen)!r}, 'w').write(text)\n"
        "rec = json.loads(text)\nrec['content'] = 'Yes, and Rex already knows how to sit!'\n"
        "json.dump(rec, open(path, 'w'))\n",
    )
    out = cli.json("edit", m.id, EDITOR=editor)
    assert "puppy" not in seen.read_text() and "neighbour_text" not in json.loads(seen.read_text())
    assert out["changed"] is True and "neighbour_text" not in out["memory"]
    stored = cli.store().get(m.id)
    assert stored.content == "Yes, and Rex already knows how to sit!"
    assert stored.neighbour_text == BEFORE  # still ranks with the memory

    # Not a field of the document: adding it by hand is refused, and nothing changes.
    add = _editor(
        tmp_path,
        "rec = json.load(open(path))\nrec['neighbour_text'] = 'x'\njson.dump(rec, open(path, 'w'))\n",
    )
    done = cli("edit", m.id, ok=False, EDITOR=add)
    assert done.returncode == 2 and "unknown field" in done.stderr, done.stderr
    Path(done.stderr.split("your text is in ")[-1].split(")")[0].strip()).unlink()
    assert cli.store().get(m.id) == stored


def _notes_written_the_old_way(cli):
    """Memories saved by an earlier version (the turn before as their context), promoted then."""
    store = cli.store()
    store.save(BEFORE, now=NOW)
    reply = store.save(REPLY, context=BEFORE, now=NOW + 10)
    sister = store.save(SISTER, context=REPLY, now=NOW + 20)
    own = store.save("The vet visit is on Monday", context="pet care chat", now=NOW + 30)
    # A merge of the reply and the vet memory: its context joins theirs, as a merge wrote it.
    merged = store.save(
        "Rex sits; the vet visit is on Monday", context=f"{BEFORE}\npet care chat", now=NOW + 40
    )
    for source in (reply, own):
        store.add_relation(merged.id, source.id, "consolidated_from", now=NOW + 40)
    paths = {}
    with ObsidianNoteSink(cli.vault, "cortexgraph") as sink:
        for m in (reply, sister, own, merged):
            done = promote_memory(store, sink, m.id, reason="forced", now=NOW + 50)
            paths[m.id] = cli.vault / str(done.path)
    return reply, sister, own, merged, paths


def _body(path: Path) -> str:
    return parse_note_text(path.read_text(encoding="utf-8")).body


def test_vault_refresh_takes_the_leaked_context_out_of_old_notes(cli):
    reply, sister, own, merged, paths = _notes_written_the_old_way(cli)
    assert f"## Context\n\n{BEFORE}" in _body(paths[reply.id])
    # A person wrote into the sister's note; the section we wrote is still as we wrote it.
    note = paths[sister.id]
    note.write_text(note.read_text().replace("\n\n## Context", f"\n\n{REMARK}\n\n## Context", 1))

    # Until the store is repaired the context is the memory's own: no note changes.
    assert cli.json("vault", "refresh")["contexts_removed"] == 0
    assert f"## Context\n\n{BEFORE}" in _body(paths[reply.id])

    storage = str(cli.storage)
    repaired = CliRunner().invoke(maintenance, ["repair-context", "--storage-path", storage])
    assert repaired.exit_code == 0 and "cortexgraph vault refresh" in repaired.output
    report = cli.json("vault", "refresh")
    assert report["checked"] == 4 and report["contexts_removed"] == 3, report

    bodies = {mid: _body(p) for mid, p in paths.items()}
    assert "## Context" not in bodies[reply.id] and REPLY in bodies[reply.id]
    assert "## Context" not in bodies[sister.id] and REMARK in bodies[sister.id]
    assert "## Context\n\npet care chat" in bodies[own.id]  # the user's own context stays
    assert "## Context\n\npet care chat\n" in bodies[merged.id] + "\n"
    assert "puppy" not in bodies[merged.id]

    # Idempotent: nothing left to take out, no file rewritten.
    files = {p: p.read_bytes() for p in cli.vault.rglob("*.md")}
    assert cli.json("vault", "refresh")["contexts_removed"] == 0
    assert {p: p.read_bytes() for p in cli.vault.rglob("*.md")} == files

    # The cleaned note still counts as cortexgraph's own: a later promotion updates it in
    # place, with no conflict copy for a hand edit nobody made.
    cli.store().update(reply.id, content="Yes, and Rex already knows how to sit and stay!")
    again = cli("vault", "promote", reply.id, "--force")
    assert "edited by hand" not in again.stdout, again.stdout
    assert "sit and stay" in _body(paths[reply.id])
    assert not [p for p in cli.vault.rglob("*.md") if "conflict" in p.name]
