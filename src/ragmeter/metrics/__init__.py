"""The metric registry: one record per metric, read by every consumer.

    import ragmeter.metrics as rm
    rm.get("ndcg@10").higher_is_better      # True
    rm.get("hallucination_rate").range      # (0.0, 1.0)
    rm.register("answer_length", lambda i: float(len((i.answer or "").split())),
                range=(0, None), higher_is_better=False, scale="words")

`ragmeter metrics list [--format json]` prints the registry.
"""

from __future__ import annotations

from ragmeter.metrics import builtin as _builtin
from ragmeter.metrics import diagnosis as _diagnosis
from ragmeter.metrics.registry import (
    canonical,
    check,
    family_of,
    get,
    headline,
    higher_is_better,
    known_names,
    lookup,
    register,
    sort_key,
    specs,
    unregister,
)
from ragmeter.metrics.spec import MetricSpec, ScoreInput

_builtin.load()
_diagnosis.load()
_builtin.name_computations()

__all__ = [
    "MetricSpec",
    "ScoreInput",
    "canonical",
    "check",
    "family_of",
    "get",
    "headline",
    "higher_is_better",
    "known_names",
    "lookup",
    "register",
    "sort_key",
    "specs",
    "unregister",
]
