"""Registry records of the diagnosis family: one 0/1 metric per failure class, registered through the
registry's public `declare`. Failure classes are assigned by ragmeter.score.classes.

RAGChecker's claim-level judges (rc_*) declare their records beside their code, in ragmeter.judges.specs.
"""

from __future__ import annotations

from typing import Any

from ragmeter.metrics.registry import declare

# In the order they are assigned (the first that holds); exactly one is 1 for each scored query.
FAILURE_CLASSES: dict[str, str] = {
    "no_relevant_retrieved": "no relevant document (qrels) in the retrieved list",
    "relevant_not_in_context": "relevant documents retrieved, none among the generator's contexts",
    "answer_wrong_with_evidence": "a relevant context was given and the answer is wrong",
    "unsupported": "the answer is right but not supported by its contexts",
    # Without qrels: from the context_sufficiency judge crossed with the outcome (ragmeter.score.outcome).
    "insufficient_context": "no qrels; the contexts do not suffice and the answer declined (retrieval, handled)",
    "answered_beyond_context": "no qrels; the contexts do not suffice and the query was answered (retrieval)",
    "over_refused": "no qrels; the contexts suffice and the answer declined (generation)",
    "wrong_with_sufficient_context": "no qrels; the contexts suffice and the answer is wrong or unsupported",
    "correct": "a relevant context (or, without qrels, sufficient contexts) was given and the answer is right",
    "unknown": "not classified: an input is missing (no qrels nor sufficiency, no answer, no correctness)",
}
CLASS_PREFIX = "class_"


def class_metric(name: str) -> str:
    return CLASS_PREFIX + name


def load() -> None:
    for name, what in FAILURE_CLASSES.items():
        declare(
            class_metric(name),
            "diagnosis",
            "run",
            ("qrels", "retrieved", "contexts", "answer"),
            (0.0, 1.0),
            higher_is_better=name == "correct",
            interval="wilson",
            scale="rate",
            computed_by="ragmeter.score.classes:class_of",
            description=f"failure class: {what}",
        )


def __getattr__(name: str) -> Any:
    """RC_SPECS moved beside the rc_* judges (ragmeter.judges.specs): still readable here, with a warning.
    Rebuilt from the registry's records (which load the judges' declarations), so that metrics/ imports no
    family module."""
    import warnings

    from ragmeter.metrics.registry import specs

    if name != "RC_SPECS":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        "ragmeter.metrics.diagnosis.RC_SPECS is deprecated: use ragmeter.judges.specs.RC_SPECS",
        DeprecationWarning,
        stacklevel=2,
    )
    return {
        s.name: (s.higher_is_better, s.description.removeprefix("RAGChecker: "))
        for s in specs()
        if s.name.startswith("rc_")
    }
