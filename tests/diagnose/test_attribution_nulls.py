"""Attribution's nulls: a claim metric null because the answer had no claims counts 0 (RAGChecker's value),
any other null leaves its query out and is named per part; lower-is-better metrics are not attributed."""

from __future__ import annotations

import pytest

from ragmeter.diagnose.attribution import answer_metrics, attribute, delta_metrics
from ragmeter.judges.claims import NO_RESPONSE_CLAIMS
from ragmeter.models import EvalRunResult, MetricResult, MetricSummary, QueryEvalResult

FAILED = "judge failed: LLMError: timed out after 3 tries"


def run(values: dict[str, float | str]) -> EvalRunResult:
    """A run whose rc_f1 per query is a number, or a null with that reason."""
    per_query = []
    for q, v in values.items():
        m = (
            MetricResult(name="rc_f1", value=v)
            if isinstance(v, float)
            else MetricResult(name="rc_f1", value=None, error=v)
        )
        per_query.append(QueryEvalResult(query_id=q, answer="a", metrics={"rc_f1": m}))
    return EvalRunResult(run_id="r", per_query=per_query)


def test_no_claim_nulls_count_zero_and_judge_failures_are_left_out_by_part() -> None:
    runs = {
        "run": run({"q1": NO_RESPONSE_CLAIMS, "q2": 0.5, "q3": 1.0, "q4": 0.25}),
        "oracle-rank": run({"q1": NO_RESPONSE_CLAIMS, "q2": 0.5, "q3": FAILED, "q4": 0.25}),
        "oracle-context": run({"q1": 1.0, "q2": 0.5, "q3": 1.0, "q4": FAILED}),
    }
    out = attribute("rc_f1", runs, n_resamples=200)
    # q1 counted 0 in the run and oracle-rank; q3 and q4 left out (a judge failure), the parts over q1, q2
    assert out["n"] == 2 and out["n_left_out"] == 2
    assert out["counted_as_zero"] == {"run": 1, "oracle-rank": 1, "oracle-context": 0}
    parts = out["parts"]
    assert parts["ranking_and_context"]["mean"] == pytest.approx(0.0, abs=1e-12)
    assert parts["retrieval"]["mean"] == pytest.approx((1.0 + 0.0) / 2, abs=1e-12)
    assert parts["generation"]["mean"] == pytest.approx((0.0 + 0.5) / 2, abs=1e-12)
    assert out["gap"] == pytest.approx(1 - (0.0 + 0.5) / 2, abs=1e-12)
    # each part names the queries its own runs' nulls left out, with why
    assert parts["ranking_and_context"]["left_out"] == {f"oracle-rank: {FAILED}": 1}
    assert parts["retrieval"]["left_out"] == {f"oracle-rank: {FAILED}": 1, f"oracle-context: {FAILED}": 1}
    assert parts["generation"]["left_out"] == {f"oracle-context: {FAILED}": 1}
    assert (
        parts["ranking_and_context"]["counted_as_zero"] == 2 and parts["generation"]["counted_as_zero"] == 0
    )


def test_only_higher_is_better_answer_metrics_are_attributed() -> None:
    summary = MetricSummary(mean=0.5, std=0.1, n=3)
    names = ("rc_f1", "rc_hallucination", "answer_correctness", "ndcg@3", "rc_self_knowledge")
    parent = EvalRunResult(run_id="r", aggregate=dict.fromkeys(names, summary))
    assert set(answer_metrics(parent, None)) == {"rc_f1", "answer_correctness"}
    assert set(delta_metrics(parent, None)) == {"rc_hallucination", "rc_self_knowledge"}
    # named: a lower-is-better one goes to the deltas, never into the lost points
    assert answer_metrics(parent, ["rc_hallucination"]) == []
    assert delta_metrics(parent, ["rc_hallucination"]) == ["rc_hallucination"]
