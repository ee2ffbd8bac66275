"""The registry records of the lexical metrics, beside the code that computes them (text/metrics.py).

A light module: it imports the record type only, so the registry can collect these records without loading
the metrics themselves (ragmeter.metrics.registry.FAMILY_MODULES).
"""

from __future__ import annotations

from typing import Any

from ragmeter.metrics.spec import MetricSpec

VERSION = "squad-v1.1"  # SQuAD v1.1 normalisation and matching (text/normalize.py)
_GOLDS, _CONTEXTS = ("answer", "gold_answers"), ("answer", "contexts")


def _lexical(name: str, inputs: tuple[str, ...], description: str, **extra: Any) -> MetricSpec:
    """A lexical metric: per query, in [0, 1], computed by the function of the same name in text/metrics.py."""
    computed_by = f"ragmeter.text.metrics:{name}"
    shown: dict[str, Any] = {"version": VERSION, "description": description, "computed_by": computed_by}
    return MetricSpec(
        name, "lexical", "query", inputs, (0.0, 1.0), extra.pop("higher_is_better", True), **shown, **extra
    )


SPECS: tuple[MetricSpec, ...] = (
    _lexical(
        "exact_match",
        _GOLDS,
        "normalised answer equals a gold answer (SQuAD rules)",
        interval="wilson",
        aliases=("em",),
    ),
    _lexical(
        "token_f1", _GOLDS, "token F1 against the best gold answer (SQuAD rules)", aliases=("f1",), headline=4
    ),
    _lexical("rouge_l", _GOLDS, "ROUGE-L F against the best gold", headline=5),
    _lexical("answer_relevance", ("answer", "question"), "token F1 of the answer against the question"),
    _lexical("support_coverage", _CONTEXTS, "share of answer tokens found in the retrieved contexts"),
    _lexical("support_density", _CONTEXTS, "share of the answer covered by spans copied from the contexts"),
    _lexical(
        "hallucination_rate",
        _CONTEXTS,
        "share of answer tokens found in no retrieved context",
        higher_is_better=False,
    ),
)
