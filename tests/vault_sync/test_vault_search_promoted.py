"""search_unified after promotion (issue 34): a promoted memory and its note rank as the memory
did, so promoting one memory moves no other; a note whose memory is gone ranks by its words;
the entity pages promotion writes are not answers until a person writes on them."""

from __future__ import annotations

from pathlib import Path

from cortexgraph.storage import InMemoryStore
from cortexgraph.vault_sync import LTMIndex, ObsidianNoteSink, promote_memory, search_unified

NOW = 1_750_000_000.0
QUESTION = "What martial arts has John done, kickboxing or taekwondo?"
TURNS = (
    "John: I have done kickboxing and taekwondo for years now",
    "John: My taekwondo instructor says my kicks have improved a lot",
    "John: I started kickboxing classes at the gym downtown",
    "John: Thanks for letting me help with the move, it was fun",  # names John, nothing more
)


def _promoted_world(tmp_path: Path) -> tuple[InMemoryStore, list[str], str, Path]:
    store = InMemoryStore()
    ids = [store.save(t, now=NOW - 3600 * (i + 1)).id for i, t in enumerate(TURNS)]
    vault = tmp_path / "vault"
    note = promote_memory(
        store, ObsidianNoteSink(vault, "cortexgraph"), ids[3], now=NOW - 60, force=True
    )
    assert note.path is not None
    return store, ids, note.path, vault


def test_promoting_a_memory_moves_no_memory_in_the_unified_ranking(tmp_path: Path) -> None:
    unpromoted = InMemoryStore()
    turn_of = {unpromoted.save(t, now=NOW - 3600 * (i + 1)).id: i for i, t in enumerate(TURNS)}
    before = [turn_of[h.memory_id] for h in search_unified(unpromoted, None, QUESTION, now=NOW)]
    assert before[-1] == 3  # the turn that only names John ranks last

    store, ids, note_path, vault = _promoted_world(tmp_path)
    hits = search_unified(store, LTMIndex.open(vault), QUESTION, now=NOW, verbose=True)
    # The same memories in the same order: the one-note vault's best BM25 match (a note that
    # shares only "John" with the question) no longer lifts its memory to the top.
    assert [ids.index(h.memory_id) for h in hits if h.memory_id] == before
    pair = next(h for h in hits if h.memory_id == ids[3])
    assert pair.source == "both" and pair.note_path == note_path
    assert pair.score == pair.details["stm_score"]
    assert "ltm_score" in pair.details  # still said, for the verbose reader


def test_a_note_whose_memory_is_gone_ranks_by_its_own_words(tmp_path: Path) -> None:
    store, ids, note_path, vault = _promoted_world(tmp_path)
    store.delete(ids[3])
    hits = search_unified(store, LTMIndex.open(vault), QUESTION, now=NOW)
    note_hit = next(h for h in hits if h.note_path == note_path)
    assert note_hit.source == "ltm" and note_hit.score > 0


def _painter_world(tmp_path: Path) -> tuple[InMemoryStore, LTMIndex, Path]:
    store = InMemoryStore()
    store.save("Caroline: I painted a sunset over the lake last week", now=NOW - 7200)
    store.save("Caroline: my painting class starts again in May", now=NOW - 7200)
    thanks = store.save("Caroline: thanks, that means a lot", entities=["caroline"], now=NOW)
    vault = tmp_path / "vault"
    promote_memory(store, ObsidianNoteSink(vault, "cortexgraph"), thanks.id, now=NOW, force=True)
    page = vault / "cortexgraph" / "entities" / "caroline.md"
    assert page.is_file()
    return store, LTMIndex.open(vault), page


def test_an_entity_page_nobody_wrote_on_takes_no_place_in_the_results(tmp_path: Path) -> None:
    store, index, _ = _painter_world(tmp_path)
    hits = search_unified(store, index, "What did Caroline paint?", now=NOW)
    # It names Caroline and links one note: on the vault side's scale it matched as well as
    # any note could and came first, above the answer.
    assert all(h.note_path is None or "entities/" not in h.note_path for h in hits), hits
    assert hits[0].source == "stm" and "paint" in hits[0].preview


def test_an_entity_page_a_person_wrote_on_is_searched_as_their_note(tmp_path: Path) -> None:
    store, index, page = _painter_world(tmp_path)
    page.write_text(page.read_text() + "\nCaroline paints watercolours of lakes.\n")
    index.refresh()
    hits = search_unified(store, index, "watercolours", now=NOW)
    assert [h.note_path for h in hits if h.source == "ltm"] == ["cortexgraph/entities/caroline.md"]
