from __future__ import annotations

import json

import pytest

from cortexgraph.activation import ClassifierArtefactError, Intent, IntentClassifier
from cortexgraph.activation.intent import ARTEFACT, IntentModel, load_model
from cortexgraph.activation.intent_data import (
    data_fingerprint,
    is_held_out,
    load_eval_set,
    load_training_set,
    split,
)


def test_training_set_has_150_per_class_and_eval_set_is_disjoint():
    train = load_training_set()
    for intent in Intent:
        assert sum(m.intent == intent for m in train) >= 150, intent
    texts = {m.text.lower() for m in train}
    assert not [m.text for m in load_eval_set() if m.text.lower() in texts]
    assert len({m.text.lower() for m in train}) == len(train), "duplicate training messages"


def test_split_is_deterministic_and_order_independent():
    train = load_training_set()
    a = split(train)
    b = split(list(reversed(train)))
    assert {m.text for m in a[1]} == {m.text for m in b[1]}
    assert 0.15 < len(a[1]) / len(train) < 0.25
    assert is_held_out(a[1][0].text) and not is_held_out(a[0][0].text)


def test_shipped_artefact_matches_current_training_data():
    model = load_model()
    assert model.data_fingerprint == data_fingerprint(load_training_set()), (
        "training data changed: run python -m cortexgraph.activation.train_intent"
    )
    assert model.labels == tuple(Intent)
    assert ARTEFACT.stat().st_size < 400_000
    assert model.metrics["held_out_accuracy"] >= 0.85


def test_tfidf_fallback_meets_accuracy_on_held_out_split():
    held_out = split(load_training_set())[1]
    clf = IntentClassifier(embedder=None)
    preds = clf.predict_many([m.text for m in held_out])
    accuracy = sum(p.intent == m.intent for p, m in zip(preds, held_out, strict=True))
    assert accuracy / len(held_out) >= 0.8
    assert {p.method for p in preds} == {"tfidf"}


def test_prediction_probabilities_sum_to_one():
    p = IntentClassifier(embedder=None).predict("We decided to use Redis for caching.")
    assert p.intent is Intent.SAVE_DECISION
    assert abs(sum(p.probabilities.values()) - 1.0) < 1e-9
    data = json.loads(json.dumps(p.to_json()))  # what an MCP client receives
    assert data["intent"] == "SAVE_DECISION" and data["method"] == "tfidf"
    assert data["confidence"] == round(p.confidence, 4) == max(data["probabilities"].values())


def test_malformed_artefact_raises_typed_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": 1, "labels": ["NOPE"]}')
    with pytest.raises(ClassifierArtefactError):
        load_model(bad)
    data = load_model().to_json()
    data["vocabulary"] = data["vocabulary"][:10]
    with pytest.raises(ClassifierArtefactError):
        IntentModel.from_json(data)


@pytest.mark.slow
def test_embedding_head_meets_target_on_held_out_split(minilm):
    held_out = split(load_training_set())[1]
    preds = IntentClassifier(embedder=minilm).predict_many([m.text for m in held_out])
    accuracy = sum(p.intent == m.intent for p, m in zip(preds, held_out, strict=True))
    assert accuracy / len(held_out) >= 0.85
    assert {p.method for p in preds} == {"embedding+tfidf"}


@pytest.mark.slow
def test_retraining_reproduces_the_shipped_artefact():
    """The artefact is trained on torch fp32 vectors (train_intent: the full extra); the ONNX
    graph the server embeds with agrees with them to a cosine of 0.9994, not bit for bit."""
    from cortexgraph.activation.train_intent import compare, train
    from cortexgraph.storage.embeddings import SentenceTransformerEmbedder, torch_model_path

    if torch_model_path() is None:
        pytest.skip("training needs the full extra (torch, sentence-transformers)")
    assert compare(train(SentenceTransformerEmbedder()), load_model()) == []
