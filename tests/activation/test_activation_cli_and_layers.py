from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cortexgraph.cli.main import app

ROOT = Path(__file__).resolve().parents[2]


def test_cli_analyze_json_with_preprocessing_disabled(monkeypatch):
    monkeypatch.setenv("CORTEXGRAPH_ENABLE_PREPROCESSING", "false")
    result = CliRunner().invoke(app, ["analyze", "Remember this: x", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["action_recommendation"] == "NONE"
    assert data["reasoning"] == "preprocessing is disabled"  # one string, as the spec
    assert data["reasoning_steps"] == ["preprocessing is disabled"]


@pytest.mark.slow
def test_cli_analyze_with_real_models(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["analyze", "Remember this: we chose Typer for the CLI", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["action_recommendation"] == "MUST_SAVE"
    assert data["intent"] == data["intent_details"]["intent"]  # a plain string, as specified
    assert data["intent_details"]["method"] == "embedding+tfidf"
    assert data["methods"]["tags"] == "keybert" and "typer" in data["suggested_tags"]
    recall = runner.invoke(
        app, ["analyze", "--recall", "--json", "what did we decide about the CLI framework?"]
    )
    assert json.loads(recall.stdout)["suggested_query"] == "CLI framework"
    table = runner.invoke(app, ["analyze", "Hi there!"])
    assert table.exit_code == 0 and "action_recommendation" in table.output


@pytest.mark.slow
def test_real_models_end_to_end(minilm, nlp):
    from cortexgraph.activation import Recommendation, analyze_message
    from cortexgraph.storage.memory_store import InMemoryStore

    store = InMemoryStore()
    store.save("Our staging database runs PostgreSQL 15 on Hetzner.")
    dup = analyze_message(
        "Remember this: the staging database runs on PostgreSQL 15 at Hetzner.", store=store
    )
    assert dup.deduplication.method == "embedding"
    assert dup.deduplication.best.similarity > 0.85
    assert dup.action_recommendation is Recommendation.DUPLICATE_DETECTED
    fresh = analyze_message("I prefer window seats on long-haul flights with Lufthansa.")
    assert fresh.action_recommendation is Recommendation.SHOULD_SAVE
    assert fresh.intent.intent.value == "SAVE_PREFERENCE"
    assert "lufthansa" in fresh.suggested_entities
    assert fresh.methods == {
        "intent": "embedding+tfidf",
        "entities": "spacy+rules",
        "tags": "keybert",
    }
