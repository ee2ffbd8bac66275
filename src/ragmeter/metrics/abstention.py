"""Registry records of the abstention rates (ragmeter.score.abstention computes them): each a 0/1 value per
query where the rate is defined, so that its mean is the rate, its n the denominator and its interval Wilson.
No name starts with `hallucination` (hallucination_rate is the lexical metric). The free detector's record,
abstained_lexical, is declared beside its phrase list (ragmeter.text.specs)."""

from __future__ import annotations

from ragmeter.metrics.registry import declare

COMPUTED_BY = "ragmeter.score.abstention:abstention_values"
# name -> (higher is better, the queries it is defined on, what 1 means)
ABSTENTION_METRICS: dict[str, tuple[bool, str, str]] = {
    "abstention_rate": (False, "answered queries", "the answer declined (abstained judge, else the phrases)"),
    "over_refusal_rate": (False, "answerable queries", "declined although the query is answerable"),
    "answered_unanswerable_rate": (False, "unanswerable queries", "answered although unanswerable"),
    "refusal_precision": (True, "queries that declined", "the query is unanswerable"),
    "refusal_recall": (True, "unanswerable queries", "the answer declined"),
    "correct_when_answered": (True, "queries that did not decline", "correct (or supported, no reference)"),
}


def load() -> None:
    for name, (higher, over, what) in ABSTENTION_METRICS.items():
        declare(
            name,
            "diagnosis",
            "run",
            ("question", "answer", "answerable"),
            (0.0, 1.0),
            higher_is_better=higher,
            interval="wilson",
            scale="rate",
            computed_by=COMPUTED_BY,
            description=f"share of {over} where {what}",
        )
