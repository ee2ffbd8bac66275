"""The metric registry: one record per metric, read by every consumer.

    import ragmeter.metrics as rm
    rm.get("ndcg@10").higher_is_better      # True
    rm.get("hallucination_rate").range      # (0.0, 1.0)
    rm.register("answer_length", lambda i: float(len((i.answer or "").split())),
                range=(0, None), higher_is_better=False, scale="words")

`ragmeter metrics list [--format json]` prints the registry. Each family declares its records beside its
code; the lexical, semantic and judge records load on first need (registry.FAMILY_MODULES), so importing
this package loads no judge, model or text metric.
"""

from __future__ import annotations

from ragmeter.metrics import abstention as _abstention
from ragmeter.metrics import builtin as _builtin
from ragmeter.metrics import diagnosis as _diagnosis
from ragmeter.metrics.registry import (
    HEADLINE_K,
    canonical,
    check,
    family_of,
    get,
    headline,
    headline_cutoff,
    higher_is_better,
    known_names,
    load_families,
    lookup,
    names,
    register,
    sort_key,
    specs,
    unregister,
)
from ragmeter.metrics.spec import MetricSpec, ScoreInput

_builtin.load()
_diagnosis.load()
_abstention.load()

__all__ = [
    "HEADLINE_K",
    "MetricSpec",
    "ScoreInput",
    "canonical",
    "check",
    "family_of",
    "get",
    "headline",
    "headline_cutoff",
    "higher_is_better",
    "known_names",
    "load_families",
    "lookup",
    "names",
    "register",
    "sort_key",
    "specs",
    "unregister",
]
