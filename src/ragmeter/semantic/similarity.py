"""Semantic similarity of an answer to its gold answer(s): SBERT cosine and cross-encoder score.

Both work on a whole run at once: every distinct text is embedded in ONE `encode` call (every
(gold, answer) pair scored in ONE `predict` call), then each answer takes the max over its golds.

Values are in [0, 1]:
- sbert_similarity = max over golds of cos(answer, gold), clipped to [0, 1] (the raw cosine, which can be
  slightly negative for unrelated texts, is kept in details["cosine"]);
- cross_encoder_similarity = sigmoid(logit) of the best (gold, answer) pair; the raw logit is kept in
  details["logit"]. Logits are taken raw (identity activation) and squashed here, so the scale is the same
  whatever activation a model's config declares.
A missing answer or an answer with no non-blank gold is None with the reason; a blank answer scores 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragmeter.errors import InputError, RagmeterError
from ragmeter.models import MetricResult
from ragmeter.semantic.cache import EmbeddingSpace
from ragmeter.semantic.models import DEFAULT_EMBEDDING_MODEL, load_cross_encoder, load_embedder

__all__ = [
    "SEMANTIC_METRIC_VERSION",
    "cross_encoder_similarity_batch",
    "sbert_similarity",
    "sbert_similarity_batch",
]

SEMANTIC_METRIC_VERSION = "1"

GoldsBatch = Sequence[str | Sequence[str]]
_Todo = list[tuple[int, str, list[str]]]


def _result(
    name: str,
    value: float | None,
    details: dict[str, Any],
    error: str | None = None,
    version: str = SEMANTIC_METRIC_VERSION,
) -> MetricResult:
    return MetricResult(name=name, value=value, details=details, error=error, version=version)


def embedding_version(label: str, embedder: Any) -> str:
    """sbert_similarity's version: the metric's own, the model and its embedding space (backend,
    precision, max sequence length, normalisation), e.g. `1:all-MiniLM-L6-v2/torch-fp32-256-norm`."""
    space = EmbeddingSpace(
        model=label,
        backend=str(getattr(embedder, "backend", "torch")),
        precision=str(getattr(embedder, "precision", "fp32")),
        max_seq_length=getattr(embedder, "max_seq_length", None),
    )
    return f"{SEMANTIC_METRIC_VERSION}:{label.rsplit('/', 1)[-1]}/{space.tag}"


def _prepare(
    name: str, predictions: Sequence[str | None], golds: GoldsBatch
) -> tuple[list[MetricResult | None], _Todo]:
    """Settle the trivial cases; return the (index, answer, non-blank golds) left to score."""
    if isinstance(golds, str) or len(predictions) != len(golds):
        got = "a single string" if isinstance(golds, str) else f"{len(golds)} gold entries"
        raise InputError(
            f"{name}: {len(predictions)} predictions but {got}; give one gold entry per prediction"
        )
    results: list[MetricResult | None] = [None] * len(predictions)
    todo: _Todo = []
    for i, (pred, gold) in enumerate(zip(predictions, golds, strict=True)):
        gold_list = [gold] if isinstance(gold, str) else list(gold)
        gold_list = [g for g in gold_list if g and g.strip()]
        if pred is None:
            results[i] = _result(name, None, {}, "no answer to score")
        elif not gold_list:
            results[i] = _result(name, None, {}, "no gold answer")
        elif not pred.strip():
            results[i] = _result(name, 0.0, {"empty_answer": True})
        else:
            todo.append((i, pred, gold_list))
    return results, todo


def _done(results: list[MetricResult | None]) -> list[MetricResult]:
    out = [r for r in results if r is not None]
    assert len(out) == len(results), "every prediction must have a result"
    return out


def sbert_similarity_batch(
    predictions: Sequence[str | None],
    golds: GoldsBatch,
    *,
    model: str | Path | None = None,
    batch_size: int = 64,
) -> list[MetricResult]:
    """Cosine similarity of sentence embeddings, answer vs gold (max over golds), for a whole run.

    `golds[i]` is the gold answer (a string) or the gold answers (a list) of `predictions[i]`.
    `model`: None for the offline all-MiniLM-L6-v2, or any local path / model name.
    """
    import numpy as np

    name = "sbert_similarity"
    results, todo = _prepare(name, predictions, golds)
    if not todo:
        return _done(results)
    embedder = load_embedder(model)
    label = DEFAULT_EMBEDDING_MODEL if model is None else str(model)
    index: dict[str, int] = {}
    for _, pred, gold_list in todo:
        for text in (pred, *gold_list):
            index.setdefault(text, len(index))
    emb = embedder.encode(
        list(index),
        batch_size=batch_size,
        convert_to_numpy=True,
        normalize_embeddings=True,
        show_progress_bar=False,
    )
    emb = np.asarray(emb, dtype=np.float64)
    version = embedding_version(label, embedder)
    for i, pred, gold_list in todo:
        sims = emb[[index[g] for g in gold_list]] @ emb[index[pred]]
        best = int(np.argmax(sims))
        cosine = float(sims[best])
        if not math.isfinite(cosine):
            results[i] = _result(name, None, {"model": label}, "embedding similarity is not finite", version)
            continue
        value = min(1.0, max(0.0, cosine))
        results[i] = _result(
            name, value, {"cosine": cosine, "best_gold": best, "model": label}, None, version
        )
    return _done(results)


def sbert_similarity(
    prediction: str | None, golds: str | Sequence[str], *, model: str | Path | None = None
) -> MetricResult:
    """One answer's SBERT similarity. For a run, call `sbert_similarity_batch` once instead."""
    return sbert_similarity_batch([prediction], [golds], model=model)[0]


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def cross_encoder_similarity_batch(
    predictions: Sequence[str | None],
    golds: GoldsBatch,
    *,
    model: str | Path,
    batch_size: int = 32,
) -> list[MetricResult]:
    """Cross-encoder score of each (gold, answer) pair, sigmoid of the logit, max over golds.

    `model`: a local directory or a Hugging Face name of a single-output CrossEncoder, e.g.
    "cross-encoder/ms-marco-MiniLM-L-6-v2" (relevance of the answer to the gold as a query) or
    "cross-encoder/stsb-roberta-base" (semantic textual similarity).
    """
    import numpy as np

    name = "cross_encoder_similarity"
    results, todo = _prepare(name, predictions, golds)
    if not todo:
        return _done(results)
    encoder = load_cross_encoder(model)
    import torch  # installed: load_cross_encoder checked the extra

    pairs = [(gold, pred) for _, pred, gold_list in todo for gold in gold_list]
    logits = encoder.predict(
        pairs,
        batch_size=batch_size,
        activation_fn=torch.nn.Identity(),
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    flat = np.asarray(logits, dtype=np.float64).reshape(-1)
    if flat.shape[0] != len(pairs):
        raise RagmeterError(f"cross-encoder {model!s} returned {flat.shape[0]} scores for {len(pairs)} pairs")
    label = str(model)
    start = 0
    for i, _, gold_list in todo:
        seg = flat[start : start + len(gold_list)]
        start += len(gold_list)
        best = int(np.argmax(seg))
        logit = float(seg[best])
        if not math.isfinite(logit):
            results[i] = _result(name, None, {"model": label}, "cross-encoder score is not finite")
            continue
        results[i] = _result(name, _sigmoid(logit), {"logit": logit, "best_gold": best, "model": label})
    return _done(results)
