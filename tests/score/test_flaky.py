"""Flaky gates and the all-k pass from hand-made repeats (ragmeter.score.flaky): the share of repeat means on
the other side of a gate, its Wilson interval, the tolerance, a lower-is-better metric, a missing value."""

from __future__ import annotations

import pytest

from ragmeter.models import MetricResult, QueryEvalResult
from ragmeter.score.flaky import gates_across_repeats, pass_all_values, repeat_means
from ragmeter.stats.intervals import wilson


def _query(qid: str, name: str, values: list[float | None]) -> QueryEvalResult:
    repeats = [MetricResult(name=name, value=v) for v in values]
    return QueryEvalResult(query_id=qid, question="q", repeats={name: repeats})


def test_repeat_means_share_interval_and_tolerance() -> None:
    # repeat means: 0.9, 0.1, 0.7, 0.3 ... over two queries
    results = [
        _query("a", "relevance", [1.0, 0.0, 0.8, 0.2]),
        _query("b", "relevance", [0.8, 0.2, 0.6, 0.4]),
    ]
    assert repeat_means(results, "relevance") == pytest.approx([0.9, 0.1, 0.7, 0.3])
    out = gates_across_repeats(results, {"relevance": 0.5}, {"relevance": 0.45})
    g = out["relevance"]
    assert g.verdict == "pass" and g.other_side == 2 and g.share == 0.5 and g.flaky
    assert g.share_ci95 == pytest.approx(wilson(2, 4))
    assert not gates_across_repeats(results, {"relevance": 0.5}, {"relevance": 0.45}, tolerance=0.5)[
        "relevance"
    ].flaky
    # all repeat means on one side: stable
    assert not gates_across_repeats(results, {"relevance": 0.5}, {"relevance": 0.05})["relevance"].flaky


def test_lower_is_better_and_a_repeat_without_a_value() -> None:
    name = "rc_hallucination"  # lower is better
    results = [_query("a", name, [0.1, 0.2, None]), _query("b", name, [0.1, 0.4, None])]
    means = repeat_means(results, name)
    assert means[:2] == pytest.approx([0.1, 0.3]) and means[2] is None
    g = gates_across_repeats(results, {name: 0.2}, {name: 0.25})[name]
    # run mean 0.2 <= 0.25 passes; 0.3 fails; the repeat without a value fails the gate
    assert g.verdict == "pass" and g.other_side == 2 and g.flaky and not g.higher_is_better
    passes = pass_all_values(results, {name: 0.25})
    assert passes["a"][f"{name}_pass_all"].value == 0.0  # a repeat without a value does not pass
    clean = pass_all_values([_query("c", name, [0.1, 0.2])], {name: 0.25})
    assert clean["c"][f"{name}_pass_all"].value == 1.0


def test_a_metric_judged_once_is_never_flaky_and_all_null_is_null() -> None:
    once = [_query("a", "relevance", [0.9])]
    assert gates_across_repeats(once, {"relevance": 0.9}, {"relevance": 0.5}) == {}
    none = pass_all_values([_query("a", "relevance", [None, None])])
    assert none["a"]["relevance_pass_all"].value is None and none["a"]["relevance_pass_all"].error
    # without a gate the pass line is the middle of the metric's range (relevance: 0.5)
    assert pass_all_values([_query("b", "relevance", [0.5, 0.6])])["b"]["relevance_pass_all"].value == 1.0
