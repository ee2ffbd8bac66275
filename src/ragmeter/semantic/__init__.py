"""Semantic similarity metrics (optional extra `ragmeter[semantic]`: torch + sentence-transformers).

Importing this package loads nothing: each name below is imported from its module on first use (so the
registry can read `semantic/specs.py` without numpy), and torch and sentence-transformers load on the first
model load. See docs/generation_metrics.md.
"""

from __future__ import annotations

from ragmeter._lazy import by_module, lazy_getattr

_LAZY = by_module(
    {
        "ragmeter.semantic.models": (
            "DEFAULT_EMBEDDING_MODEL",
            "available",
            "clear_cache",
            "default_embedding_model_path",
            "load_cross_encoder",
            "load_embedder",
        ),
        "ragmeter.semantic.similarity": (
            "SEMANTIC_METRIC_VERSION",
            "cross_encoder_similarity_batch",
            "sbert_similarity",
            "sbert_similarity_batch",
        ),
    }
)

__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr(__name__, _LAZY, globals())
