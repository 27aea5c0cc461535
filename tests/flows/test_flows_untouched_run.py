"""A run after no change opens nothing (issue 32): the store files are as the last run left them
and no decay crossing is due (``cortexgraph.run_state.unchanged_since``), so the run is answered
without the store, the tracker or the vault, and says so. Anything that may have changed what a
run would see opens the store again.

Through the real CLI and the flow (the session's Prefect test server), on the demo store.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

from cortexgraph.cli.consolidate import app
from cortexgraph.run_state import STATE_FILE
from cortexgraph.storage import open_store
from cortexgraph.user_store import RUNS_FILE

NOT_OPENED = "store not opened"


@pytest.fixture
def no_beads(monkeypatch):
    monkeypatch.setenv("CORTEXGRAPH_BEADS_ENABLED", "false")
    monkeypatch.setenv("CORTEXGRAPH_ENABLE_EMBEDDINGS", "false")


@pytest.fixture
def cli(demo_dirs, prefect_harness, no_beads):
    store_dir, vault = demo_dirs
    args = ["--storage-path", str(store_dir), "--vault", str(vault), "--no-embeddings"]

    def run(*extra: str) -> dict:
        out = CliRunner().invoke(app, [*args, "--json", *extra])
        assert out.exit_code == 0, out.output
        return json.loads(out.stdout)

    first = run()  # no state yet: a full run, which records the files it ended with
    assert first["incremental"] is None
    # Its merges made memories after its decay step judged the store, fading ones (the demo's
    # memories are old): the next run judges them, as a full run would.
    second = run()
    assert not untouched(second) and second["incremental"]["crossing"] >= 1
    run.args = args  # type: ignore[attr-defined]
    return run


def untouched(data: dict) -> bool:
    return any(NOT_OPENED in n for n in data["notes"])


def state_key(store_dir):
    st = (store_dir / STATE_FILE).stat()
    return st.st_ino, st.st_mtime_ns, (store_dir / STATE_FILE).read_bytes()


def runs_recorded(store_dir) -> int:
    return len((store_dir / RUNS_FILE).read_text().splitlines())


def test_a_run_after_no_change_opens_nothing_and_says_so(cli, demo_dirs):
    store_dir, _ = demo_dirs
    state, runs = state_key(store_dir), runs_recorded(store_dir)

    data = cli()
    assert untouched(data)
    summary = data["incremental"]["summary"]
    assert summary.startswith("incremental: nothing changed since the last run at")
    assert data["incremental"]["nothing_changed"] is True
    assert data["agents"] == ["decay", "cluster", "merge", "promote", "relations"]
    assert set(data["summaries"].values()) == {summary}  # every agent skipped, saying why
    assert state_key(store_dir) == state  # the state is left as it was
    assert runs_recorded(store_dir) == runs + 1  # the run is recorded

    text = CliRunner().invoke(app, cli.args)
    assert text.exit_code == 0, text.output
    assert text.stdout.startswith("incremental: nothing changed since the last run at")
    assert NOT_OPENED in text.stdout

    preview = cli("--dry-run")  # a dry run after no change: the same answer, not recorded
    assert untouched(preview) and preview["dry_run"] is True
    decay_only = cli("--agent", "decay")
    assert untouched(decay_only) and decay_only["agents"] == ["decay"]
    assert runs_recorded(store_dir) == runs + 3
    assert state_key(store_dir) == state

    full = cli("--full")  # never skipped
    assert full["incremental"] is None and not untouched(full)
    assert full["reports"]["cluster"]["scanned"] > 1
    assert untouched(cli())  # a full run records the files it ended with too


def test_the_store_named_another_way_is_the_same_store(cli, demo_dirs, monkeypatch):
    """The state keys the files it saw by their absolute paths: a store named relatively by
    one run (``--storage-path store`` in a shell) and absolutely by the next (the fixture's
    first run, a deployment's settings) is the same store, seen unchanged."""
    store_dir, vault = demo_dirs
    monkeypatch.chdir(store_dir.parent)
    relative = ["--storage-path", store_dir.name, "--vault", str(vault), "--no-embeddings"]

    def run() -> dict:
        out = CliRunner().invoke(app, [*relative, "--json"])
        assert out.exit_code == 0, out.output
        return json.loads(out.stdout)

    assert untouched(run())
    open_store(store_dir).save("Priya renamed the release branch to stable")
    seen = run()
    assert not untouched(seen) and seen["incremental"]["changed"] == 1
    assert untouched(cli())  # and back: the absolute name sees what the relative run left


def test_what_may_have_changed_a_run_opens_the_store(cli, demo_dirs):
    store_dir, _ = demo_dirs
    assert untouched(cli())  # the first run's own writes (merges, entities) are recorded

    # A save by another process (the MCP server, a hook).
    writer = "import sys; from cortexgraph.storage import open_store; open_store(sys.argv[1])"
    subprocess.run(
        [sys.executable, "-c", writer + ".save('Dana moved the standup to ten')", str(store_dir)],
        check=True,
    )
    seen = cli()
    assert not untouched(seen) and seen["incremental"]["changed"] == 1
    assert untouched(cli())

    # A compaction by another process: the same records in a new file.
    open_store(store_dir).compact()
    compacted = cli()
    assert not untouched(compacted) and compacted["incremental"]["nothing_changed"] is True
    assert untouched(cli())

    # The relations file changed by hand: a line written again.
    relations = store_dir / "relations.jsonl"
    lines = relations.read_text().splitlines(keepends=True)
    assert lines
    with relations.open("a") as f:
        f.write(lines[-1])
    assert not untouched(cli())
    assert untouched(cli())

    # A run of some agents only reads the state but records nothing: the next run still looks.
    open_store(store_dir).save("The fax machine is gone for good")
    decay_only = cli("--agent", "decay")
    assert not untouched(decay_only) and decay_only["incremental"]["changed"] == 1
    after = cli()
    assert not untouched(after) and after["incremental"]["changed"] == 1
    assert untouched(cli())


def test_a_due_decay_crossing_or_gc_delete_opens_the_store(demo_dirs, cli):
    from cortexgraph.flows.consolidation import run_pipeline
    from cortexgraph.flows.pipeline_setup import RunOptions
    from cortexgraph.settings import Settings

    store_dir, vault = demo_dirs
    # The demo's memories are all past every bar: one fresh memory has a crossing to come.
    open_store(store_dir).save("The quarterly review moved to Thursday")
    assert not untouched(cli())
    with np.load(store_dir / STATE_FILE) as data:
        due, since = float(data["next_due"]), float(data["now"])
        crossings = data["due"]
    assert np.isfinite(due) and due == crossings.min()
    settings = Settings(storage_path=store_dir, vault_path=vault)
    options = RunOptions(use_embeddings=False)

    before = run_pipeline(settings, replace(options, now=(since + due) / 2, dry_run=True))
    assert NOT_OPENED in before.notes[0]
    crossed = run_pipeline(settings, replace(options, now=due + 1, dry_run=True))
    assert NOT_OPENED not in " ".join(crossed.notes)
    assert crossed.scope is not None and crossed.scope.crossing

    # gc's delete mode has a clock of its own (the grace period of what gc archived).
    deleting = run_pipeline(settings, replace(options, gc="delete", dry_run=True))
    assert NOT_OPENED not in " ".join(deleting.notes)


def test_a_run_that_opened_nothing_reports_each_agents_own_report_skipped(demo_dirs, cli):
    """A Python caller reads ``reports["merge"].outcomes`` of a run after no change as of any
    other run: each agent's own report type, empty, with ``skipped`` saying why."""
    from cortexgraph.agents.cluster_report import ClusterReport
    from cortexgraph.agents.decay_findings import DecayReport
    from cortexgraph.agents.ltm_promoter import PromoteReport
    from cortexgraph.agents.relationship_report import RelationshipReport
    from cortexgraph.agents.semantic_merge import MergeMode, MergeReport
    from cortexgraph.flows.consolidation import run_pipeline
    from cortexgraph.flows.pipeline_setup import RunOptions
    from cortexgraph.settings import Settings

    store_dir, vault = demo_dirs
    settings = Settings(storage_path=store_dir, vault_path=vault)
    report = run_pipeline(settings, RunOptions(use_embeddings=False, merge_mode="preview"))
    assert NOT_OPENED in report.notes[0] and report.scope is not None
    reports = report.reports
    assert {n: type(r) for n, r in reports.items()} == {
        "decay": DecayReport,
        "cluster": ClusterReport,
        "merge": MergeReport,
        "promote": PromoteReport,
        "relations": RelationshipReport,
    }
    why = report.scope.describe()
    assert {r.skipped for r in reports.values()} == {why}
    assert {t.summary for t in report.tables()} == {why}
    assert reports["merge"].outcomes == () and reports["merge"].mode is MergeMode.PREVIEW
    assert reports["promote"].promotions == () and reports["cluster"].clusters == ()
    assert reports["decay"].findings == () and reports["relations"].discovered == ()


def _scopes(store_dir, now):
    """The next run's scope and fingerprints, from the appended lines and from every memory."""
    from cortexgraph.agents.changes import ChangeTracker
    from cortexgraph.run_state import appended_ids, load_run_state, store_files
    from cortexgraph.settings import Settings

    settings = Settings(storage_path=store_dir)
    memories_file, _, generation = store_files(
        store_dir, settings.memories_filename, settings.relations_filename
    )
    previous = load_run_state(store_dir)
    memories = open_store(store_dir).list()
    written = appended_ids(previous, memories_file, generation)
    found = []
    for only in (written, None):
        tracker = ChangeTracker(settings.decay_config())
        found.append((tracker.scope(memories, previous, now, only), tracker.prints))
    return written, found[0], found[1]


def test_the_change_scan_reads_only_what_was_appended_and_finds_the_same(cli, demo_dirs):
    import time

    store_dir, _ = demo_dirs
    store = open_store(store_dir)
    kept, touched, edited, deleted = (m.id for m in store.list()[:4])
    new = store.save("Dana moved the standup to ten").id
    store.touch(touched)
    store.update(edited, content="The billing service moved to the new cluster")
    store.delete(deleted)
    now = time.time() + 400 * 86400  # far enough for crossings too

    written, appended, everything = _scopes(store_dir, now)
    assert written is not None and {new, touched, edited, deleted} <= written
    assert kept not in written
    assert appended == everything  # the same scope and the same fingerprints for the next run
    scope = appended[0]
    assert {new, touched, edited} <= scope.changed and scope.removed == 1

    open_store(store_dir).compact()  # a rewrite: every memory compared
    assert _scopes(store_dir, now)[0] is None


def test_a_line_cut_short_means_every_memory_is_compared(cli, demo_dirs):
    from cortexgraph.run_state import appended_ids, load_run_state

    store_dir, _ = demo_dirs
    open_store(store_dir).save("Dana moved the standup to ten")
    cli()  # records the files
    memories = store_dir / "memories.jsonl"
    generation = store_dir / ".cortexgraph.generation"
    assert appended_ids(load_run_state(store_dir), memories, generation) == set()
    with memories.open("a") as f:
        f.write('{"id": "half a li')  # a writer mid-line
    assert appended_ids(load_run_state(store_dir), memories, generation) is None


def test_another_configuration_makes_a_full_run_that_says_why(cli, demo_dirs, monkeypatch):
    # The state's crossing times and judgements were taken under the last run's thresholds:
    # with another forget bar they no longer stand, though no file changed.
    assert untouched(cli())
    monkeypatch.setenv("CORTEXGRAPH_FORGET_THRESHOLD", "0.2")
    data = cli()
    assert not untouched(data)
    assert data["incremental"] is None  # every memory looked at
    assert any("configuration changed since the last run" in n for n in data["notes"])
    assert untouched(cli())  # the full run recorded the new configuration
    # how a run acts on what it finds is chosen per run, not a judgement: no full run
    assert untouched(cli("--merge-mode", "preview"))


def test_gc_after_runs_without_it_archives_what_they_left(cli, demo_dirs):
    """The deployments: every agent hourly with gc off, decay alone nightly with gc archiving.
    The nightly run after no change must still archive what the hourly run judged
    forgettable and left alone, as a run over every memory with gc archiving does."""
    assert untouched(cli())
    whole = cli("--full", "--agent", "decay", "--gc", "archive", "--dry-run")
    would = set(whole["reports"]["decay"]["collected"])
    assert would  # the demo's old memories are below the forget threshold

    nightly = cli("--agent", "decay", "--gc", "archive")
    assert not untouched(nightly)
    assert sorted(nightly["reports"]["decay"]["collected"]) == sorted(would)
    archived = {m.id for m in open_store(demo_dirs[0]).list(status="archived")}
    assert would <= archived


def test_apply_after_a_run_that_linked_merges_what_it_found(demo_dirs, prefect_harness, no_beads):
    """A run in link mode relates a cluster's members and closes its issue: the next run in
    apply mode after no change must still merge them, as a full run does."""
    from cortexgraph.flows.consolidation import run_pipeline
    from cortexgraph.flows.pipeline_setup import RunOptions
    from cortexgraph.settings import Settings

    store_dir, vault = demo_dirs
    settings = Settings(storage_path=store_dir, vault_path=vault)
    options = RunOptions(use_embeddings=False)
    linked = run_pipeline(settings, replace(options, merge_mode="link"))
    assert [o.status for o in linked.reports["merge"].outcomes] == ["linked"]
    full = run_pipeline(settings, replace(options, full=True, dry_run=True))
    found = {o.source_ids for o in full.reports["merge"].outcomes}
    assert found

    applied = run_pipeline(settings, options)
    assert NOT_OPENED not in " ".join(applied.notes)
    assert {o.source_ids for o in applied.reports["merge"].outcomes if o.merged_id} == found


def test_a_run_that_wants_embeddings_after_one_without_opens_the_store(cli, demo_dirs):
    """``--no-embeddings`` judged by TF-IDF: the next run with the model judges again."""
    from cortexgraph.run_state import run_files, unchanged_since
    from cortexgraph.settings import Settings

    store_dir, _ = demo_dirs
    paths = run_files(Settings(storage_path=store_dir))
    with np.load(store_dir / STATE_FILE) as data:
        now = float(data["now"]) + 1  # just after the last run: no crossing can be due
    assert unchanged_since(store_dir, paths, now, embeddings=False) is not None
    assert unchanged_since(store_dir, paths, now, embeddings=True) is None


def test_a_clock_before_the_last_runs_opens_the_store(cli, demo_dirs):
    from cortexgraph.run_state import run_files, unchanged_since
    from cortexgraph.settings import Settings

    store_dir, _ = demo_dirs
    paths = run_files(Settings(storage_path=store_dir))
    with np.load(store_dir / STATE_FILE) as data:
        since = float(data["now"])
    assert unchanged_since(store_dir, paths, since + 1) == since
    assert unchanged_since(store_dir, paths, since - 3600) is None
