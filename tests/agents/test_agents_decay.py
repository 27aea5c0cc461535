from __future__ import annotations

import pytest
from agents_helpers import NOW, add

from cortexgraph.agents.common import LABEL_DECAY
from cortexgraph.agents.decay_analyzer import DecayAnalyzer
from cortexgraph.agents.decay_findings import DecayAction, DecayAnalyzerConfig, GcMode, Urgency
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.decay import DecayConfig, memory_score
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import MemoryStatus


def test_urgency_boundaries():
    agent = DecayAnalyzer(InMemoryStore())
    assert agent.urgency(0.1499) is Urgency.HIGH
    assert agent.urgency(0.15) is Urgency.MEDIUM
    assert agent.urgency(0.2499) is Urgency.MEDIUM
    assert agent.urgency(0.25) is Urgency.LOW
    assert agent.urgency(0.35) is Urgency.LOW


def test_each_recommendation(store):
    fresh = add(store, "fresh and fine", age_days=1)
    fading = add(store, "fading, never used", age_days=10)  # score ~0.22: danger zone
    gone = add(store, "long forgotten", age_days=60)  # score ~0.04: below forget
    used = add(store, "used a lot once", age_days=60, use_count=4)
    strong = add(store, "held strongly", age_days=60, strength=1.5)
    busy = add(store, "used often this week", age_days=6, use_count=6, used_days_ago=30)
    agent = DecayAnalyzer(store)
    report = agent.run(now=NOW)
    by_id = {f.memory_id: f for f in report.findings}
    assert fresh.id not in by_id  # above the danger zone: not a finding
    assert by_id[fading.id].action is DecayAction.NEEDS_REVIEW
    assert by_id[fading.id].in_danger_zone and not by_id[fading.id].below_forget
    assert by_id[gone.id].action is DecayAction.GC_CANDIDATE and by_id[gone.id].below_forget
    assert by_id[used.id].action is DecayAction.REINFORCE
    assert by_id[strong.id].action is DecayAction.REINFORCE
    assert by_id[busy.id].action is DecayAction.PROMOTE_CANDIDATE
    for f in report.findings:
        assert f.score == pytest.approx(memory_score(store.get(f.memory_id), NOW, DecayConfig()))
        assert f.urgency is agent.urgency(f.score)
    assert report.scanned == 6
    assert report.below_forget == sum(f.below_forget for f in report.findings)
    assert [f.score for f in report.findings] == sorted(f.score for f in report.findings)


def test_archived_and_promoted_are_not_scanned(store):
    a = add(store, "old archived", age_days=60)
    store.update(a.id, status=MemoryStatus.ARCHIVED)
    report = DecayAnalyzer(store).run(now=NOW)
    assert report.scanned == 0 and report.findings == ()


def _memory_issues(tracker, **kw):
    return [i for i in tracker.query(labels=[LABEL_DECAY], **kw) if "decay:digest" not in i.labels]


PER_MEMORY = DecayAnalyzerConfig(memory_issues=True)


def test_high_urgency_findings_open_issues_once_when_asked(store, tracker):
    gone = add(store, "long forgotten", age_days=60)
    medium = add(store, "fading", age_days=10)
    agent = DecayAnalyzer(store, tracker, PER_MEMORY)
    report = agent.run(now=NOW)
    issues = _memory_issues(tracker)
    assert len(issues) == 1 and report.issues_opened == 1
    issue = issues[0]
    assert "urgency:high" in issue.labels
    assert issue.metadata["memory_id"] == gone.id
    assert issue.metadata["action"] == "gc_candidate"
    by_id = {f.memory_id: f.issue_id for f in report.findings}
    assert by_id[gone.id] == issue.id
    (medium_digest,) = tracker.query(labels=["decay:digest", "urgency:medium"])
    assert by_id[medium.id] == medium_digest.id  # a medium finding is listed in its digest
    agent.run(now=NOW)  # a second run finds the same issue, opens no second one
    assert len(_memory_issues(tracker)) == 1


def test_decay_opens_one_digest_per_urgency_level_by_default(store, tracker):
    gone = [add(store, f"long forgotten detail number {k}", age_days=60) for k in range(5)]
    fading = add(store, "fading", age_days=10)
    agent = DecayAnalyzer(store, tracker)
    report = agent.run(now=NOW)
    issues = tracker.query(labels=[LABEL_DECAY])
    assert report.issues_opened == 0 and _memory_issues(tracker) == []
    assert sorted(i.metadata["digest"] for i in issues) == ["high", "medium"]
    (high,) = tracker.query(labels=[LABEL_DECAY, "urgency:high"])
    assert sorted(high.metadata["memory_ids"]) == sorted(m.id for m in gone)
    assert all(m.id in high.description for m in gone) and high.title.startswith("5 fading")
    assert {u: n for u, _, n in report.digests} == {"high": 5, "medium": 1}
    agent.run(now=NOW)  # a re-run keeps the same digests
    assert len(tracker.query(labels=[LABEL_DECAY])) == 2
    store.update(fading.id, last_used=int(NOW))  # used again: the medium level empties
    agent.run(now=NOW)
    (medium,) = tracker.query(labels=[LABEL_DECAY, "urgency:medium"])
    assert medium.status == "closed"
    store.update(gone[0].id, status=MemoryStatus.PROMOTED)
    agent.run(now=NOW)  # the digest follows its memories
    (high,) = tracker.query(labels=[LABEL_DECAY, "urgency:high"])
    assert gone[0].id not in high.metadata["memory_ids"] and len(high.metadata["memory_ids"]) == 4


def test_dry_run_opens_no_issue_and_collects_nothing(store, tracker):
    gone = add(store, "long forgotten", age_days=60)
    cfg = DecayAnalyzerConfig(gc=GcMode.DELETE)
    report = DecayAnalyzer(store, tracker, cfg).run(now=NOW, dry_run=True)
    assert tracker.query() == []
    assert report.collected == (gone.id,)  # what would be collected
    assert store.get(gone.id).status is MemoryStatus.ACTIVE


@pytest.mark.parametrize("mode", [GcMode.ARCHIVE, GcMode.DELETE])
def test_gc_only_takes_gc_candidates(store, mode, tmp_path):
    from cortexgraph.storage.graveyard import Graveyard

    gone = add(store, "long forgotten", age_days=60)
    kept = add(store, "long forgotten but used", age_days=60, use_count=4)
    config = DecayAnalyzerConfig(gc=mode, gc_grace_days=7)
    agent = DecayAnalyzer(store, config=config, graveyard=Graveyard(tmp_path))
    report = agent.run(now=NOW)
    assert report.collected == (gone.id,)
    # Both modes archive first: the grace period starts.
    assert store.get(gone.id).status is MemoryStatus.ARCHIVED
    assert store.get(kept.id).status is MemoryStatus.ACTIVE
    agent.run(now=NOW + 6 * 86400)
    assert store.find(gone.id) is not None
    agent.run(now=NOW + 8 * 86400)
    if mode is GcMode.DELETE:  # deleted after the grace period, kept in the graveyard
        assert store.find(gone.id) is None and agent.purged == (gone.id,)
        assert Graveyard(tmp_path).find(gone.id).memory.content == "long forgotten"
    else:
        assert store.get(gone.id).status is MemoryStatus.ARCHIVED


def test_config_rejects_inverted_bounds():
    with pytest.raises(InvalidInputError):
        DecayAnalyzerConfig(high_below=0.3, medium_below=0.2)


def test_table_rows_match_findings(store):
    add(store, "long forgotten", age_days=60)
    table = DecayAnalyzer(store).run(now=NOW).table()
    assert len(table.rows) == 1 and "gc_candidate 1" in table.summary
    assert "| memory |" in table.to_markdown()


def test_decay_issues_follow_their_memory_across_runs(store, tracker):
    gone = add(store, "long forgotten", age_days=60)
    other = add(store, "also forgotten", age_days=60)
    agent = DecayAnalyzer(store, tracker, PER_MEMORY)
    first = agent.run(now=NOW)
    assert (first.issues_opened, first.issues_tracked, first.issues_closed) == (2, 0, 0)
    again = agent.run(now=NOW)  # a re-run opens nothing and counts them as already open
    assert (again.issues_opened, again.issues_tracked) == (0, 2)
    assert len(_memory_issues(tracker)) == 2
    (issue,) = [i for i in _memory_issues(tracker) if i.metadata["memory_id"] == gone.id]
    assert "long forgotten" in issue.title and "gc_candidate" in issue.title
    store.update(gone.id, last_used=int(NOW), use_count=4)  # used again: no longer fading
    store.update(other.id, status=MemoryStatus.PROMOTED)
    recovered = agent.run(now=NOW)
    assert recovered.issues_closed == 2 and recovered.issues_opened == 0
    assert tracker.query(labels=[LABEL_DECAY], status="open") == []  # digests closed too
    assert all(i.status == "closed" for i in tracker.query(labels=[LABEL_DECAY]))
    store.update(gone.id, last_used=int(NOW - 60 * 86400), use_count=0)  # fades again
    faded = agent.run(now=NOW)
    assert faded.issues_reopened == 1 and faded.issues_opened == 0
    (reopened,) = _memory_issues(tracker, status="open")
    assert reopened.id == issue.id


def test_a_digest_lists_its_most_urgent_memories_and_counts_the_rest(store, tracker):
    # It listed every member: tens of thousands of ids at 100k memories in one issue.
    gone = [add(store, f"long forgotten detail number {k}", age_days=60 + k) for k in range(5)]
    fading = add(store, "fading", age_days=10)
    agent = DecayAnalyzer(store, tracker, DecayAnalyzerConfig(digest_max_lines=3))
    report = agent.run(now=NOW)
    (medium,) = tracker.query(labels=[LABEL_DECAY, "urgency:medium"])
    # not at risk yet, and its most urgent change on nearly every run of a big store
    assert medium.metadata["memory_ids"] == [] and medium.title.startswith("1 fading memory,")
    assert fading.id not in medium.description
    (high,) = tracker.query(labels=[LABEL_DECAY, "urgency:high"])
    oldest_first = [m.id for m in reversed(gone)]  # the first to fall below forget
    assert high.metadata["memory_ids"] == oldest_first[:3]
    assert high.metadata["count"] == 5 and high.metadata["format"] == 2
    assert high.title == "5 fading memories, high urgency"
    assert "… and 2 more" in high.description and gone[0].id not in high.description
    assert "--agent decay --full --dry-run --json" in high.description  # the full list
    assert report.digests == (("high", high.id, 5), ("medium", medium.id, 1))
    by_id = {f.memory_id: f for f in report.findings}
    assert [by_id[i].forget_at for i in oldest_first] == sorted(
        by_id[i].forget_at for i in oldest_first
    )
    assert all(by_id[m.id].forget_at < NOW for m in gone)  # fell below it already


def test_a_digest_is_rewritten_only_when_what_it_shows_changes(store):
    # Any member entering or leaving rewrote it (and, with beads, committed it): at 100k
    # memories ~1,300 cross a bar an hour, so every run did.
    from cortexgraph.agents.memory_tracker import InMemoryIssueTracker

    changes: list[str] = []
    tracker = InMemoryIssueTracker(on_change=changes.append)
    gone = [add(store, f"long forgotten detail {k}", age_days=60 + k / 10) for k in range(150)]
    agent = DecayAnalyzer(store, tracker, DecayAnalyzerConfig(digest_max_lines=3))
    agent.run(now=NOW)
    (high,) = tracker.query(labels=[LABEL_DECAY, "urgency:high"])
    assert high.title == "about 150 fading memories, high urgency"
    assert high.metadata["count"] == 150
    listed = list(high.metadata["memory_ids"])
    changes.clear()
    agent.run(now=NOW + 3 * 86400)  # scores moved; the order by forget moment did not
    add(store, "a newer fading memory", age_days=20)  # the 151st: less urgent than the listed
    report = agent.run(now=NOW)
    assert changes == [] and report.digests[0][2] == 151  # the report counts it
    store.update(listed[0], last_used=int(NOW))  # used again: a listed one leaves
    agent.run(now=NOW)
    (high,) = tracker.query(labels=[LABEL_DECAY, "urgency:high"])
    assert changes and high.metadata["memory_ids"] == [*listed[1:], gone[-4].id]


def test_digests_of_the_old_format_are_rewritten_and_a_duplicate_closed(store, tracker):
    """A store upgraded in place: its digests listed every member; two runs that raced left a
    second digest of one level."""
    gone = [add(store, f"long forgotten detail number {k}", age_days=60 + k) for k in range(5)]
    old = {"digest": "high", "memory_ids": [m.id for m in gone], "count": 5, "updated_at": 1.0}
    kept = tracker.create(
        "5 fading memories, high urgency",
        labels=(LABEL_DECAY, "urgency:high", "decay:digest"),
        metadata=old,
        dedupe_key="decay-digest:high",
    )
    twin = tracker.create(
        "5 fading memories, high urgency",
        labels=(LABEL_DECAY, "urgency:high", "decay:digest"),
        metadata=old,
    )
    DecayAnalyzer(store, tracker, DecayAnalyzerConfig(digest_max_lines=2)).run(now=NOW)
    (high,) = tracker.query(labels=[LABEL_DECAY, "urgency:high"], status="open")
    assert high.id == kept.id and high.metadata["format"] == 2
    assert high.metadata["memory_ids"] == [gone[4].id, gone[3].id]
    assert tracker.query(labels=[LABEL_DECAY], status="closed")[0].id == twin.id
