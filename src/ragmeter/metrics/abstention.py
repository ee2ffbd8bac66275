"""Registry records of the abstention rates (ragmeter.score.abstention computes them): each a 0/1 value per
query where the rate is defined, so that its mean is the rate, its n the denominator and its interval Wilson.
No name starts with `hallucination` (hallucination_rate is the lexical metric). The free detector's record,
abstained_lexical, is declared with its phrase list and carries the list's version."""

from __future__ import annotations

import hashlib

from ragmeter.metrics.registry import declare

# The free abstention detector's phrase list (matched by ragmeter.text.abstention), declared here with its
# record so that the record carries its version. Bump PHRASES_NUMBER whenever the list changes (the digest
# changes by itself).
PHRASES_NUMBER = 1
# Each a phrase that, in a short QA answer, says the question is not answered.
REFUSAL_PHRASES: tuple[str, ...] = (
    "i don't know",
    "i do not know",
    "i'm not sure",
    "i am not sure",
    "i cannot answer",
    "i can't answer",
    "i am unable to",
    "i'm unable to",
    "unable to answer",
    "unable to determine",
    "cannot be answered",
    "can't be answered",
    "cannot be determined",
    "can't be determined",
    "cannot determine",
    "can't determine",
    "not enough information",
    "insufficient information",
    "no information about",
    "no information on",
    "there is no information",
    "does not contain information",
    "do not contain information",
    "doesn't contain information",
    "does not provide information",
    "do not provide information",
    "doesn't provide information",
    "does not mention",
    "do not mention",
    "doesn't mention",
    "is not mentioned",
    "are not mentioned",
    "not provided in",
    "not specified in",
    "not stated in",
    "not available in",
    "i could not find",
    "i couldn't find",
    "no answer",
    "unanswerable",
)
PHRASES_VERSION = (
    f"refusal-phrases/v{PHRASES_NUMBER}+"
    + hashlib.sha256("\n".join(REFUSAL_PHRASES).encode()).hexdigest()[:8]
)

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
    declare(
        "closed_book_correct",
        "diagnosis",
        "run",
        ("answer", "gold_answers"),
        (0.0, 1.0),
        interval="wilson",
        scale="0/1",
        plannable=False,  # computed by `diagnose --also closed-book`, stored on the run it diagnosed
        computed_by="ragmeter.diagnose.closed_book:closed_book_values",
        description="1 if the generator, replayed with no context, still answers correctly (the run's rule)",
    )
    declare(
        "abstained_lexical",
        "diagnosis",
        "run",
        ("answer",),
        (0.0, 1.0),
        higher_is_better=False,
        interval="wilson",
        scale="0/1",
        version=PHRASES_VERSION,
        default=False,
        computed_by="ragmeter.score.abstention:abstention_values",
        description="1 if the answer contains a declared refusal phrase (the abstained judge's free fallback)",
    )
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
            computed_by="ragmeter.score.abstention:abstention_values",
            description=f"share of {over} where {what}",
        )
