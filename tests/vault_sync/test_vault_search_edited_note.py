"""search_unified over a promoted note a person edited in Obsidian: the words they added find it
(the note ranks by its own words too, and shows what it says now), while a note nobody touched
still ranks as its memory (test_vault_search_promoted.py, conv-41)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cortexgraph.agents.ltm_promoter import LTMPromoter, PromoterConfig
from cortexgraph.storage import open_store
from cortexgraph.storage.decay import DAY
from cortexgraph.storage.protocol import MemoryStore
from cortexgraph.vault_sync import LTMIndex, ObsidianNoteSink, search_unified

NOW = 1_750_000_000.0
DECISION = "The web app signs users in with OAuth2 and PKCE; sessions last 12 hours."
ADDED = "Update after the audit: refresh tokens now rotate every Tuesday."


def _promoted(tmp_path: Path) -> tuple[MemoryStore, str, Path]:
    """A store whose decision the LTMPromoter wrote into the vault with everything a note of
    ours holds: a title heading (the title is not the start of the text), a Context section,
    and a Related list linking a related memory's note and the entity pages."""
    store = open_store(tmp_path / "store")
    decision = store.save(
        DECISION,
        entities=["OAuth2", "PKCE"],
        context="Settled in the security review with the platform team.",
        extra={"title": "Login decision"},
        now=NOW - 20 * DAY,
    )
    sessions = store.save("Session cookies are marked SameSite strict.", now=NOW - 20 * DAY)
    store.add_relation(decision.id, sessions.id, "related", now=NOW - 20 * DAY)
    store.save("Team lunch is on Fridays at the noodle place.", now=NOW - DAY)
    config = PromoterConfig(decay=store.config.decay, force_ids=(decision.id, sessions.id))
    LTMPromoter(store, ObsidianNoteSink(tmp_path / "vault"), config).run(now=NOW - 19 * DAY)
    note_path = store.get(decision.id).promoted_to
    assert note_path is not None
    note = tmp_path / "vault" / note_path
    text = note.read_text("utf-8")
    assert "# Login decision" in text and "## Context" in text and "[[" in text  # ours, all
    return store, decision.id, note


def _search(store: MemoryStore, index: LTMIndex, query: str) -> list:
    return search_unified(store, index, query, now=NOW, use_embeddings=False, verbose=True)


def test_words_a_person_added_to_a_promoted_note_find_it(tmp_path: Path) -> None:
    store, decision, note = _promoted(tmp_path)
    index = LTMIndex.open(tmp_path / "vault")
    assert not [h for h in _search(store, index, "refresh tokens rotate") if h.note_path]

    note.write_text(note.read_text("utf-8") + f"\n{ADDED}\n", "utf-8")  # edited in Obsidian
    index.refresh()
    hits = _search(store, index, "refresh tokens rotate")
    rel = note.relative_to(tmp_path / "vault").as_posix()
    # Its memory does not hold these words: the note used to be dropped with it.
    assert hits and hits[0].note_path == rel and hits[0].memory_id == decision
    assert "Update after the audit: refresh tokens" in hits[0].preview  # what the note says now
    assert hits[0].score == pytest.approx(0.7 * hits[0].details["ltm_score"])

    # Asked for the memory's own words, the pair shows the note's current text too.
    [pair] = [h for h in _search(store, index, "OAuth2 sessions") if h.memory_id == decision]
    assert pair.source == "both" and "refresh tokens" in pair.preview


@pytest.mark.parametrize("edit", ["none", "cut a sentence"])
def test_a_promoted_note_that_adds_nothing_ranks_as_its_memory(tmp_path: Path, edit: str) -> None:
    store, decision, note = _promoted(tmp_path)
    if edit == "cut a sentence":  # a person may shorten a note: it says nothing new
        note.write_text(note.read_text("utf-8").replace(" with the platform team", ""), "utf-8")
    index = LTMIndex.open(tmp_path / "vault")
    # The title heading, the context, the related and entity links are the promoter's words,
    # not a person's: the note (the vault's best match for them) does not rank by them.
    for query in ("login decision security review", "OAuth2 PKCE"):
        [pair] = [h for h in _search(store, index, query) if h.memory_id == decision]
        assert pair.score == pair.details["stm_score"]
        # Matched through STM: the memory's own words (the note's would add its context).
        assert pair.preview == DECISION


def test_a_notes_preview_starts_with_its_words_not_its_title_again(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Deploy policy.md").write_text(
        "# Deploy policy\n\nWe deploy on Fridays only after the release freeze lifts.\n",
        encoding="utf-8",
    )
    store = open_store(tmp_path / "store")
    [hit] = search_unified(store, LTMIndex.open(vault), "release freeze fridays", now=NOW)
    assert hit.title == "Deploy policy"
    assert hit.preview.startswith("We deploy on Fridays")
