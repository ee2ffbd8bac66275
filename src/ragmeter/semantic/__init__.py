"""Semantic similarity metrics (optional extra `ragmeter[semantic]`: torch + sentence-transformers).

Importing this package is cheap: torch and sentence-transformers load on the first model load.
See docs/generation_metrics.md.
"""

from __future__ import annotations

from ragmeter.semantic.models import (
    DEFAULT_EMBEDDING_MODEL,
    available,
    clear_cache,
    default_embedding_model_path,
    load_cross_encoder,
    load_embedder,
)
from ragmeter.semantic.similarity import (
    SEMANTIC_METRIC_VERSION,
    cross_encoder_similarity_batch,
    sbert_similarity,
    sbert_similarity_batch,
)

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "SEMANTIC_METRIC_VERSION",
    "available",
    "clear_cache",
    "cross_encoder_similarity_batch",
    "default_embedding_model_path",
    "load_cross_encoder",
    "load_embedder",
    "sbert_similarity",
    "sbert_similarity_batch",
]
