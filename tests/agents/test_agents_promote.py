from __future__ import annotations

import pytest
from agents_helpers import NOW, add
from fakes import RecordingSink

from cortexgraph.agents.common import AgentError
from cortexgraph.agents.ltm_promoter import LTMPromoter, PromoterConfig
from cortexgraph.storage.decay import DecayConfig, memory_score, promotion_reason
from cortexgraph.storage.errors import StorageError
from cortexgraph.storage.models import MemoryStatus
from cortexgraph.vault_sync.promotion import promote_memory as vault_promote


def test_promotes_by_score_by_use_and_forced(store):
    strong = add(store, "core fact", use_count=3, strength=1.5)  # score well above 0.65
    busy = add(store, "busy", age_days=13, used_days_ago=12, use_count=5)  # 5 uses in 13 days
    slow = add(store, "used 5 times over a month", age_days=30, used_days_ago=25, use_count=5)
    fresh = add(store, "brand new, never recalled")  # scores 1.0 but has not proven itself
    forced = add(store, "plain old note", age_days=30)
    sink = RecordingSink()
    cfg = PromoterConfig(decay=DecayConfig(), force_ids=(forced.id,))
    report = LTMPromoter(store, sink, cfg).run(now=NOW)
    reasons = {p.memory_id: p.reason for p in report.promotions}
    assert set(reasons) == {strong.id, busy.id, forced.id}
    assert reasons[strong.id].startswith("score")
    assert reasons[busy.id].startswith("used 5 times")
    assert reasons[forced.id] == "forced"
    for mid in reasons:
        m = store.get(mid)
        assert m.status is MemoryStatus.PROMOTED and m.promoted_at == int(NOW)
        assert m.promoted_to == f"cortexgraph/{mid}.md"
    assert store.get(slow.id).status is MemoryStatus.ACTIVE
    assert store.get(fresh.id).status is MemoryStatus.ACTIVE
    no_use_needed = PromoterConfig(decay=DecayConfig(promote_score_min_uses=0))
    assert [m.id for m, _ in LTMPromoter(store, sink, no_use_needed).candidates(NOW)] == [fresh.id]


def test_the_promoter_and_promote_memory_share_one_rule_earned_by_use_over_time(store):
    """The rule of storage.decay.promotion_reason, which the MCP tool's auto-detect and
    vault_sync.promote_memory ask too: use over time, never the moment of the save."""
    fresh = add(store, "saved a moment ago")  # scores 1.0 >= 0.65, never recalled
    once = add(store, "recalled once today", use_count=1)  # scores 1.52
    twice = add(store, "recalled twice, last an hour ago", age_days=2, used_days_ago=1 / 24)
    store.update(twice.id, use_count=2)
    busy = add(
        store, "used 5 times in 10 days", age_days=10, used_days_ago=9, use_count=5, strength=0.5
    )
    faded = add(store, "recalled twice a month ago", age_days=40, used_days_ago=30, use_count=2)
    decay = DecayConfig()
    promoter = LTMPromoter(store, RecordingSink(), PromoterConfig(decay=decay))
    chosen = {m.id: reason for m, reason in promoter.candidates(NOW)}
    by_rule = {
        m.id: promotion_reason(m, NOW, decay)
        for m in store.list(status=MemoryStatus.ACTIVE)
        if promotion_reason(m, NOW, decay) is not None
    }
    assert chosen == by_rule
    assert set(chosen) == {twice.id, busy.id}
    assert chosen[twice.id].startswith("score") and "with 2 uses" in chosen[twice.id]
    assert chosen[busy.id].startswith("used 5 times")
    assert memory_score(store.get(fresh.id), NOW, decay) >= decay.promote_threshold
    assert memory_score(store.get(once.id), NOW, decay) >= decay.promote_threshold
    assert memory_score(store.get(faded.id), NOW, decay) < decay.promote_threshold
    # The one step every path calls decides the same for a memory named by id.
    assert not vault_promote(store, RecordingSink(), fresh.id, now=NOW, dry_run=True).promoted
    assert not vault_promote(store, RecordingSink(), once.id, now=NOW, dry_run=True).promoted
    assert vault_promote(store, RecordingSink(), twice.id, now=NOW, dry_run=True).promoted


def test_second_run_promotes_nothing_twice(store):
    add(store, "core fact", use_count=3, strength=1.5)
    sink = RecordingSink()
    agent = LTMPromoter(store, sink)
    assert len(agent.run(now=NOW).promotions) == 1
    assert agent.run(now=NOW).promotions == ()
    assert len(sink.calls) == 1


def test_dry_run_writes_no_note_and_changes_nothing(store):
    m = add(store, "core fact", use_count=3, strength=1.5)
    sink = RecordingSink()
    report = LTMPromoter(store, sink).run(now=NOW, dry_run=True)
    assert [p.memory_id for p in report.promotions] == [m.id]
    assert report.promotions[0].note_path is None
    assert sink.calls == [] and store.get(m.id).status is MemoryStatus.ACTIVE
    # without a sink a dry run still previews; a live run refuses
    assert len(LTMPromoter(store, None).run(now=NOW, dry_run=True).promotions) == 1
    with pytest.raises(AgentError):
        LTMPromoter(store, None).run(now=NOW)


def test_failed_note_is_reported_and_memory_stays_active(store):
    ok = add(store, "core fact", use_count=3, strength=1.5)
    bad = add(store, "another core fact", use_count=3, strength=1.5)
    report = LTMPromoter(store, RecordingSink(fail_for={bad.id})).run(now=NOW)
    assert [p.memory_id for p in report.promotions] == [ok.id]
    assert report.failed[0][0] == bad.id and "disk full" in report.failed[0][1]
    assert store.get(bad.id).status is MemoryStatus.ACTIVE


def test_related_memories_go_to_the_sink(store):
    m = add(store, "core fact", use_count=3, strength=1.5)
    other = add(store, "context for it", age_days=20)
    store.add_relation(m.id, other.id, "supports", now=NOW)
    sink = RecordingSink()
    LTMPromoter(store, sink).run(now=NOW)
    assert sink.calls == [(m.id, 1, sink.calls[0][2])]


def test_max_per_run(store):
    for i in range(3):
        add(store, f"core fact {i}", use_count=3, strength=1.5)
    report = LTMPromoter(store, RecordingSink(), PromoterConfig(max_per_run=2)).run(now=NOW)
    assert len(report.promotions) == 2


class FlushingSink(RecordingSink):
    """A sink that defers work to ``flush`` (as the vault's batch sink does); records what the
    store said about the written memories at each flush, and can fail it."""

    def __init__(self, store, fail_flush: bool = False) -> None:
        super().__init__()
        self.store = store
        self.fail_flush = fail_flush
        self.seen_at_flush: list[list[MemoryStatus]] = []

    def flush(self) -> None:
        self.seen_at_flush.append([self.store.get(mid).status for mid, _, _ in self.calls])
        if self.fail_flush:
            raise StorageError("disk full writing the entity notes")


def test_memories_are_marked_in_batches_after_the_sink_flushes(store):
    ids = [add(store, f"core fact {i}", use_count=3, strength=1.5).id for i in range(3)]
    sink = FlushingSink(store)
    report = LTMPromoter(store, sink, PromoterConfig(mark_every=2)).run(now=NOW)
    written = [mid for mid, _, _ in sink.calls]
    assert sorted(written) == sorted(ids) and report.failed == ()
    assert [p.memory_id for p in report.promotions] == written
    active, promoted = MemoryStatus.ACTIVE, MemoryStatus.PROMOTED
    # each batch is flushed before it is marked: a crash before leaves its memories active
    assert sink.seen_at_flush == [[active, active], [promoted, promoted, active]]
    assert all(store.get(i).promoted_to == f"cortexgraph/{i}.md" for i in ids)


def test_a_failed_flush_leaves_its_batch_active_and_reported(store):
    ids = [add(store, f"core fact {i}", use_count=3, strength=1.5).id for i in range(2)]
    report = LTMPromoter(store, FlushingSink(store, fail_flush=True)).run(now=NOW)
    assert report.promotions == ()
    assert sorted(mid for mid, _ in report.failed) == sorted(ids)
    assert "disk full" in report.failed[0][1]
    assert all(store.get(i).status is MemoryStatus.ACTIVE for i in ids)
