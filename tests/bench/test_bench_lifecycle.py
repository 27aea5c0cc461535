"""bench/lifecycle.py on a tiny synthetic LoCoMo-format file: the JSON it writes, and the
``never_forget`` row keeping every turn active. The shared scorer is imported from
../shared/bench at run time (as the bench does); without it these tests skip."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "bench"
pytestmark = pytest.mark.skipif(
    not (SHARED / "locomo_retrieval.py").is_file(), reason="needs ../shared/bench's scorer"
)

SESSION_1 = [
    ("Ana", "I adopted a grey cat called Pixel from the shelter on Monday."),
    ("Ben", "Congratulations! How is Pixel settling in?"),
    ("Ana", "Pixel hides under the sofa but loves the window sill."),
    ("Ben", "I started learning the cello with a teacher in Porto."),
]
SESSION_2 = [
    ("Ana", "Do you remember what I told you about Pixel the cat and the window sill?"),
    ("Ben", "Yes, the grey cat from the shelter. My cello recital is next Friday."),
    ("Ana", "I booked a train to Lisbon for the recital weekend."),
]
RAW = [
    {
        "sample_id": "synthetic-1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "10:00 am on 1 March, 2023",
            "session_1": [
                {"speaker": s, "dia_id": f"D1:{i + 1}", "text": t}
                for i, (s, t) in enumerate(SESSION_1)
            ],
            "session_2_date_time": "6:30 pm on 2 March, 2023",
            "session_2": [
                {"speaker": s, "dia_id": f"D2:{i + 1}", "text": t}
                for i, (s, t) in enumerate(SESSION_2)
            ],
        },
        "qa": [
            {
                "question": "What is the name of Ana's cat?",
                "answer": "Pixel",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "Which instrument is Ben learning?",
                "answer": "cello",
                "evidence": ["D1:4"],
                "category": 4,
            },
            {
                "question": "Where is Ana travelling for the recital?",
                "answer": "Lisbon",
                "evidence": ["D2:3", "D2:2"],
                "category": 1,
            },
        ],
    }
]


# What the bench sets in its process for the hook and Prefect; put back after each test.
BENCH_ENV = (
    "CORTEXGRAPH_STORAGE_PATH",
    "CORTEXGRAPH_HOOK_STATE_DIR",
    "PREFECT_HOME",
    "PREFECT_LOGGING_LEVEL",
    "PREFECT_LOGGING_EXTRA_LOGGERS",
)


def run_bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> dict:
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    for key in BENCH_ENV:
        # setenv first: monkeypatch records a delenv of an unset variable not at all, so what
        # the bench then sets (PREFECT_LOGGING_LEVEL=ERROR) stayed in the worker's environment
        # and every later test's Prefect worker dropped the flow run's warnings.
        monkeypatch.setenv(key, "")
        monkeypatch.delenv(key)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect-home"))
    import lifecycle

    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(RAW), encoding="utf-8")
    out = tmp_path / "rows.json"
    assert lifecycle.main([str(data), "--json", str(out), "--hook-process", "1", *args]) == 0
    return json.loads(out.read_text(encoding="utf-8"))


def test_never_forget_keeps_every_turn_active_and_writes_the_rows(tmp_path, monkeypatch):
    rows = run_bench(tmp_path, monkeypatch, "--configs", "never_forget")["rows"]
    assert [r["name"] for r in rows] == ["never_forget"]
    row = rows[0]
    for key in (
        "r_at_5",
        "mrr",
        "active",
        "turns",
        "archived",
        "merged_away",
        "notes",
        "relations",
    ):
        assert key in row
    assert row["turns"] == 7
    assert row["active"] == 7
    assert row["archived"] == row["merged_away"] == row["notes"] == 0
    assert row["nights"] == 0
    # the recall prompt of session 2 went through the hook and its memories were used
    assert row["hook_recalls"] >= 1 and row["uses"] >= 1
    assert 0.0 < row["r_at_5"] <= 1.0 and 0.0 < row["mrr"] <= 1.0


def test_each_turn_is_saved_with_the_turn_before_as_save_memory_saves_it(tmp_path, monkeypatch):
    """The replay reproduces what an assistant's saves produce: the turn saved just before in
    the conversation is a turn's neighbour text (storage.recent_saves), none for a session's
    first turn (the day before is outside the window)."""
    from cortexgraph.storage import open_store

    kept = tmp_path / "kept"
    run_bench(tmp_path, monkeypatch, "--configs", "never_forget", "--keep", str(kept))
    (store_dir,) = kept.glob("never_forget-*/store")
    memories = sorted(open_store(store_dir).list(), key=lambda m: (m.created_at, m.content))
    assert len(memories) == 7
    session_1, session_2 = memories[:4], memories[4:]
    for turns in (session_1, session_2):
        assert turns[0].neighbour_text is None
        for before, turn in pairwise(turns):
            assert turn.neighbour_text == before.content


@pytest.mark.slow
def test_consolidating_rows_run_the_flow_every_simulated_night(
    tmp_path, monkeypatch, prefect_harness
):
    rows = run_bench(tmp_path, monkeypatch, "--configs", "no_gc,defaults", "--days-after", "1")[
        "rows"
    ]
    assert [r["name"] for r in rows] == ["no_gc", "defaults"]
    for row in rows:
        # 1 March 10:00 -> 3 March 18:31: nights of 2 and 3 March
        assert row["nights"] == 2
        assert row["turns"] == 7
        assert row["active"] + row["archived"] + row["merged_away"] + row["promoted"] >= 1
