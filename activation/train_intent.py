"""Retrain the shipped intent classifier and print per-class precision / recall.

    python -m cortexgraph.activation.train_intent            # rebuild data/intent_classifier.json
    python -m cortexgraph.activation.train_intent --check    # retrain in memory, compare with the shipped file

Deterministic: a fixed hash split, sorted vocabulary, lbfgs logistic regression (no random
state involved) and weights rounded to 6 significant digits, so a retrain on the same data and
model reproduces the artefact (``--check`` compares within 1e-3 and demands identical
predictions on the evaluation set).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cortexgraph.activation.intent import (
    ARTEFACT,
    IntentClassifier,
    IntentModel,
    LinearHead,
    TfidfFeaturizer,
)
from cortexgraph.activation.intent_data import (
    Intent,
    LabelledMessage,
    data_fingerprint,
    load_eval_set,
    load_training_set,
    split,
)
from cortexgraph.storage.embeddings import DEFAULT_MODEL, Embedder, SentenceTransformerEmbedder

REGULARISATION_C = 10.0


def _fit_head(x: np.ndarray, y: np.ndarray) -> LinearHead:
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(C=REGULARISATION_C, max_iter=5000, solver="lbfgs", tol=1e-6)
    clf.fit(x, y)
    return LinearHead(clf.coef_.astype(np.float64), clf.intercept_.astype(np.float64))


def train(embedder: Embedder, messages: Sequence[LabelledMessage] | None = None) -> IntentModel:
    """Fit both heads on the training split; metrics cover the held-out split and eval set."""
    messages = list(messages if messages is not None else load_training_set())
    _refuse_eval_overlap(messages)
    train_set, held_out = split(messages)
    labels = tuple(Intent)
    y = np.array([labels.index(m.intent) for m in train_set])
    texts = [m.text for m in train_set]
    featurizer = TfidfFeaturizer.fit(texts)
    tfidf = featurizer.transform(texts)
    vectors = embedder.embed(texts).astype(np.float64)
    draft = IntentModel(
        labels=labels,
        featurizer=featurizer,
        combined=_fit_head(np.hstack([vectors, tfidf]), y),
        tfidf=_fit_head(tfidf, y),
        embedding_model=embedder.name,
        data_fingerprint=data_fingerprint(messages),
        metrics={},
    )
    # Round-trip through JSON so the metrics describe exactly the weights that ship.
    model = IntentModel.from_json(draft.to_json())
    metrics = {
        "train_examples": len(train_set),
        "held_out_examples": len(held_out),
        "held_out_accuracy": _accuracy(model, embedder, held_out),
        "held_out_accuracy_tfidf_only": _accuracy(model, None, held_out),
        "eval_accuracy": _accuracy(model, embedder, load_eval_set()),
    }
    return IntentModel.from_json({**model.to_json(), "metrics": metrics})


def _refuse_eval_overlap(messages: Sequence[LabelledMessage]) -> None:
    eval_texts = {m.text.strip().lower() for m in load_eval_set()}
    leaked = [m.text for m in messages if m.text.strip().lower() in eval_texts]
    if leaked:
        raise SystemExit(f"evaluation messages found in the training data: {leaked[:5]}")


def _predict(model: IntentModel, embedder: Embedder | None, msgs: Sequence[LabelledMessage]):
    return IntentClassifier(model, embedder).predict_many([m.text for m in msgs])


def _accuracy(model: IntentModel, embedder: Embedder | None, msgs: Sequence[LabelledMessage]):
    preds = _predict(model, embedder, msgs)
    return round(sum(p.intent == m.intent for p, m in zip(preds, msgs, strict=True)) / len(msgs), 4)


def per_class_report(
    model: IntentModel, embedder: Embedder | None, msgs: Sequence[LabelledMessage]
) -> list[tuple[str, float, float, int]]:
    """(label, precision, recall, support) per intent."""
    preds = [p.intent for p in _predict(model, embedder, msgs)]
    rows = []
    for label in model.labels:
        tp = sum(p == label and m.intent == label for p, m in zip(preds, msgs, strict=True))
        predicted = sum(p == label for p in preds)
        support = sum(m.intent == label for m in msgs)
        rows.append(
            (
                label.value,
                tp / predicted if predicted else 0.0,
                tp / support if support else 0.0,
                support,
            )
        )
    return rows


def _print_report(title: str, rows: list[tuple[str, float, float, int]], accuracy: float) -> None:
    print(f"\n{title}  (accuracy {accuracy:.3f})")
    print(f"{'intent':<17}{'precision':>10}{'recall':>9}{'n':>5}")
    for label, p, r, n in rows:
        print(f"{label:<17}{p:>10.3f}{r:>9.3f}{n:>5}")


def compare(a: IntentModel, b: IntentModel, atol: float = 1e-3) -> list[str]:
    """Differences between two models that matter; empty when they are the same classifier."""
    problems = []
    if a.labels != b.labels:
        problems.append("labels differ")
    if a.featurizer.vocabulary != b.featurizer.vocabulary:
        problems.append("vocabulary differs")
    if a.data_fingerprint != b.data_fingerprint:
        problems.append("trained on different data")
    for name in ("combined", "tfidf"):
        ha, hb = getattr(a, name), getattr(b, name)
        if ha.coef.shape != hb.coef.shape or not np.allclose(ha.coef, hb.coef, atol=atol):
            problems.append(f"{name} weights differ")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped file")
    parser.add_argument("--output", type=Path, default=ARTEFACT)
    args = parser.parse_args(argv)

    embedder = SentenceTransformerEmbedder(name=DEFAULT_MODEL)
    model = train(embedder)
    held_out = split(load_training_set())[1]
    _print_report(
        "held-out split, embedding+tfidf",
        per_class_report(model, embedder, held_out),
        model.metrics["held_out_accuracy"],
    )
    _print_report(
        "held-out split, tfidf fallback",
        per_class_report(model, None, held_out),
        model.metrics["held_out_accuracy_tfidf_only"],
    )
    _print_report(
        "evaluation set, embedding+tfidf",
        per_class_report(model, embedder, load_eval_set()),
        model.metrics["eval_accuracy"],
    )
    if args.check:
        from cortexgraph.activation.intent import load_model

        problems = compare(model, load_model(args.output))
        print("\nshipped artefact:", "reproduced" if not problems else "; ".join(problems))
        return 1 if problems else 0
    model.save(args.output)
    print(f"\nwrote {args.output} ({args.output.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
