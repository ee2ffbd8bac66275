"""Registry records of the diagnosis family (one 0/1 metric per failure class) and of RAGChecker's
claim-level judges (rc_*), registered through the registry's public `declare`.

Failure classes are assigned by ragmeter.score.classes; the rc_* values by ragmeter.judges.ragchecker.
"""

from __future__ import annotations

from ragmeter.judges.prompts import RC_EXTRACT
from ragmeter.metrics.registry import declare

# In the order they are assigned (the first that holds); exactly one is 1 for each scored query.
FAILURE_CLASSES: dict[str, str] = {
    "no_relevant_retrieved": "no relevant document (qrels) in the retrieved list",
    "relevant_not_in_context": "relevant documents retrieved, none among the generator's contexts",
    "answer_wrong_with_evidence": "a relevant context was given and the answer is wrong",
    "unsupported": "the answer is right but not supported by its contexts",
    "correct": "a relevant context was given and the answer is right and supported",
    "unknown": "not classified: an input is missing (no qrels, no answer, no correctness signal)",
}
CLASS_PREFIX = "class_"

RC_SPECS: dict[str, tuple[bool, str]] = {
    "rc_precision": (True, "answer claims entailed by the reference answer"),
    "rc_recall": (True, "reference-answer claims entailed by the answer"),
    "rc_f1": (True, "harmonic mean of rc_precision and rc_recall"),
    "rc_claim_recall": (True, "reference claims entailed by some context"),
    "rc_context_precision": (True, "contexts that entail some reference claim (relevant chunks)"),
    "rc_context_utilization": (True, "of the reference claims in the contexts, those the answer states"),
    "rc_noise_sensitivity_relevant": (False, "incorrect answer claims entailed by a relevant context"),
    "rc_noise_sensitivity_irrelevant": (
        False,
        "incorrect answer claims entailed only by irrelevant contexts",
    ),
    "rc_hallucination": (False, "incorrect answer claims entailed by no context"),
    "rc_self_knowledge": (False, "correct answer claims entailed by no context (lower = more grounded)"),
    "rc_faithfulness": (True, "answer claims entailed by some context"),
}


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
            description=f"failure class: {what}",
        )
    for name, (higher, what) in RC_SPECS.items():
        needs = ("question", "answer", "ground_truth", "contexts", "judge")
        declare(
            name,
            "judge",
            "query",
            needs,
            (0.0, 1.0),
            higher_is_better=higher,
            default=False,
            version=RC_EXTRACT.version,  # every rc_* judge asks RC_EXTRACT (and its follow-up RC_CHECK)
            description=f"RAGChecker: {what}",
        )
