"""Every rc_* value equals RAGChecker 0.1.9's per-result function for the same verdicts, where both are
defined; where RAGChecker returns 0 by convention (no claims, no chunks, nothing recalled), ours is null
with a reason.

ragchecker is installed with `pip install --no-deps ragchecker==0.1.9` (its refchecker dependency pins an
old anthropic client); its evaluator imports refchecker at import time, so a stub module stands in for it.
"""

from __future__ import annotations

import random
import sys
import types
from typing import Any

import pytest

from ragmeter.judges.claims import RC_METRICS, ClaimChecks


def _ragchecker() -> Any:
    if "refchecker" not in sys.modules:
        stub = types.ModuleType("refchecker")
        extractor = types.ModuleType("refchecker.extractor")
        checker = types.ModuleType("refchecker.checker")
        extractor.LLMExtractor = object  # type: ignore[attr-defined]
        for name in ("LLMChecker", "NLIChecker", "AlignScoreChecker"):
            setattr(checker, name, object)
        sys.modules.update(
            {"refchecker": stub, "refchecker.extractor": extractor, "refchecker.checker": checker}
        )
    computation = pytest.importorskip(
        "ragchecker.computation",
        reason="pip install --no-deps ragchecker==0.1.9 (and loguru, dataclasses-json)",
    )
    container = pytest.importorskip("ragchecker.container")
    return computation, container


OURS_TO_THEIRS = {
    "rc_precision": "precision",
    "rc_recall": "recall",
    "rc_f1": "f1",
    "rc_claim_recall": "claim_recall",
    "rc_context_precision": "context_precision",
    "rc_context_utilization": "context_utilization",
    "rc_noise_sensitivity_relevant": "noise_sensitivity_in_relevant",
    "rc_noise_sensitivity_irrelevant": "noise_sensitivity_in_irrelevant",
    "rc_hallucination": "hallucination",
    "rc_self_knowledge": "self_knowledge",
    "rc_faithfulness": "faithfulness",
}
LABELS = ("Entailment", "Neutral", "Contradiction")


def _case(rng: random.Random) -> tuple[dict[str, Any], ClaimChecks]:
    n_resp, n_ref, n_chunks = rng.choice([0, 1, 2, 3, 5]), rng.choice([0, 1, 2, 4]), rng.choice([1, 2, 3, 4])
    p = rng.random()

    def label() -> str:
        return "Entailment" if rng.random() < p else rng.choice(LABELS[1:])

    a2r = [label() for _ in range(n_resp)]
    r2a = [label() for _ in range(n_ref)]
    c2r = [[label() for _ in range(n_chunks)] for _ in range(n_resp)]
    c2a = [[label() for _ in range(n_chunks)] for _ in range(n_ref)]
    theirs = {
        "answer2response": a2r,
        "response2answer": r2a,
        "retrieved2response": c2r,
        "retrieved2answer": c2a,
    }

    def b(xs: list[str]) -> list[bool]:
        return [x == "Entailment" for x in xs]

    ours = ClaimChecks(b(a2r), b(r2a), [b(r) for r in c2r], [b(r) for r in c2a], n_chunks=n_chunks)
    return theirs, ours


def test_every_rc_metric_equals_ragchecker_where_both_are_defined() -> None:
    computation, container = _ragchecker()
    rng = random.Random(20)
    compared = nulls = 0
    for i in range(400):
        theirs_in, ours = _case(rng)
        for name, (fn, _) in RC_METRICS.items():
            their_name = OURS_TO_THEIRS[name]
            result = container.RAGResult(query_id=str(i), query="q", gt_answer="g", response="r", **theirs_in)
            try:
                computation.METRIC_FUNC_MAP[their_name](result)
                theirs: float | None = float(result.metrics[their_name])
            except IndexError:  # RAGChecker 0.1.9 crashes on an empty claim list in some metrics
                theirs = None
            value, reason = fn(ours)
            if value is None:
                assert reason, name
                assert theirs in (None, 0.0), f"{name}: ours null ({reason}), RAGChecker {theirs}"
                nulls += 1
            else:
                assert reason is None
                assert theirs is not None, name
                assert value == pytest.approx(theirs, abs=1e-12), (name, theirs_in)
                compared += 1
    assert compared > 2000 and nulls > 100  # both branches were exercised


def test_conventions_are_null_with_reasons() -> None:
    empty = ClaimChecks([], [], [], [], n_chunks=2)
    for name, (fn, _) in RC_METRICS.items():
        value, reason = fn(empty)
        assert value is None and reason, name
    nothing_recalled = ClaimChecks(
        [True], [False, True], [[False, False]], [[False, False], [False, False]], 2
    )
    value, reason = RC_METRICS["rc_context_utilization"][0](nothing_recalled)
    assert value is None and reason and "no reference claim" in reason
    # f1 with a zero side is a measured 0, not a convention
    assert RC_METRICS["rc_f1"][0](ClaimChecks([False], [True], n_chunks=0)) == (0.0, None)
