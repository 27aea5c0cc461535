"""The default embedder: MiniLM on ONNX Runtime, built without torch, agreeing with torch fp32,
and its labelled fallback."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from cortexgraph.storage.embeddings import (
    FallbackEmbedder,
    default_embedder,
    model_path,
    torch_model_path,
)
from cortexgraph.storage.errors import CortexGraphError
from cortexgraph.storage.onnx_embedder import OnnxEmbedder, OnnxUnavailableError, onnx_available

TEXTS = [
    "Sam decided to use PostgreSQL for the billing ledger because it is cheaper to run.",
    "the payments API failed twice this week",
    "Mei prefers Rust over the alternatives for search work since latency was too high.",
    "ok",
    "A much longer note about the onboarding of the new data pipeline team, the Kafka "
    "topics they will own, the Grafana dashboards they need and who reviews their changes.",
]


class _Fixed:
    def __init__(self, name: str, backend: str, fail: bool = False) -> None:
        self.name, self.backend, self.fail, self.calls = name, backend, fail, 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.fail:
            raise OnnxUnavailableError("no onnxruntime here")
        return np.ones((len(texts), 3), dtype=np.float32)


def test_fallback_chain_uses_the_next_backend_and_says_why() -> None:
    first, second = _Fixed("m", "onnx-int8", fail=True), _Fixed("m", "torch-fp32")
    chain = FallbackEmbedder([first, second])
    assert chain.name == "m"
    assert chain.embed(["a", "b"]).shape == (2, 3)
    assert chain.embed(["c"]).shape == (1, 3)
    assert first.calls == 1 and second.calls == 2  # the failing backend is tried once
    assert chain.backend.startswith("torch-fp32 (onnx-int8 unavailable: no onnxruntime here")


def test_fallback_chain_raises_when_the_last_backend_fails() -> None:
    chain = FallbackEmbedder([_Fixed("m", "onnx-int8", fail=True), _Fixed("m", "t", fail=True)])
    with pytest.raises(CortexGraphError):
        chain.embed(["a"])


needs_model = pytest.mark.skipif(
    model_path() is None or not onnx_available(), reason="MiniLM or onnxruntime not installed"
)
needs_torch = pytest.mark.skipif(
    torch_model_path() is None, reason="the full extra (torch, sentence-transformers) is not here"
)


@needs_model
def test_default_embedder_is_onnx_with_torch_behind_it_where_installed() -> None:
    model = default_embedder()
    assert isinstance(model, FallbackEmbedder)
    assert model.name == "all-MiniLM-L6-v2"  # shares the torch model's embedding cache
    assert model.backend == "onnx-fp32" and isinstance(model.active, OnnxEmbedder)


@needs_model
def test_choosing_the_default_embedder_loads_no_runtime(tmp_path) -> None:
    """A consolidation run whose texts the cache holds never embeds: choosing the backend
    looks onnxruntime up without importing it (0.07 s of every run)."""
    import subprocess
    import sys

    code = (
        "import sys; from cortexgraph.storage.embeddings import default_cache; "
        f"cache = default_cache({str(tmp_path)!r}); "
        "print(cache.embedder.backend, 'onnxruntime' in sys.modules, 'tokenizers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["onnx-fp32", "False", "False"]


@needs_model
@needs_torch
def test_onnx_vectors_agree_with_torch_fp32_in_any_order_and_batch() -> None:
    """The graph built from the shipped weights, without torch, against sentence-transformers
    on torch fp32 (the vectors every stored cache and merge was measured with)."""
    from cortexgraph.storage.embeddings import SentenceTransformerEmbedder

    path = model_path()
    assert path is not None
    reference = SentenceTransformerEmbedder(torch_model_path()).embed(TEXTS)
    onnx = OnnxEmbedder(path, "all-MiniLM-L6-v2")
    vecs = onnx.embed(TEXTS)
    assert vecs.dtype == np.float32 and vecs.shape == reference.shape
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    cos = np.sum(vecs * reference, axis=1)
    # 0.9995-0.9997 for the sentences, 0.9964 for "ok" (0.9994 mean on 300 LoCoMo turns);
    # the int8 graph up to 2.0 gave 0.965 for "ok" and 0.98-0.99 for the rest
    assert cos.min() > 0.995 and np.median(cos) > 0.999
    # length sorting and batching never change which vector belongs to which text
    reordered = onnx.embed(TEXTS[::-1])[::-1]
    assert np.allclose(reordered, vecs, atol=1e-5)
    # nor does a text's vector depend on its batchmates (no activation quantisation)
    alone = onnx.with_threads(2).embed(TEXTS[:1])[0]
    assert float(alone @ vecs[0]) > 0.99999
    assert onnx.embed([]).shape == (0, 384)


@needs_model
@needs_torch
def test_a_damaged_cached_graph_falls_back_to_torch(tmp_path, monkeypatch) -> None:
    import cortexgraph.storage.onnx_embedder as oe

    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"not a graph")
    monkeypatch.setattr(oe, "cached_model_file", lambda model_dir, user_cache=None, **recipe: bad)
    monkeypatch.setattr(OnnxEmbedder, "_sessions", {})
    model = default_embedder()
    assert model is not None
    assert model.embed(TEXTS[:2]).shape == (2, 384)
    assert model.backend.startswith("torch-fp32 (onnx-fp32 unavailable: cannot open")


def test_the_quantisers_warning_does_not_configure_the_root_logger():
    # onnxruntime's quantize_dynamic calls logging.warning(); with no handler on the root
    # logger that would call basicConfig() and change how every later log line prints.
    import logging

    from cortexgraph.storage.onnx_export import root_logger_left_alone

    root = logging.getLogger()
    kept = root.handlers[:]
    root.handlers.clear()
    try:
        with root_logger_left_alone():
            logging.warning("Please consider to run pre-processing before quantization.")
        assert root.handlers == []
    finally:
        root.handlers[:] = kept


@needs_model
def test_the_default_graph_is_fp32_and_built_without_torch() -> None:
    """The default graph is the shipped weights folded to fp32 (storage/minilm_graph.py): no
    int8 MatMul, no dequantising Cast left, six layers' FFN projections named as torch's
    exporter names them. The int8 recipe is only an ablation, with a graph (and a cache key)
    of its own."""
    import re

    import onnx

    from cortexgraph.storage.onnx_export import cached_model_file

    path = model_path()
    assert path is not None
    OnnxEmbedder(path, "all-MiniLM-L6-v2").load()  # builds the default graph if it is missing
    graph = onnx.load(str(cached_model_file(path)), load_external_data=False).graph
    matmuls = [(n.op_type, n.name) for n in graph.node if "MatMul" in n.op_type]
    ffn_out = [op for op, name in matmuls if re.search(r"layer\.\d+/output/dense/", name)]
    assert ffn_out == ["MatMul"] * 6  # fp32, one a layer
    assert not [op for op, _ in matmuls if op != "MatMul"]
    int8 = (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)
    assert not [t.name for t in graph.initializer if t.data_type in int8]
    ablation = cached_model_file(path, int8_ffn_output=True)
    assert ablation != cached_model_file(path) and ablation.parent == cached_model_file(path).parent


@needs_model
def test_an_embedder_given_a_graph_runs_that_file_and_never_exports_one(tmp_path) -> None:
    """bench/int8_recipe_bench.py runs graphs it built itself through the product's embedder.
    The file given is the one run, and ``with_threads`` keeps it: the default graph copied
    elsewhere gives the default's vectors. A missing one is an error, not an export to it."""
    import shutil

    from cortexgraph.storage.minilm_graph import weights_file
    from cortexgraph.storage.onnx_export import cached_model_file

    path = model_path()
    assert path is not None
    default = OnnxEmbedder(path, "all-MiniLM-L6-v2")
    expected = default.embed(TEXTS)
    graph = cached_model_file(path)
    copy = tmp_path / graph.name  # with its weights, under the name the graph gives them
    shutil.copyfile(graph, copy)
    shutil.copyfile(weights_file(graph), weights_file(copy))
    given = OnnxEmbedder(path, "all-MiniLM-L6-v2", graph=copy)
    assert np.array_equal(given.embed(TEXTS), expected)
    assert given.with_threads(2).graph == copy
    missing = tmp_path / "missing.onnx"
    with pytest.raises(OnnxUnavailableError, match="cannot open"):
        OnnxEmbedder(path, "all-MiniLM-L6-v2", graph=missing).embed(TEXTS)
    assert not missing.exists()


def test_an_export_leaves_only_this_versions_graphs_beside_the_model(tmp_path) -> None:
    """Every upgrade that changes the cache key exported a new ~60 MB graph and left the old
    one. After an export the graphs of other keys go, with their locks; this version's default
    and ablation graphs stay, and so does any file not named like one of ours."""
    from cortexgraph.storage.onnx_export import ONNX_FILE, cached_model_file, remove_stale_graphs

    model = tmp_path / "model"
    (model / "onnx").mkdir(parents=True)
    (model / "config.json").write_text('{"hidden_size": 384}')
    (model / "tokenizer.json").write_text("{}")
    default = cached_model_file(model)
    ablation = cached_model_file(model, int8_ffn_output=True)
    stale = model / "onnx" / f"0123456789ab-{ONNX_FILE}"
    theirs = [model / "onnx" / "model.onnx", model / "onnx" / f"mine-{ONNX_FILE}"]
    for path in (default, ablation, stale, *theirs):
        path.write_bytes(b"graph")
    for path in (default, stale):
        path.with_name(path.name + ".lock").write_bytes(b"")

    assert remove_stale_graphs(model) == [stale]
    left = sorted(p.name for p in (model / "onnx").iterdir())
    assert left == sorted(
        [default.name, default.name + ".lock", ablation.name, *(p.name for p in theirs)]
    )
    (model / "config.json").write_text('{"hidden_size": 768}')  # another model: another key
    assert sorted(remove_stale_graphs(model)) == sorted([default, ablation])
    # What cannot be removed stays, and the export that asked is not failed for it.
    stuck = model / "onnx" / f"fedcba987654-{ONNX_FILE}"
    stuck.mkdir()  # unlink() of a folder raises, even for root
    assert remove_stale_graphs(model) == [] and stuck.is_dir()


def test_a_distillation_leaves_only_this_versions_static_model_beside_the_model(tmp_path) -> None:
    """The static models (the 'static' extra) share the ONNX graphs' key, so each upgrade left
    a distilled folder behind too. Folders of other keys go, with their locks; this version's
    stays, and so does anything not named like ours. Needs no model2vec: folders only."""
    from cortexgraph.storage.static_embedder import cached_static_dir, remove_stale_static_models

    model = tmp_path / "model"
    (model / "onnx").mkdir(parents=True)
    (model / "config.json").write_text('{"hidden_size": 384}')
    (model / "tokenizer.json").write_text("{}")
    current = cached_static_dir(model)
    stale = model / "onnx" / "0123456789ab-model2vec"
    theirs = model / "onnx" / "my-model2vec"
    for folder in (current, stale, theirs):
        folder.mkdir()
        (folder / "config.json").write_text("{}")
    stale.with_name(stale.name + ".lock").write_bytes(b"")

    assert current.parent == model / "onnx"
    assert remove_stale_static_models(model) == [stale]
    assert sorted(p.name for p in (model / "onnx").iterdir()) == sorted([current.name, theirs.name])
    (model / "config.json").write_text('{"hidden_size": 768}')  # another model: another key
    assert remove_stale_static_models(model) == [current]
    # What cannot be removed stays: a file named like a folder of ours makes rmtree raise.
    stuck = model / "onnx" / "fedcba987654-model2vec"
    stuck.write_bytes(b"")
    assert remove_stale_static_models(model) == [] and stuck.is_file()


@needs_model
def test_a_session_keeps_no_arena_or_memory_pattern_between_runs() -> None:
    """The MCP server holds its session all day: an arena or a memory pattern would keep the
    largest batch's activations resident for good (bench/mcp_rss_bench.py)."""
    path = model_path()
    assert path is not None
    embedder = OnnxEmbedder(path, "all-MiniLM-L6-v2")
    embedder.embed(["a short text", "a longer text " * 40])
    options = embedder._session().get_session_options()
    assert options.enable_cpu_mem_arena is False
    assert options.enable_mem_pattern is False
