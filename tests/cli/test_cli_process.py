"""The process boundary of every command the CLI tests use: ``python -m cortexgraph.cli.main``
in a child process with the environment it is given, its exit status and its stdout/stderr.
The other CLI tests run the same ``main()`` in the test's process (tests/cli/cli_helpers.py)."""

from __future__ import annotations

import sys

from cli_helpers import NOW, Cli

from cortexgraph.agents.merge_ops import apply_plan, plan_merge
from cortexgraph.agents.undo import collect_garbage


def test_every_command_runs_in_its_own_process(tmp_path):
    """Slow by nature: twelve processes, one per command (about 2 s of imports each)."""
    from cortexgraph.vault_sync import ObsidianNoteSink, promote_memory

    cli = Cli(tmp_path / "a", process=True)
    store = cli.store()
    a = store.save("Billing invoices are stored in PostgreSQL", tags=["billing"], now=NOW)
    b = store.save("The billing service keeps invoices in PostgreSQL", tags=["db"], now=NOW)
    gone = store.save("the fax number of the old office", now=NOW)
    kept = store.save("We chose PostgreSQL 16 for row-level security", now=NOW)
    merged = plan_merge([a, b], 0.9, NOW + 60, 0.2, 0.8)
    apply_plan(store, merged, NOW + 60, issue_id=None)
    collect_garbage(store, [gone.id], delete=False, now=NOW, grace_days=7)
    with ObsidianNoteSink(cli.vault) as sink:
        promote_memory(store, sink, kept.id, reason="forced", now=NOW + 1, force=True)

    assert cli.json("search", "postgresql billing")[0]["id"] == merged.memory.id
    assert kept.id in {m["id"] for m in cli.json("list", "--status", "all")}
    assert cli.json("show", kept.id)["memory"]["id"] == kept.id
    editor = tmp_path / "editor.py"
    editor.write_text("import sys\n")  # leaves the record as it is
    assert cli.json("edit", kept.id, EDITOR=f"{sys.executable} {editor}")["changed"] is False
    assert cli.json("unarchive", gone.id)["memory_ids"] == [gone.id]
    assert cli.json("unpromote", kept.id)["trashed_to"].startswith(".trash/")
    assert set(cli.json("undo", "merge", merged.memory.id)["memory_ids"]) == {a.id, b.id}
    assert cli.json("history", a.id)["events"][-1]["event"] == "merge undone"
    exported = cli.json("export", "-o", str(tmp_path / "x.jsonl"))
    other = Cli(tmp_path / "b", process=True)
    assert (
        other.json("import", str(tmp_path / "x.jsonl"))["added"]["memories"]
        == (exported["memories"])
    )
    assert cli.json("backup", "-o", str(tmp_path / "b.tar.gz"))["files"] > 0
    assert Cli(tmp_path / "c", process=True).json("restore", str(tmp_path / "b.tar.gz"))
    bad = cli("list", "--status", "lost", ok=False)  # a usage error: exit 2, said on stderr
    assert bad.returncode == 2 and "unknown status" in bad.stderr
