"""Semantic similarity metrics (optional extra `ragmeter[semantic]`: torch + sentence-transformers).

Importing this package is cheap: the model helpers import no numpy or torch, the similarity functions are
imported from their module on first use (so the registry reads `semantic/specs.py` without numpy), and
torch and sentence-transformers load on the first model load. See docs/generation_metrics.md.
"""

from __future__ import annotations

from ragmeter._lazy import by_module, lazy_getattr
from ragmeter.semantic import models as _models

_LAZY = by_module(
    {
        "ragmeter.semantic.models": _models.__all__,
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
