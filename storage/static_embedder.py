"""A static model distilled locally from the shipped MiniLM with model2vec (optional extra).

Used only to find candidate pairs for cluster detection (agents/cluster_detector.py); MiniLM
scores every pair that decides anything. A static model looks its tokens' vectors up and
averages them, with no transformer pass, so it embeds thousands of texts in the time MiniLM
takes for a few dozen, at a cosine to MiniLM's far below the 0.99 the merge thresholds need:
fit for "which pairs are worth checking", not for the check.

The model is distilled once (``model2vec.distill``: one MiniLM pass over each vocabulary
token, PCA to 256 dimensions, SIF weights), offline from the shipped model's folder, and cached
beside the int8 ONNX export (``<model>/onnx/<key>-model2vec/``, else
``~/.cache/cortexgraph/onnx/``). Nothing is downloaded: ``distill`` takes a local path and
the hub is switched off while it runs. Without the ``static`` extra (``pip install
'cortexgraph[static]'``: model2vec and skeletoken) ``static_embedder()`` returns None and the
detector finds candidates with MiniLM itself, the labelled fallback.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from cortexgraph.storage.errors import CortexGraphError
from cortexgraph.storage.onnx_export import cached_model_file, remove_stale_beside

log = logging.getLogger(__name__)

STATIC_SUFFIX = "model2vec"
PCA_DIMS = 256  # model2vec's default; the candidate search needs no more


class StaticUnavailableError(CortexGraphError, RuntimeError):
    """model2vec is not installed, or the static model could not be distilled or loaded."""


def static_available() -> bool:
    try:
        import model2vec  # noqa: F401
    except ImportError:
        return False
    return True


def cached_static_dir(model_dir: Path, user_cache: Path | None = None) -> Path:
    """Where the static model for ``model_dir`` lives: beside the ONNX export, same key."""
    onnx_file = cached_model_file(model_dir, user_cache)
    key = onnx_file.name.split("-", 1)[0]
    return onnx_file.parent / f"{key}-{STATIC_SUFFIX}"


def distill_static(model_dir: Path, target: Path) -> Path:
    """Distil the static model from the local MiniLM into ``target`` (once; about a minute)."""
    try:
        from filelock import FileLock
        from model2vec.distill import distill
    except ImportError as e:
        raise StaticUnavailableError(f"cannot distil a static model here: {e}") from e
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock", timeout=900):
        if (target / "config.json").is_file():  # another process distilled it meanwhile
            return target
        log.info("distilling a static model from %s into %s (once)", model_dir.name, target)
        saved = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
        os.environ.update(dict.fromkeys(saved, "1"))
        try:
            model = distill(model_name=str(model_dir), pca_dims=PCA_DIMS, device="cpu")
            with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
                out = Path(tmp) / "model"
                model.save_pretrained(out)
                shutil.rmtree(target, ignore_errors=True)
                os.replace(out, target)
        except Exception as e:  # a download attempt, a library change: say so, fall back
            raise StaticUnavailableError(f"cannot distil a static model: {e}") from e
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        if target.parent == model_dir / "onnx":
            remove_stale_static_models(model_dir)
    return target


def remove_stale_static_models(model_dir: Path) -> list[Path]:
    """Delete the static models an earlier version distilled beside ``model_dir`` (a folder
    each, left behind by every upgrade that changes the ONNX key they share), keeping this
    version's; returns what it deleted. As with the ONNX graphs, only the folder beside the
    model: the user cache may be shared by installs of other versions."""
    keep = {cached_static_dir(model_dir).name}
    return remove_stale_beside(model_dir, STATIC_SUFFIX, keep, shutil.rmtree, "static model")


class StaticEmbedder:
    """Texts to L2-normalised float32 vectors through the distilled static model."""

    backend = "model2vec"
    _models: ClassVar[dict[str, Any]] = {}
    _lock = threading.Lock()

    def __init__(self, model_dir: Path, *, user_cache: Path | None = None) -> None:
        self.model_dir = Path(model_dir)
        self.name = f"{self.model_dir.name}-{STATIC_SUFFIX}"
        self._user_cache = user_cache

    def load(self) -> None:
        """Distil if needed and load the model now (raises StaticUnavailableError)."""
        self._model()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, PCA_DIMS), dtype=np.float32)
        vecs = np.asarray(
            self._model().encode(list(texts), use_multiprocessing=False), dtype=np.float32
        )
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        unit: np.ndarray = vecs / np.maximum(norms, 1e-12)
        return unit

    def _model(self) -> Any:
        key = str(self.model_dir)
        with self._lock:
            if key not in self._models:
                self._models[key] = self._open()
            return self._models[key]

    def _open(self) -> Any:
        try:
            from model2vec import StaticModel
        except ImportError as e:
            raise StaticUnavailableError(f"model2vec is not installed: {e}") from e
        path = cached_static_dir(self.model_dir, self._user_cache)
        if not (path / "config.json").is_file():
            distill_static(self.model_dir, path)
        try:  # a local folder: from_pretrained reads it and never asks the hub
            return StaticModel.from_pretrained(str(path), force_download=False)
        except Exception as e:
            raise StaticUnavailableError(f"cannot load the static model at {path}: {e}") from e


def static_embedder(model_dir: Path | None = None) -> StaticEmbedder | None:
    """The distilled static model of the shipped MiniLM, or None without model2vec or MiniLM
    (callers then find candidates with MiniLM: the fallback)."""
    if model_dir is None:
        from cortexgraph.storage.embeddings import model_path

        model_dir = model_path()
    if model_dir is None or not static_available():
        return None
    return StaticEmbedder(model_dir)


__all__ = [
    "StaticEmbedder",
    "StaticUnavailableError",
    "cached_static_dir",
    "distill_static",
    "remove_stale_static_models",
    "static_available",
    "static_embedder",
]
