"""`runs compare` and failure classes: class shares keep their Wilson intervals but are no hypotheses in
Holm's family, and a query that changed class is shown as a move, not as improved or regressed."""

from __future__ import annotations

import pytest

from ragmeter.experiments.compare import compare
from ragmeter.experiments.render import ComparisonReport
from ragmeter.metrics.diagnosis import FAILURE_CLASSES, class_metric
from ragmeter.models import EvalRunResult, MetricResult, MetricSummary, QueryEvalResult

N = 12


def run(run_id: str, classes: list[str], f1: list[float]) -> EvalRunResult:
    per_query = []
    for i, (name, value) in enumerate(zip(classes, f1, strict=True)):
        metrics = {"token_f1": MetricResult(name="token_f1", value=value)}
        for c in FAILURE_CLASSES:
            metrics[class_metric(c)] = MetricResult(name=class_metric(c), value=float(c == name))
        per_query.append(QueryEvalResult(query_id=f"q{i:02d}", question=f"question {i}?", metrics=metrics))
    aggregate = {"token_f1": MetricSummary(mean=sum(f1) / len(f1), std=0.1, n=len(f1))}
    for c in FAILURE_CLASSES:
        share = classes.count(c) / len(classes)
        aggregate[class_metric(c)] = MetricSummary(
            mean=share,
            std=None,
            n=len(classes),
            ci95=(max(0.0, share - 0.2), min(1.0, share + 0.2)),
            ci_method="wilson",
        )
    return EvalRunResult(run_id=run_id, per_query=per_query, aggregate=aggregate)


def test_class_shares_are_not_in_holm_and_a_class_move_is_a_move() -> None:
    a = run("A", ["no_relevant_retrieved"] * 6 + ["correct"] * 6, [0.0] * 6 + [1.0] * 6)
    b = run(
        "B",
        ["relevant_not_in_context"] * 3 + ["no_relevant_retrieved"] * 3 + ["correct"] * 6,
        [0.2] * 6 + [1.0] * 6,
    )
    c = compare(a, b, n_resamples=500, top=None)
    rows = {r["metric"]: r for r in c["metrics"]}
    f1 = rows["token_f1"]
    # token_f1 is the only hypothesis: Holm over a family of one leaves its p-value as it is
    assert f1["p_holm"] == pytest.approx(f1["p_perm"]) and f1["p_perm"] is not None
    moved = rows[class_metric("no_relevant_retrieved")]
    assert moved["p_holm"] is None and moved["p_perm"] is None and moved["ci95"] is None
    assert moved["wilson"]["a"] == pytest.approx([0.3, 0.7]) and moved["delta"] == pytest.approx(-0.25)
    changes = c["queries"][class_metric("no_relevant_retrieved")]
    assert set(changes) == {"moved"} and [e["query_id"] for e in changes["moved"]] == ["q00", "q01", "q02"]
    assert all(
        e["from"] == "no_relevant_retrieved" and e["to"] == "relevant_not_in_context"
        for e in changes["moved"]
    )
    report = ComparisonReport(a="A", comparisons=[c], seed=42, resamples=500, per_query=True)
    text = report.to_markdown()
    assert "moved no_relevant_retrieved -> relevant_not_in_context" in text and "Wilson" in text
    class_lines = [line for line in text.splitlines() if "class_" in line]
    assert class_lines and not any("improved" in line or "regressed" in line for line in class_lines)
