"""The JSONL we write is the beads export format, and what bd wrote survives our rewrites."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from cortexgraph.storage.beads import (
    IssueRecordError,
    issue_from_line,
    issue_to_record,
    open_tracker,
)
from cortexgraph.storage.beads.schema import format_time, parse_time

BD_RECORD = {
    "id": "cg-x9k",
    "title": "Written by bd",
    "description": "from the Go tool",
    "design": "a design",
    "acceptance_criteria": "it works",
    "notes": "some notes",
    "status": "open",
    "priority": 0,
    "issue_type": "bug",
    "assignee": "bob",
    "estimated_minutes": 30,
    "created_at": "2025-11-23T06:02:51.413795197+01:00",
    "created_by": "bob",
    "updated_at": "2025-11-23T07:33:52.029189896Z",
    "external_ref": "gh-9",
    "compaction_level": 1,
    "labels": ["area:x"],
    "dependencies": [
        {
            "issue_id": "cg-x9k",
            "depends_on_id": "cg-abc",
            "type": "discovered-from",
            "created_at": "2025-11-23T06:02:51Z",
            "created_by": "bob",
            "thread_id": "t1",
        }
    ],
    "comments": [
        {
            "id": 7,
            "issue_id": "cg-x9k",
            "author": "bob",
            "text": "hi",
            "created_at": "2025-11-23T06:03:00Z",
        }
    ],
    "pinned": True,
    "waiters": ["mail:a"],
    "creator": {"name": "bob", "platform": "github"},
    "agent_state": "idle",
    "some_future_field": {"nested": [1, 2, 3]},
}


def _lines(path):
    return [line for line in path.read_text().splitlines() if line]


def test_every_line_written_passes_a_strict_beads_reader_field_by_field(
    tmp_path, clock, strict_reader
):
    tracker = open_tracker(tmp_path / "store", search_parents=False, clock=clock)
    made = [
        tracker.create(
            "Merge 3 memories about PostgreSQL",
            description="cluster c1, cohesion 0.91",
            labels=["consolidation:cluster", "urgency:high"],
            priority=1,
            metadata={"memory_ids": ["m1", "m2", "m3"], "cohesion": 0.91, "cluster_id": "c1"},
            dedupe_key="cluster:c1",
        ),
        tracker.create("Review: é ünïcode ✓ title", labels=["consolidation:review"]),
        tracker.create("Decay: memory m7 at risk", priority=0, metadata={"score": 0.12}),
    ]
    tracker.claim(made[0].id, "semantic-merge")
    tracker.close(made[0].id, "merged 3 memories into m9")
    tracker.update(made[1].id, status="blocked", assignee="alice")

    lines = _lines(tracker.path)
    assert len(lines) == 3
    for line in lines:
        rec = strict_reader(line)
        issue = tracker.get(rec["id"])
        assert json.loads(line)["_type"] == "issue"
        assert rec["title"] == issue.title
        assert rec["description"] == issue.description
        assert rec["status"] == issue.status
        assert rec["priority"] == issue.priority
        assert rec["issue_type"] == issue.issue_type == "task"
        assert rec.get("assignee") == issue.assignee
        assert tuple(rec["labels"]) == issue.labels
        assert rec["metadata"] == dict(issue.metadata)
        assert rec["created_at"] == issue.created_at
        assert rec["updated_at"] == issue.updated_at
        assert rec.get("closed_at") == issue.closed_at
        assert rec.get("close_reason", "") == issue.close_reason
    closed = strict_reader(lines[0])
    assert closed["status"] == "closed" and closed["close_reason"] == "merged 3 memories into m9"
    assert closed["metadata"]["dedupe_key"] == "cluster:c1"
    assert closed["closed_at"] > closed["created_at"]


def test_fields_written_by_bd_survive_our_rewrite(tmp_path, clock, strict_reader):
    tracker = open_tracker(tmp_path / "store", search_parents=False, clock=clock)
    tracker.path.parent.mkdir(parents=True)
    other_type = json.dumps({"_type": "memory", "key": "k", "value": "kept as is"})
    broken = '{"id": "cg-bad", "title": '
    no_type = json.dumps({**BD_RECORD, "id": "cg-old", "title": "older export, no _type"})
    tracker.path.write_text(
        "\n".join([json.dumps({"_type": "issue", **BD_RECORD}), other_type, broken, no_type]) + "\n"
    )

    issue = tracker.get("cg-x9k")
    assert issue.priority == 0 and issue.issue_type == "bug" and issue.estimated_minutes == 30
    assert issue.created_at == datetime(2025, 11, 23, 5, 2, 51, 413795, tzinfo=UTC)
    assert issue.dependencies[0].type == "discovered-from"
    assert issue.comments[0].text == "hi"
    assert issue.extra["some_future_field"] == {"nested": [1, 2, 3]}
    assert tracker.get("cg-old").title == "older export, no _type"
    assert [n for n, _ in tracker.unreadable_lines()] == [3]

    tracker.claim("cg-x9k", "bob")  # rewrites that one line

    after = _lines(tracker.path)
    assert after[1] == other_type and after[2] == broken and after[3] == no_type
    rewritten = json.loads(after[0])
    for key, value in BD_RECORD.items():
        if key in ("status", "updated_at", "created_at"):
            continue
        assert rewritten[key] == value, key
    assert rewritten["status"] == "in_progress"
    assert parse_time(rewritten["created_at"]) == issue.created_at
    strict = strict_reader(after[0], allow_unknown=True)  # some_future_field
    assert strict["dependencies"][0]["thread_id"] == "t1"


def test_non_object_metadata_is_kept_verbatim():
    line = json.dumps({**BD_RECORD, "metadata": "free text"})
    issue = issue_from_line(line)
    assert issue is not None and issue.metadata == {}
    assert issue_to_record(issue)["metadata"] == "free text"


@pytest.mark.parametrize(
    "bad",
    [
        {"title": "no id", "created_at": "2025-01-01T00:00:00Z"},
        {**BD_RECORD, "priority": "high"},
        {**BD_RECORD, "labels": "a,b"},
        {**BD_RECORD, "created_at": "yesterday"},
        {**BD_RECORD, "dependencies": [{"type": "blocks"}]},
    ],
)
def test_invalid_records_are_rejected_with_a_reason(bad):
    with pytest.raises(IssueRecordError):
        issue_from_line(json.dumps(bad))


def test_times_round_trip_as_rfc3339():
    t = datetime(2026, 3, 4, 5, 6, 7, 120000, tzinfo=UTC)
    assert format_time(t) == "2026-03-04T05:06:07.12Z"
    assert parse_time(format_time(t)) == t
    assert format_time(t.replace(microsecond=0)) == "2026-03-04T05:06:07Z"
    assert parse_time("2026-03-04T07:06:07+02:00") == t.replace(microsecond=0)
