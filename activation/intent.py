"""Intent classification: logistic regression over MiniLM sentence embeddings plus TF-IDF.

The weights ship in ``data/intent_classifier.json`` (plain numbers, reviewable, no pickle) and
are rebuilt by ``python -m cortexgraph.activation.train_intent``. Two heads are stored: ``combined`` reads
[embedding ; tf-idf] and runs when the embedding model is available; ``tfidf`` reads TF-IDF only
and is the honest fallback when it is not. Inference is numpy only.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cortexgraph.activation.errors import ClassifierArtefactError
from cortexgraph.activation.intent_data import DATA_DIR, Intent
from cortexgraph.storage.embeddings import Embedder

ARTEFACT = DATA_DIR / "intent_classifier.json"
ARTEFACT_FORMAT = 1
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def tfidf_terms(text: str) -> list[str]:
    """Unigrams and bigrams of lower-cased words; stop words are kept (they carry intent)."""
    words = _WORD.findall(text.lower().replace("\u2019", "'"))
    return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]


@dataclass(frozen=True, slots=True)
class TfidfFeaturizer:
    vocabulary: tuple[str, ...]
    idf: np.ndarray
    index: dict[str, int] = field(init=False, repr=False, compare=False)  # term -> column

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", {t: i for i, t in enumerate(self.vocabulary)})

    @classmethod
    def fit(cls, texts: Sequence[str], min_df: int = 2) -> TfidfFeaturizer:
        df: Counter[str] = Counter()
        for t in texts:
            df.update(set(tfidf_terms(t)))
        vocab = tuple(sorted(term for term, n in df.items() if n >= min_df))
        n = len(texts)
        idf = np.array([math.log((1 + n) / (1 + df[t])) + 1.0 for t in vocab], dtype=np.float64)
        return cls(vocab, idf)

    def transform(self, texts: Sequence[str]) -> np.ndarray:
        index = self.index
        out = np.zeros((len(texts), len(self.vocabulary)), dtype=np.float64)
        for row, text in enumerate(texts):
            for term, tf in Counter(tfidf_terms(text)).items():
                col = index.get(term)
                if col is not None:
                    out[row, col] = (1.0 + math.log(tf)) * self.idf[col]
            norm = np.linalg.norm(out[row])
            if norm > 0:
                out[row] /= norm
        return out


@dataclass(frozen=True, slots=True)
class LinearHead:
    """Multinomial logistic regression: softmax(x @ coef.T + intercept)."""

    coef: np.ndarray  # (classes, features)
    intercept: np.ndarray  # (classes,)

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        logits = features @ self.coef.T + self.intercept
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        return exp / exp.sum(axis=1, keepdims=True)


@dataclass(frozen=True, slots=True)
class IntentModel:
    labels: tuple[Intent, ...]
    featurizer: TfidfFeaturizer
    combined: LinearHead  # features: [embedding ; tfidf]
    tfidf: LinearHead
    embedding_model: str
    data_fingerprint: str
    metrics: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": ARTEFACT_FORMAT,
            "labels": [label.value for label in self.labels],
            "embedding_model": self.embedding_model,
            "data_fingerprint": self.data_fingerprint,
            "metrics": self.metrics,
            "vocabulary": list(self.featurizer.vocabulary),
            "idf": _rounded(self.featurizer.idf),
            "combined": {
                "coef": _rounded(self.combined.coef),
                "intercept": _rounded(self.combined.intercept),
            },
            "tfidf": {
                "coef": _rounded(self.tfidf.coef),
                "intercept": _rounded(self.tfidf.intercept),
            },
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IntentModel:
        try:
            if data["format"] != ARTEFACT_FORMAT:
                raise ClassifierArtefactError(f"unsupported artefact format {data['format']}")
            labels = tuple(Intent(v) for v in data["labels"])
            featurizer = TfidfFeaturizer(tuple(data["vocabulary"]), np.array(data["idf"]))
            heads = {
                name: LinearHead(np.array(data[name]["coef"]), np.array(data[name]["intercept"]))
                for name in ("combined", "tfidf")
            }
        except (KeyError, TypeError, ValueError) as exc:
            raise ClassifierArtefactError(f"malformed intent classifier artefact: {exc}") from exc
        if heads["tfidf"].coef.shape != (len(labels), len(featurizer.vocabulary)):
            raise ClassifierArtefactError("tfidf head does not match the vocabulary")
        return cls(
            labels,
            featurizer,
            heads["combined"],
            heads["tfidf"],
            data["embedding_model"],
            data["data_fingerprint"],
            data.get("metrics", {}),
        )

    def save(self, path: Path = ARTEFACT) -> None:
        text = json.dumps(self.to_json(), separators=(",", ":"), sort_keys=True)
        path.write_text(text + "\n", encoding="utf-8")


def _rounded(array: np.ndarray) -> Any:
    # 6 significant digits: small file, and retraining noise below that does not show as a diff.
    return np.vectorize(lambda v: float(f"{v:.6g}"))(array).tolist() if array.size else []


_model_lock = threading.Lock()
_models: dict[Path, IntentModel] = {}


def load_model(path: Path = ARTEFACT) -> IntentModel:
    with _model_lock:
        if path not in _models:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ClassifierArtefactError(f"cannot read {path}: {exc}") from exc
            _models[path] = IntentModel.from_json(data)
        return _models[path]


@dataclass(frozen=True, slots=True)
class IntentPrediction:
    intent: Intent
    confidence: float
    probabilities: dict[str, float]
    method: str  # "embedding+tfidf" or "tfidf"

    def to_json(self) -> dict[str, Any]:
        return {
            "intent": self.intent.value,
            "confidence": round(self.confidence, 4),
            "probabilities": {k: round(v, 4) for k, v in self.probabilities.items()},
            "method": self.method,
        }


class IntentClassifier:
    """Predicts an ``Intent``; uses the embedder when one is given, TF-IDF otherwise."""

    def __init__(self, model: IntentModel | None = None, embedder: Embedder | None = None):
        self.model = model or load_model()
        self.embedder = embedder

    def features(self, texts: Sequence[str], vectors: np.ndarray | None = None) -> np.ndarray:
        tfidf = self.model.featurizer.transform(texts)
        if vectors is None:
            return tfidf
        return np.hstack([np.asarray(vectors, dtype=np.float64), tfidf])

    def predict_many(
        self, texts: Sequence[str], vectors: np.ndarray | None = None
    ) -> list[IntentPrediction]:
        """``vectors``: precomputed embeddings of ``texts`` (saves a second model call)."""
        if not texts:
            return []
        if vectors is None and self.embedder is not None:
            vectors = self.embedder.embed(list(texts))
        if vectors is not None:
            probs = self.model.combined.probabilities(self.features(texts, vectors))
            method = "embedding+tfidf"
        else:
            probs = self.model.tfidf.probabilities(self.features(texts))
            method = "tfidf"
        out = []
        for row in probs:
            best = int(np.argmax(row))
            out.append(
                IntentPrediction(
                    intent=self.model.labels[best],
                    confidence=float(row[best]),
                    probabilities={
                        lab.value: float(p) for lab, p in zip(self.model.labels, row, strict=True)
                    },
                    method=method,
                )
            )
        return out

    def predict(self, text: str, vector: np.ndarray | None = None) -> IntentPrediction:
        vectors = None if vector is None else np.asarray(vector).reshape(1, -1)
        return self.predict_many([text], vectors)[0]


__all__ = [
    "ARTEFACT",
    "IntentClassifier",
    "IntentModel",
    "IntentPrediction",
    "LinearHead",
    "TfidfFeaturizer",
    "load_model",
    "tfidf_terms",
]
