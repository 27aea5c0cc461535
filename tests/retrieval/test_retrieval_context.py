"""memory_retrieve: budgets hold, tiers de-duplicate, core comes first, filters filter."""

from __future__ import annotations

import pytest
from retrieval_helpers import DAY, NOW, write_note

from cortexgraph.retrieval import RetrievalConfig, RetrievalWeights, memory_retrieve, set_core
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.vault_sync.ltm_index import LTMIndex

TOPICS = ["billing", "postgres", "kubernetes", "hiring", "design review", "on-call"]


def fill(store, n=60):
    ids = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        ids.append(
            store.save(
                f"Note {i} about {topic}: the team agreed detail number {i} on {topic} "
                f"after a long discussion with several people involved.",
                tags=[topic.replace(" ", "-")],
                now=NOW - (i + 1) * DAY,
            ).id
        )
    return ids


@pytest.mark.parametrize("budget", [20, 60, 150, 500, 3000])
def test_budget_is_never_exceeded_and_count_is_exact(store, counter, budget):
    fill(store)
    ctx = memory_retrieve(store, "billing postgres", budget, now=NOW)
    assert ctx.tokens_used == counter.count(ctx.text) <= budget
    assert ctx.tokenizer == "minilm-wordpiece"
    if budget >= 150:
        assert ctx.items and ctx.text.startswith("## memories")
    if budget == 3000:  # everything relevant fits: nothing relevant is left out
        assert {i.memory_id for i in ctx.items} >= {
            r.memory.id for r in store.search("billing postgres", top_k=20, now=NOW)
        }


def test_more_budget_never_returns_less(store):
    fill(store)
    sizes = [len(memory_retrieve(store, "billing", b, now=NOW).items) for b in (50, 200, 800)]
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0]


def test_core_comes_first_within_its_share(store, counter):
    fill(store)
    core = store.save(
        "The user writes British English and wants short answers", now=NOW - 400 * DAY
    )
    set_core(store, core.id)
    ctx = memory_retrieve(store, "kubernetes", 400, now=NOW)
    assert ctx.text.startswith("## core\n- [m:" + core.id[:8])
    assert ctx.items[0].memory_id == core.id and ctx.items[0].tier == "core"
    # core items beyond their share are dropped, not allowed to eat the whole budget
    for i in range(30):
        set_core(
            store,
            store.save(f"Core rule {i}: always mention rule {i} when relevant", now=NOW - i).id,
        )
    ctx = memory_retrieve(
        store, "kubernetes", 400, config=RetrievalConfig(core_share=0.25), now=NOW
    )
    core_tokens = sum(i.tokens for i in ctx.items if i.tier == "core")
    assert 0 < core_tokens <= 100
    assert any(i.tier == "stm" for i in ctx.items)
    only_core = memory_retrieve(store, "x", 400, {"memory_types": ["core"]}, now=NOW)
    assert {i.tier for i in only_core.items} == {"core"}


def test_promoted_memory_and_its_note_are_one_item_and_the_note_wins(store, vault):
    m = store.save("Atlas billing cutover happens in March", entities=["atlas"], now=NOW - DAY)
    write_note(
        vault,
        "cortexgraph/atlas-cutover.md",
        "# Atlas cutover\n\nAtlas billing cutover happens in March.\n",
        id=m.id,
    )
    store.update(m.id, status="promoted", promoted_to="cortexgraph/atlas-cutover.md")
    index = LTMIndex.open(vault)
    ctx = memory_retrieve(store, "atlas billing cutover", 1000, ltm_index=index, now=NOW)
    hits = [i for i in ctx.items if i.memory_id == m.id]
    assert len(hits) == 1 and hits[0].tier == "ltm"
    assert hits[0].note_path == "cortexgraph/atlas-cutover.md"
    assert ctx.text.count("cutover happens in March") == 1
    # the vault's core note is always there and first, then the notes, then the graph
    assert ctx.text.startswith("## core\n- [n:Rules.md] Rules: Always answer in British English.")
    assert ctx.text.index("## notes") < ctx.text.index("## graph")  # both present: .index raises


def test_graph_facts_bring_related_memories_the_query_does_not_match(store):
    a = store.save("Alice decided to drop the legacy cron jobs", entities=["alice"], now=NOW)
    b = store.save("Nightly exports broke on Tuesday", entities=["exports"], now=NOW - DAY)
    store.add_relation(a.id, b.id, "causes", now=NOW)
    ctx = memory_retrieve(store, "what did alice decide", 500, now=NOW)
    assert "## graph" in ctx.text
    assert f"m:{a.id[:8]} causes m:{b.id[:8]}" in ctx.text
    assert "Nightly exports broke" in ctx.text  # labelled, since the memory itself is not shown
    no_graph = memory_retrieve(
        store, "what did alice decide", 500, {"memory_types": ["stm"]}, now=NOW
    )
    assert "## graph" not in no_graph.text


def test_filters_after_before_and_min_confidence(store):
    old = store.save("Postgres tuning notes from last year", now=NOW - 300 * DAY)
    new = store.save("Postgres tuning notes from this week", now=NOW - DAY)
    after = memory_retrieve(store, "postgres tuning", 500, {"after": "2023-11-01"}, now=NOW)
    assert after.memory_ids == [new.id]
    before = memory_retrieve(store, "postgres tuning", 500, {"before": NOW - 100 * DAY}, now=NOW)
    assert before.memory_ids == [old.id]
    strict = memory_retrieve(store, "postgres tuning", 500, {"min_confidence": 0.99}, now=NOW)
    assert strict.items == ()
    for bad in (
        {"after": "last tuesday"},
        {"memory_types": ["dreams"]},
        {"min_confidence": 2},
        {"colour": "red"},
    ):
        with pytest.raises(InvalidInputError):
            memory_retrieve(store, "postgres", 500, bad, now=NOW)


def test_weights_change_the_order(store):
    fresh = store.save("Kubernetes upgrade plan", now=NOW - 3600)
    relevant = store.save(
        "Kubernetes upgrade plan: cordon, drain, upgrade kubernetes nodes", now=NOW - 60 * DAY
    )
    recency = RetrievalConfig(
        weights=RetrievalWeights(semantic=0.0, recency=1.0, tier=0, frequency=0)
    )
    semantic = RetrievalConfig(
        weights=RetrievalWeights(semantic=1.0, recency=0.0, tier=0, frequency=0)
    )
    q = "kubernetes upgrade cordon drain"
    assert memory_retrieve(store, q, 500, config=recency, now=NOW).memory_ids[0] == fresh.id
    assert memory_retrieve(store, q, 500, config=semantic, now=NOW).memory_ids[0] == relevant.id
    with pytest.raises(InvalidInputError):
        RetrievalWeights(semantic=-1)
    with pytest.raises(InvalidInputError):
        RetrievalWeights(0, 0, 0, 0)


def test_long_items_are_cut_to_fit(store, counter):
    store.save("Incident report: " + "the database failed over and recovered. " * 200, now=NOW)
    ctx = memory_retrieve(store, "incident database", 120, now=NOW)
    assert len(ctx.items) == 1 and ctx.items[0].truncated
    assert ctx.tokens_used <= 120 and ctx.text.endswith("…")


def test_bad_arguments_and_empty_store(store):
    assert memory_retrieve(store, "anything", 100, now=NOW).text == ""
    for query, budget in (("", 100), ("x", 5), ("x", True), ("x", 10**9)):
        with pytest.raises(InvalidInputError):
            memory_retrieve(store, query, budget, now=NOW)


def test_equal_core_memories_saved_in_one_second_pack_the_later_save_first():
    # created_at is whole seconds: a burst of saves shares one, and equal scores went to the
    # random memory id, which reordered the packed context from run to run.
    for _ in range(20):
        store = InMemoryStore()
        saved = [store.save(f"Standing rule {w}: keep it.", now=NOW - DAY) for w in FRUIT]
        for m in saved:
            set_core(store, m.id)
        ctx = memory_retrieve(store, "rule", 800, {"memory_types": ["core"]}, now=NOW)
        assert [i.memory_id for i in ctx.items] == [m.id for m in reversed(saved)]


def test_equal_memories_saved_in_one_second_pack_the_later_save_first():
    for _ in range(20):
        store = InMemoryStore()
        saved = [store.save(f"Deploy window note {w}", now=NOW - DAY) for w in FRUIT]
        ctx = memory_retrieve(store, "deploy window", 800, {"memory_types": ["stm"]}, now=NOW)
        assert [i.memory_id for i in ctx.items] == [m.id for m in reversed(saved)]


FRUIT = ["kiwi", "mango", "pear", "plum", "fig"]


def test_a_notes_related_links_spend_no_budget_and_a_persons_words_stay(store, tmp_path):
    """A promoted note ends in the managed Related list (links for Obsidian's graph): context
    shows what the note says, not the names of the notes it links to."""
    from cortexgraph.agents.ltm_promoter import LTMPromoter, PromoterConfig
    from cortexgraph.vault_sync.note_sink import ObsidianNoteSink

    hub = store.save(
        "We decided the billing service stores money as integer cents in PostgreSQL.",
        entities=["Billing", "PostgreSQL"],
        now=NOW - DAY,
    )
    facts = [
        store.save(f"Billing migration {i} ran on PostgreSQL without downtime.", now=NOW - DAY)
        for i in range(4)
    ]
    for fact in facts:
        store.add_relation(hub.id, fact.id, "related")
    promoter = LTMPromoter(
        store,
        ObsidianNoteSink(tmp_path / "vault"),
        PromoterConfig(force_ids=(hub.id, *(f.id for f in facts))),
    )
    promoter.run(now=NOW)
    note = tmp_path / "vault" / store.get(hub.id).promoted_to
    assert "(entity)" in note.read_text("utf-8")  # the list is there to be left out
    with note.open("a", encoding="utf-8") as f:
        f.write("\nThe finance team signed this off.\n")  # a person's line below the list
    ctx = memory_retrieve(
        store,
        "how does billing store money",
        400,
        ltm_index=LTMIndex.open(tmp_path / "vault"),
        now=NOW,
    )
    [item] = [i for i in ctx.items if i.memory_id == hub.id]
    assert item.text.endswith(
        "We decided the billing service stores money as integer cents in PostgreSQL. "
        "The finance team signed this off."
    )
    assert "(entity)" not in ctx.text and "(related)" not in ctx.text
    assert "Related" not in ctx.text
