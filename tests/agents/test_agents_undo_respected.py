"""An undo is a decision the agents respect until the memory changes again (issue 30, Medium
7): after unpromote, undo merge and undo gc, the next run does not redo it; once the memory is
used again it is judged like any other."""

from __future__ import annotations

from dataclasses import replace

from cortexgraph.agents.ltm_promoter import LTMPromoter
from cortexgraph.agents.undo import collect_garbage, unarchive
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.decay import DAY
from cortexgraph.storage.models import MemoryStatus
from cortexgraph.vault_sync.unpromote import unpromote_memory

NOW = 1_760_000_000.0


def test_gc_does_not_archive_again_what_a_person_took_back_until_it_is_used(tmp_path):
    store = InMemoryStore()
    m = store.save("a fading detail about fax machines", now=NOW - 90 * DAY)
    collect_garbage(store, [m.id], delete=False, now=NOW, grace_days=7)
    assert store.get(m.id).status is MemoryStatus.ARCHIVED
    unarchive(store, m.id, now=NOW + 10)
    again = collect_garbage(store, [m.id], delete=False, now=NOW + DAY, grace_days=7)
    assert again.archived == () and store.get(m.id).status is MemoryStatus.ACTIVE
    store.touch(m.id, now=NOW + 2 * DAY)  # used again: the undo no longer speaks for it
    later = collect_garbage(store, [m.id], delete=False, now=NOW + 3 * DAY, grace_days=7)
    assert later.archived == (m.id,)


def test_the_promoter_does_not_promote_again_what_a_person_unpromoted(tmp_path):
    store = InMemoryStore()
    m = store.save("we deploy with blue-green switches", now=NOW - DAY)
    store.put(replace(store.get(m.id), use_count=20, last_used=int(NOW - 60)))
    promoter = LTMPromoter(store, sink=None)
    assert [c.id for c, _ in promoter.candidates(NOW)] == [m.id]
    store.update(m.id, status=MemoryStatus.PROMOTED)
    (tmp_path / "vault").mkdir()
    unpromote_memory(store, tmp_path / "vault", m.id, now=NOW)
    assert promoter.candidates(NOW + 60) == []
    store.touch(m.id, now=NOW + 120)
    assert [c.id for c, _ in promoter.candidates(NOW + 180)] == [m.id]
