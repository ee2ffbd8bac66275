"""The registry records of the semantic metrics, beside the code that computes them (semantic/similarity.py).

A light module: it imports the record type only, never torch or a model (ragmeter.metrics.registry loads it
by name, FAMILY_MODULES).
"""

from __future__ import annotations

from ragmeter.metrics.spec import MetricSpec

_ANSWER = ("answer", "gold_answers")

SPECS: tuple[MetricSpec, ...] = (
    MetricSpec(
        "sbert_similarity",
        "semantic",
        "run",
        _ANSWER,
        (0.0, 1.0),
        True,
        version="all-MiniLM-L6-v2/torch-fp32-256-norm",  # model / backend-precision-max length-normalised
        description="cosine of answer and best gold answer embeddings, clipped to [0, 1]",
        headline=6,
        computed_by="ragmeter.semantic.similarity:sbert_similarity_batch",
    ),
    MetricSpec(
        "cross_encoder_similarity",
        "semantic",
        "run",
        _ANSWER,
        (0.0, 1.0),
        True,
        description="sigmoid of a cross-encoder's score of (gold, answer)",
        default=False,
        plannable=False,  # the library computes it (cross_encoder_similarity_batch); runs compute SBERT's
        computed_by="ragmeter.semantic.similarity:cross_encoder_similarity_batch",
    ),
)
