"""The activation seed's settings and phrasings, through the MCP tools (the SDK's in-process
client): a dedup threshold above 0.9, TAG_SUGGESTION_TOP_K, CORTEXGRAPH_SPACY_MODEL=
en_core_web_sm, CORTEXGRAPH_INTENT_MODEL_PATH, "and for the cache?" after a recall question, and
a question that is not a save."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp_server"))
from mcp_helpers import make_settings, payload

from cortexgraph.activation.intent import ARTEFACT
from cortexgraph.mcp_server.app import build_server
from cortexgraph.settings import Settings

FACT = "Remember this: the orders database runs PostgreSQL 16 on the db-2 host."


def _calls(settings, *calls):
    async def go():
        async with Client(build_server(settings)) as client:
            return [payload(await client.call_tool(tool, args)) for tool, args in calls]

    return anyio.run(go)


def test_a_dedup_threshold_above_0_9_still_finds_the_duplicate(tmp_path):
    settings = make_settings(tmp_path, dedup_similarity_threshold=0.95)
    saved, out = _calls(
        settings,
        ("save_memory", {"content": FACT}),
        ("analyze_message", {"message": FACT}),
    )
    assert "dedup" not in out["errors"], out["errors"]
    assert out["action_recommendation"] == "DUPLICATE_DETECTED"
    assert out["deduplication"]["similar"][0]["memory_id"] == saved["memory_id"]


def test_tag_suggestion_top_k_caps_analyze_message_tags(tmp_path):
    message = (
        "Remember: Alice, Bob, Carol and Dave use PostgreSQL, Redis, Kafka and Docker "
        "for the Atlas project in Berlin."
    )
    [wide] = _calls(make_settings(tmp_path), ("analyze_message", {"message": message}))
    [one] = _calls(
        make_settings(tmp_path, tag_suggestion_top_k=1), ("analyze_message", {"message": message})
    )
    assert len(wide["suggested_tags"]) > 1
    assert len(one["suggested_tags"]) == 1


def test_the_seeds_spacy_model_name_loads_the_shipped_model(tmp_path):
    settings = make_settings(tmp_path, spacy_model="en_core_web_sm")
    [out] = _calls(
        settings, ("analyze_message", {"message": "Remember: Oliver moved to Lisbon in March."})
    )
    assert out["methods"]["entities"] == "spacy+rules", out["methods"]


def test_intent_model_path_is_honoured_or_refused_clearly(tmp_path):
    copy = tmp_path / "my-intents.json"
    copy.write_bytes(ARTEFACT.read_bytes())
    [out] = _calls(
        make_settings(tmp_path, intent_model_path=copy),
        ("analyze_message", {"message": "I prefer dark mode in every editor"}),
    )
    assert out["intent"] == "SAVE_PREFERENCE" and not out["errors"]
    folder = tmp_path / "models" / "intent_classifier"  # 1.x's transformer model folder
    folder.mkdir(parents=True)
    with pytest.raises(ValueError, match=r"folder.*train_intent"):
        Settings(storage_path=tmp_path / "stm", intent_model_path=folder)


def test_and_for_the_cache_after_a_recall_question_searches(tmp_path):
    first, follow = _calls(
        make_settings(tmp_path),
        (
            "analyze_for_recall",
            {"message": "What did we decide about the database?", "session_id": "s"},
        ),
        ("analyze_for_recall", {"message": "and for the cache?", "session_id": "s"}),
    )
    assert first["should_search"] is True
    assert follow["should_search"] is True, follow
    assert "cache" in follow["suggested_query"].lower()


def test_a_question_about_a_choice_is_not_a_save(tmp_path):
    [out] = _calls(
        make_settings(tmp_path, enable_embeddings=True),  # the classifier on MiniLM, as shipped
        ("analyze_message", {"message": "Should we use Postgres or MySQL for billing?"}),
    )
    assert out["action_recommendation"] in ("NONE", "SHOULD_SEARCH"), out
    assert out["should_save"] is False


def test_result_fields_read_as_the_seed_names_them(tmp_path):
    """``reasoning`` is one string (the activation spec and the 1.x API), its steps beside it;
    a duplicate names its ``similar_memory`` and ``similarity_score``."""
    saved, dup, plain, recall = _calls(
        make_settings(tmp_path),
        ("save_memory", {"content": FACT}),
        ("analyze_message", {"message": FACT}),
        ("analyze_message", {"message": "ok", "session_id": "another"}),
        ("analyze_for_recall", {"message": "What did I say about TypeScript?"}),
    )
    assert isinstance(dup["reasoning"], str) and dup["reasoning_steps"]
    assert dup["reasoning"] == "; ".join(dup["reasoning_steps"])
    assert plain["reasoning"] == "; ".join(plain["reasoning_steps"])  # "intent OTHER ..."
    assert isinstance(recall["reasoning"], str) and "explicit recall" in recall["reasoning"]
    d = dup["deduplication"]
    assert d["is_duplicate"] and d["recommendation"] == "MERGE"
    assert d["similar_memory"]["id"] == saved["memory_id"]
    assert d["similar_memory"]["content"] == FACT and d["similarity_score"] == 1.0
