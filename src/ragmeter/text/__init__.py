"""Lexical generation metrics (pure Python): SQuAD exact match and token F1, ROUGE-L, answer relevance,
support coverage / density and hallucination rate. See docs/generation_metrics.md."""

from __future__ import annotations

from ragmeter.text.metrics import (
    METRIC_VERSION,
    answer_relevance,
    exact_match,
    hallucination_rate,
    lcs_length,
    lexical_metrics,
    rouge_l,
    support_coverage,
    support_density,
    token_f1,
)
from ragmeter.text.normalize import STOP_WORDS, normalize_answer, tokenize

__all__ = [
    "METRIC_VERSION",
    "STOP_WORDS",
    "answer_relevance",
    "exact_match",
    "hallucination_rate",
    "lcs_length",
    "lexical_metrics",
    "normalize_answer",
    "rouge_l",
    "support_coverage",
    "support_density",
    "token_f1",
    "tokenize",
]
