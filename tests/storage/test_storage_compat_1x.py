"""A store written by the real cortexgraph 1.2.1 (tests/fixtures/cortexgraph_1x) loads intact."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cortexgraph.storage import JSONLStore, MemoryNotFoundError, MemoryStatus

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "cortexgraph_1x" / "store"


@pytest.fixture
def legacy(tmp_path):
    shutil.copytree(FIXTURE, tmp_path / "stm", ignore=shutil.ignore_patterns("expected.json"))
    return JSONLStore(tmp_path / "stm")


@pytest.fixture
def expected():
    return json.loads((FIXTURE / "expected.json").read_text())


def test_every_memory_field_matches_what_1x_reads(legacy, expected):
    assert {m.id for m in legacy.list()} == set(expected["memories"])
    for mid, want in expected["memories"].items():
        want = {k: v for k, v in want.items() if k != "embed"}  # vectors live in a sidecar
        assert legacy.get(mid).to_json() == want
    assert legacy.stats().quarantined_lines == 0


def test_every_relation_field_matches_what_1x_reads(legacy, expected):
    assert {r.id: r.to_json() for r in legacy.relations()} == expected["relations"]


def test_1x_semantics_last_line_wins_and_tombstones_delete(legacy):
    ledger = legacy.get("00000000-0000-4000-8000-000000000001")
    assert (ledger.use_count, ledger.last_used) == (4, 1_700_007_200)  # the appended update
    assert ledger.is_core and ledger.entities == ("PostgreSQL", "billing")
    with pytest.raises(MemoryNotFoundError):
        legacy.get("00000000-0000-4000-8000-000000000003")
    deploys = legacy.get("00000000-0000-4000-8000-000000000004")
    assert deploys.status is MemoryStatus.PROMOTED
    assert deploys.promoted_to == "vault/process/deploys.md"
    assert [r.memory.id for r in legacy.search("dark mode editor", status=None)][:1] == [
        "00000000-0000-4000-8000-000000000002"
    ]


def test_legacy_inline_embed_is_accepted_and_not_written_back(legacy):
    raw = (legacy.path / "memories.jsonl").read_text()
    assert '"embed": [0.125' in raw
    legacy.compact()
    assert '"embed"' not in (legacy.path / "memories.jsonl").read_text()
    assert len(legacy) == 4
