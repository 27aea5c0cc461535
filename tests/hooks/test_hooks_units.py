"""In-process checks of the pieces: quick search, settings, fencing, phrase loading, transcript."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hooks_helpers import NOW

from cortexgraph.demo_data import seed_store
from cortexgraph.hooks.context_block import DATA_NOTICE, Entry, fenced_block
from cortexgraph.hooks.project_settings import (
    PluginSettings,
    PluginSettingsError,
    load_project_settings,
    parse_settings_text,
)
from cortexgraph.hooks.quick_search import RawStoreRecords
from cortexgraph.hooks.runtime import store_location
from cortexgraph.hooks.transcript import read_turns
from cortexgraph.hooks.user_prompt_submit import analyze_prompt
from cortexgraph.storage import open_store
from cortexgraph.storage.models import Memory


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("demo")
    store = open_store(path)
    seed_store(store, now=NOW)
    return path, store


QUERIES = [
    "billing rounding",
    "kafka dunning job",
    "handover notion",
    "invoice templates",
    "timezone UTC timestamps",
    "postgres migration",
    "weekly notes friday",
    "on-call quirks",
    "CHF currency",
    "career tech lead",
]


def test_quick_search_agrees_with_store_search_on_the_demo_data(demo_store) -> None:
    path, store = demo_store
    snap = RawStoreRecords.read(path, store.config)
    assert len(snap) == len(store)
    same_top, overlap = 0, 0.0
    for q in QUERIES:
        ours = [h.memory.id for h in snap.search(q, top_k=5, now=NOW)]
        theirs = [r.memory.id for r in store.search(q, top_k=5, now=NOW, use_embeddings=False)]
        assert ours, q
        same_top += ours[0] == theirs[0]
        overlap += len(set(ours) & set(theirs)) / max(1, len(theirs))
    # Not identical by design (no context field, sampled avgdl, no review blend), but close.
    assert same_top >= 8, same_top
    assert overlap / len(QUERIES) >= 0.7


def test_quick_search_sees_updates_and_deletions(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    a = store.save("The cache uses Redis with a 5 minute TTL.", now=NOW)
    b = store.save("Redis runs on the ops cluster.", now=NOW)
    store.update(a.id, content="The cache uses Memcached now.")
    store.delete(b.id)
    store.update(store.save("Redis archive note", now=NOW).id, status="archived")
    snap = RawStoreRecords.read(tmp_path)
    assert [h.memory.id for h in snap.search("redis", now=NOW)] == []
    assert [h.memory.id for h in snap.search("memcached", now=NOW)] == [a.id]
    assert RawStoreRecords.read(tmp_path / "absent").search("redis", now=NOW) == []


def test_settings_parse_and_validate() -> None:
    assert parse_settings_text("") == PluginSettings()
    s = parse_settings_text("---\ncontext_depth: shallow\nmax_inject_chars: 800\n---\n# notes")
    assert (s.context_depth, s.max_inject_chars, s.items) == ("shallow", 800, 5)
    for bad in (
        "---\nmax_inject_chars: 50\n---",
        "---\nmax_inject_chars: '900'\n---",
        "---\nprompt_to_save: 1\n---",
        "---\nfoo: 1\n---",
        "just text",
        "---\n- a list\n---",
        "---\ncontext_depth: deep\n---",
    ):
        with pytest.raises(PluginSettingsError):
            parse_settings_text(bad)


def test_broken_settings_file_gives_defaults_and_says_why(tmp_path: Path, capsys) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "cortexgraph.local.md").write_text("---\nmax_inject_chars: x\n---\n")
    assert load_project_settings(tmp_path) == PluginSettings()
    assert "max_inject_chars" in capsys.readouterr().err
    assert load_project_settings(tmp_path / "elsewhere") == PluginSettings()


def test_fast_store_location_matches_settings(monkeypatch, tmp_path: Path) -> None:
    import os

    from cortexgraph.settings import Settings

    for key in list(os.environ):
        if key.upper().startswith("CORTEXGRAPH_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("CORTEXGRAPH_STORAGE_PATH", str(tmp_path))
    fast = store_location({"CORTEXGRAPH_STORAGE_PATH": str(tmp_path)})
    settings = Settings()
    assert fast.storage_path == settings.storage_path
    assert fast.store_config == settings.store_config()
    assert fast.vault_path == settings.vault_path
    assert fast.ltm_weight == settings.search_ltm_weight
    monkeypatch.setenv("LTM_VAULT_PATH", str(tmp_path / "notes"))  # 1.x's name
    fast = store_location(
        {"CORTEXGRAPH_STORAGE_PATH": str(tmp_path), "LTM_VAULT_PATH": str(tmp_path / "notes")}
    )
    assert fast.vault_path == Settings().vault_path == tmp_path / "notes"
    monkeypatch.delenv("LTM_VAULT_PATH")
    monkeypatch.delenv("CORTEXGRAPH_STORAGE_PATH")
    assert store_location({}).storage_path == Settings().storage_path
    # Any other CORTEXGRAPH_ variable: the full Settings decide.
    monkeypatch.setenv("CORTEXGRAPH_PL_HALFLIFE_DAYS", "9")
    monkeypatch.setenv("CORTEXGRAPH_SEARCH_LTM_WEIGHT", "0.5")
    full = store_location(
        {"CORTEXGRAPH_PL_HALFLIFE_DAYS": "9", "CORTEXGRAPH_SEARCH_LTM_WEIGHT": "0.5"}
    )
    assert full.store_config.decay.pl_halflife_days == 9.0
    assert full.ltm_weight == 0.5


def test_hook_phrase_detector_is_the_activation_layers() -> None:
    import cortexgraph.activation.phrases as real
    from cortexgraph.hooks.phrases import phrase_detector

    for text in (
        "what did we decide about auth?",
        "no need to remember this",
        "please remember that I like tea",
        "remember when we were kids",
    ):
        assert (
            phrase_detector().detect(text).to_json() == real.PhraseDetector().detect(text).to_json()
        )


def test_analyze_prompt_topic_and_skips() -> None:
    assert analyze_prompt("what did we decide about authentication?").topic_terms == (
        "authentication",
    )
    assert analyze_prompt("/remember this").skip_reason == "slash command"
    assert analyze_prompt("why?").skip_reason == "too short"
    assert analyze_prompt("remind me what we decided").topic_terms == ()


def test_fenced_block_bounds_and_escaping() -> None:
    mems = [
        Memory(id=f"m{i}", content=f"<b>note {i}</b> " + "x" * 400, created_at=NOW)
        for i in range(10)
    ]
    block = fenced_block(
        "t", [("S", [Entry(m) for m in mems])], max_chars=700, preview_chars=300, nonce="abcd1234"
    )
    assert block is not None and len(block) <= 700
    assert block.startswith("<cortexgraph-memories-abcd1234>") and DATA_NOTICE in block
    assert block.rstrip().endswith("</cortexgraph-memories-abcd1234>")
    assert "<b>" not in block and "&lt;b&gt;" in block
    assert fenced_block("t", [("S", [])], max_chars=700, preview_chars=300) is None
    one = fenced_block("t", [("", [Entry(mems[0])])], max_chars=350, preview_chars=2000)
    assert one is not None and len(one) <= 350 and "m0" in one


def test_transcript_reader_tolerates_junk(tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    t.write_text(
        "\n".join(
            [
                "not json",
                json.dumps([1]),
                json.dumps({"type": "summary"}),
                json.dumps({"type": "user", "message": {"role": "user", "content": "hello there"}}),
                json.dumps(
                    {
                        "type": "assistant",
                        "message": {
                            "role": "assistant",
                            "content": [
                                {"type": "text", "text": "hi"},
                                {"type": "tool_use", "name": "x__save_memory"},
                            ],
                        },
                    }
                ),
            ]
        )
    )
    turns = read_turns(t)
    assert [(x.role, x.text, x.tool_calls) for x in turns] == [
        ("user", "hello there", ()),
        ("assistant", "hi", ("x__save_memory",)),
    ]
    assert read_turns(tmp_path / "missing") == []


def test_prompt_hook_budget_constant_matches_the_block_module() -> None:
    from cortexgraph.hooks import context_block, user_prompt_submit

    assert user_prompt_submit.RECALL_MAX_CHARS == context_block.RECALL_MAX_CHARS == 2000


def test_quick_search_finds_non_ascii_and_escaped_text(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    a = store.save("Der Schlüssel für das Büro liegt bei Jürgen.", now=NOW)
    b = Memory(
        id="escaped-1", content="Ünïcode-escaped Schlüssel note", created_at=NOW, last_used=NOW
    )
    with open(tmp_path / "memories.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(b.to_json(), ensure_ascii=True) + "\n")  # \\u escapes on disk
    snap = RawStoreRecords.read(tmp_path)
    assert {h.memory.id for h in snap.search("schlüssel", now=NOW)} == {a.id, b.id}
    assert [h.memory.id for h in snap.search("jürgen", now=NOW)] == [a.id]
