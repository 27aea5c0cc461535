"""all-MiniLM-L6-v2 on ONNX Runtime with int8 weights: the default embedder (1.8-4.9x torch).

How much faster than torch fp32 depends on the CPU's int8 instructions (bench/embed_bench.py,
docs/storage.md): on a 2-core VM with AVX-512 it measured 3.6x torch fp32 per CPU second
(4.9x in wall time), on a 2-core AMD EPYC with AVX2 only (no VNNI) 1.8x per thread (190
against 104 texts a second) and 2.8x in wall time with both cores; there an int8 matrix
product runs only about 1.8x faster than an fp32 one.

The graph is exported once, locally, from the shipped model (torch's exporter, then
``onnxruntime.quantization.quantize_dynamic``: per-channel int8 weights of every MatMul but
the FFN output projections, activations quantised on the fly; quantising those too is ~15%
quicker and an ablation only, ``int8_ffn_output``: it moves the labelled merges off torch's)
and cached where sentence-transformers keeps its ONNX files, ``<model>/onnx/``, or, when the
package folder is read-only, in ``~/.cache/cortexgraph/onnx/``. Nothing is downloaded. Vectors
agree with the torch fp32 model to a mean cosine of 0.995 (bench/embed_bench.py), so they
share its name and its embedding cache.

Texts are tokenised with the model's own ``tokenizer.json``, sorted by length and run in
batches padded only to their longest member; the pooling (mean over real tokens) and the L2
normalisation are the sentence-transformers modules' own. Activations are quantised per
run, so a text's vector moves a little with its batchmates (cosine > 0.98 to the same text
embedded alone); the embedding cache keeps the first vector of a text, so a store's vectors
stay put. ``threads`` is ONNX Runtime's
intra-op thread count: 1 for interactive paths (a query must not wait for a busy pool); the
flow's embedding warm-up, a batch job, runs two tasks at once with half the cores each
(``flows.embedding_tasks.batch_threads``: one thread each on 2 cores); idle pool threads
sleep rather than spin.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import tempfile
import threading
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from cortexgraph.storage.errors import CortexGraphError

log = logging.getLogger(__name__)

ONNX_FILE = "model_qint8.onnx"
MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)
BATCH = 32  # texts per run at most; sorted by length, so padding stays small
# Padded tokens per run at most (rows x the longest row). Past about this size the run's
# activations (rows x width x 1,536 in the FFN) outgrow the core's cache and every token costs
# more: on LoCoMo turns saved with their context (~104 tokens) batches of 32 cost 19.5 ms a
# text of CPU against 14.4 ms under this budget, on short turns (~41 tokens) 5.6 against 5.1
# (bench/embed_bench.py has the row). A text longer than the budget runs alone.
TOKEN_BUDGET = 512
_EXPORT_VERSION = "3"  # bump when the export or quantisation recipe changes


class OnnxUnavailableError(CortexGraphError, RuntimeError):
    """ONNX Runtime, the exporter or a writable cache folder is missing."""


def onnx_available() -> bool:
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    return True


def cached_model_file(
    model_dir: Path, user_cache: Path | None = None, *, int8_ffn_output: bool = False
) -> Path:
    """Where the int8 graph for ``model_dir`` lives (exported there on first use);
    ``int8_ffn_output``: the graph with those MatMuls int8 too (a bench's ablation)."""
    key = _model_key(model_dir, int8_ffn_output)
    beside = model_dir / "onnx" / f"{key}-{ONNX_FILE}"
    user = (user_cache or Path.home() / ".cache" / "cortexgraph" / "onnx") / f"{key}-{ONNX_FILE}"
    for path in (beside, user):
        if path.is_file():
            return path
    return beside if _writable(beside.parent) else user


@contextlib.contextmanager
def root_logger_left_alone() -> Iterator[None]:
    """The quantiser warns through ``logging.warning()`` ("consider pre-processing"), which
    configures the root logger on the spot when it has no handler: every later log line of the
    process then printed in logging's bare format ("INFO:prefect.flow_runs:..."), the demo's
    first run included. A handler for the duration leaves the root logger as it was."""
    root = logging.getLogger()
    if root.handlers:
        yield
        return
    quiet = logging.NullHandler()
    root.addHandler(quiet)
    try:
        yield
    finally:
        root.removeHandler(quiet)


def export_fp32(model_dir: Path, target: Path) -> Path:
    """The shipped model as an fp32 ONNX graph (torch's exporter): what ``export_int8``
    quantises, and what bench/int8_recipe_bench.py builds its other recipes from."""
    try:
        import torch
        from transformers import AutoModel
    except ImportError as e:
        raise OnnxUnavailableError(f"cannot export to ONNX here: {e}") from e
    model = _HiddenStates(AutoModel.from_pretrained(str(model_dir))).eval()
    sample = torch.ones((2, 8), dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]}
    # The tracer warns that a negative index, or a mask that is sometimes absent, would export
    # wrongly: ours never is (the embedder always passes the mask), and the graph is held to
    # torch fp32's vectors (tests/search/test_search_onnx_embedder.py). A first run should not
    # print "incorrect results" on the way.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Exporting aten::index operator", UserWarning)
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        torch.onnx.export(
            model,
            (sample, sample, torch.zeros_like(sample)),
            str(target),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
    return target


def export_int8(model_dir: Path, target: Path, *, int8_ffn_output: bool = False) -> Path:
    """Export the shipped model to ONNX and quantise its weights to int8 (about 20 s, once).
    ``int8_ffn_output``: each layer's FFN output projection int8 too (bench/embed_bench.py's
    ablation: quicker, and outside the quality bounds, see below)."""
    try:
        from filelock import FileLock
    except ImportError as e:
        raise OnnxUnavailableError(f"cannot export to ONNX here: {e}") from e
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock", timeout=600):
        if target.is_file():  # another process exported it while we waited
            return target
        log.info("exporting %s to int8 ONNX at %s (once)", model_dir.name, target)
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            fp32 = export_fp32(model_dir, Path(tmp) / "model.onnx")
            quantised = Path(tmp) / ONNX_FILE
            # Per-channel weights on the MatMuls only, the FFN down-projections left fp32:
            # per-tensor int8 everywhere gave a mean cosine of 0.958 to torch fp32, per-channel
            # 0.992, and this 0.995-0.996 (docs/storage.md). Quantising the down-projections
            # too runs ~15% quicker (their fp32 MatMuls are 37% of this graph's time) but moves
            # the demo set's labelled merges off torch's (P 0.960 / R 0.453 against 0.926 /
            # 0.472; this recipe gives torch's exactly): outside issue 20's 0.01 bound. Keeping
            # just their largest input channels fp32 is as quick and moves them too
            # (bench/int8_recipe_bench.py).
            quantise_int8(fp32, quantised, keep_fp32=[] if int8_ffn_output else _ffn_outputs(fp32))
            os.replace(quantised, target)
    return target


def quantise_int8(fp32: Path, target: Path, *, keep_fp32: Sequence[str]) -> Path:
    """Per-channel int8 weights on every MatMul of ``fp32`` but the nodes named in
    ``keep_fp32``, activations quantised per run (the recipe of ``export_int8``, and of the
    graphs bench/int8_recipe_bench.py builds)."""
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as e:
        raise OnnxUnavailableError(f"cannot quantise here: {e}") from e
    with root_logger_left_alone():
        quantize_dynamic(
            str(fp32),
            str(target),
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            nodes_to_exclude=list(keep_fp32),
        )
    return target


class OnnxEmbedder:
    """Texts to L2-normalised float32 vectors through the int8 ONNX graph (see module doc)."""

    backend = "onnx-int8"
    _sessions: ClassVar[dict[tuple[str, int, str, bool, bool, str], Any]] = {}
    _tokenizers: ClassVar[dict[str, Any]] = {}
    _lock = threading.Lock()

    def __init__(
        self,
        model_dir: Path,
        name: str,
        *,
        threads: int = 1,
        user_cache: Path | None = None,
        sort_by_length: bool = True,
        graph_level: str = "all",
        spinning: bool = False,
        batch: int = BATCH,
        token_budget: int = TOKEN_BUDGET,
        int8_ffn_output: bool = False,
        graph: Path | None = None,
    ) -> None:
        self.name = name
        self.model_dir = Path(model_dir)
        self.threads = max(1, int(threads))
        self.sort_by_length = sort_by_length  # False only to measure what the sort saves
        # ONNX Runtime's graph optimisation level ("basic", "extended", "all") and whether
        # idle pool threads spin (with threads > 1 on shared cores, a spinning thread takes
        # the core its peer waits for); the defaults won bench/embed_bench.py, the rest are
        # its ablation rows.
        self.graph_level = graph_level
        self.spinning = spinning
        self.batch = max(1, int(batch))
        self.token_budget = max(1, int(token_budget))
        self.int8_ffn_output = int8_ffn_output  # True only for the benches' ablation rows
        # A graph file to run instead of the cached recipe's: bench/int8_recipe_bench.py's recipes
        self.graph = Path(graph) if graph is not None else None
        self._user_cache = user_cache

    def with_threads(self, threads: int) -> OnnxEmbedder:
        """The same model with another thread count (its own session, shared per count)."""
        return OnnxEmbedder(
            self.model_dir,
            self.name,
            threads=threads,
            user_cache=self._user_cache,
            sort_by_length=self.sort_by_length,
            graph_level=self.graph_level,
            spinning=self.spinning,
            batch=self.batch,
            token_budget=self.token_budget,
            int8_ffn_output=self.int8_ffn_output,
            graph=self.graph,
        )

    def load(self) -> None:
        """Export if needed and open the session now (raises OnnxUnavailableError)."""
        self._session()
        self._tokenizer()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        session, tokenizer = self._session(), self._tokenizer()
        encodings = tokenizer.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encodings]
        order = (
            np.argsort(lengths, kind="stable") if self.sort_by_length else np.arange(len(lengths))
        )
        out = np.empty((len(texts), 0), dtype=np.float32)
        for rows in self._runs(order, lengths):
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[r, :n] = encodings[i].ids
                mask[r, :n] = 1
            hidden = session.run(
                None,
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            if out.shape[1] == 0:
                out = np.empty((len(texts), pooled.shape[1]), dtype=np.float32)
            out[rows] = pooled
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        unit: np.ndarray = (out / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit

    def _runs(self, order: np.ndarray, lengths: list[int]) -> list[np.ndarray]:
        """``order`` cut into runs of at most ``batch`` texts and ``token_budget`` padded
        tokens (rows x the run's longest text)."""
        runs: list[np.ndarray] = []
        start = 0
        while start < len(order):
            end, width = start + 1, lengths[order[start]]
            while end < len(order) and end - start < self.batch:
                wider = max(width, lengths[order[end]])
                if (end - start + 1) * wider > self.token_budget:
                    break
                end, width = end + 1, wider
            runs.append(order[start:end])
            start = end
        return runs

    def _session(self) -> Any:
        key = (
            str(self.model_dir),
            self.threads,
            self.graph_level,
            self.spinning,
            self.int8_ffn_output,
            str(self.graph or ""),
        )
        with self._lock:
            if key not in self._sessions:
                self._sessions[key] = self._open_session()
            return self._sessions[key]

    def _open_session(self) -> Any:
        try:
            import onnxruntime as ort
        except ImportError as e:
            raise OnnxUnavailableError(f"onnxruntime is not installed: {e}") from e
        int8_ffn = self.int8_ffn_output
        path = self.graph or cached_model_file(
            self.model_dir, self._user_cache, int8_ffn_output=int8_ffn
        )
        if self.graph is None and not path.is_file():
            export_int8(self.model_dir, path, int8_ffn_output=int8_ffn)
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        levels = {
            "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
        }
        options.graph_optimization_level = levels[self.graph_level]
        options.add_session_config_entry(
            "session.intra_op.allow_spinning", "1" if self.spinning else "0"
        )
        try:
            return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as e:  # a damaged cached file: say so, fall back
            raise OnnxUnavailableError(f"cannot open {path}: {e}") from e

    def _tokenizer(self) -> Any:
        key = str(self.model_dir)
        with self._lock:
            if key not in self._tokenizers:
                from tokenizers import Tokenizer

                tok = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
                tok.enable_truncation(max_length=MAX_TOKENS)
                tok.no_padding()
                self._tokenizers[key] = tok
            return self._tokenizers[key]


class _HiddenStates:
    """Wraps the HF model so the exporter sees three positional inputs and one output."""

    def __new__(cls, model: Any) -> Any:
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self, inner: Any) -> None:
                super().__init__()
                self.inner = inner

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                return self.inner(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    token_type_ids=token_type_ids,
                ).last_hidden_state

        return Wrapped(model)


_FFN_OUTPUT = re.compile(r"layer\.(\d+)/output/dense/")  # not attention/output/dense


def ffn_output_matmuls(model: Any) -> dict[int, Any]:
    """Layer -> the MatMul node of its FFN output projection (``layer.N/output/dense``) in an
    exported graph (an ``onnx.ModelProto``): the nodes the default recipe keeps fp32, and the
    ones bench/int8_recipe_bench.py splits."""
    found: dict[int, Any] = {}
    for node in model.graph.node:
        match = _FFN_OUTPUT.search(node.name) if node.op_type == "MatMul" else None
        if match:
            found[int(match.group(1))] = node
    return found


def _ffn_outputs(graph: Path) -> list[str]:
    """The names of ``ffn_output_matmuls`` in the graph file ``graph``."""
    import onnx

    model = onnx.load(str(graph), load_external_data=False)
    return [node.name for node in ffn_output_matmuls(model).values()]


def _model_key(model_dir: Path, int8_ffn_output: bool = False) -> str:
    """Changes when the shipped weights or our recipe change (size and config, not a hash of
    90 MB on every start)."""
    h = hashlib.blake2b(digest_size=6)
    h.update(_EXPORT_VERSION.encode())
    if int8_ffn_output:  # the default's key is the one it always had: no new export
        h.update(b"int8-ffn-output")
    for name in ("config.json", "tokenizer.json"):
        with contextlib.suppress(OSError):
            h.update((model_dir / name).read_bytes())
    for weights in ("model.safetensors", "pytorch_model.bin"):
        if (model_dir / weights).is_file():
            h.update(str((model_dir / weights).stat().st_size).encode())
    return h.hexdigest()


def _writable(folder: Path) -> bool:
    probe = folder
    while not probe.exists():
        probe = probe.parent
    return os.access(probe, os.W_OK)


__all__ = [
    "OnnxEmbedder",
    "OnnxUnavailableError",
    "cached_model_file",
    "export_fp32",
    "export_int8",
    "ffn_output_matmuls",
    "onnx_available",
    "quantise_int8",
]
