"""Selective answering: when a system returns a `confidence` with its answers, the risk-coverage curve and
its area (AURC). Answers are ranked by confidence, highest first; answering only those at or above a
threshold gives a coverage (the share answered) and a risk (the share of those that are not correct, a
declined answer counting as not correct). Tied confidences enter together: one point per distinct
confidence. The area is the mean over k = 1..n of the risk of the top k (each of a tie group taking the
group's risk), the discrete AURC of Geifman & El-Yaniv; lower is better, and `risk` at full coverage is what a
confidence that ranked at random would give on average.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.models import EvalQuery, QueryEvalResult
from ragmeter.score.outcome import outcome


def risk_coverage(
    results: Sequence[QueryEvalResult],
    queries: Mapping[str, EvalQuery],
    *,
    correct_if: str | None = None,
) -> dict[str, Any] | None:
    """The curve and its area over the answers with a confidence and a known outcome (None: no answer has
    a confidence)."""
    from ragmeter.score.classes import parse_rule

    rule = parse_rule(correct_if)
    scored: list[tuple[float, bool]] = []
    unknown = 0
    for r in results:
        if r.status != "ok" or r.confidence is None or r.query_id not in queries:
            continue
        got = outcome(queries[r.query_id], r, rule)
        if got is None:
            unknown += 1
            continue
        scored.append((r.confidence, got[0] == "correct"))
    if not scored and not unknown:
        return None
    scored.sort(key=lambda t: -t[0])
    n = len(scored)
    points: list[dict[str, Any]] = []
    area = 0.0
    wrong = i = 0
    while i < n:
        j = i
        while j < n and scored[j][0] == scored[i][0]:
            wrong += not scored[j][1]
            j += 1
        risk = wrong / j
        area += risk * (j - i)
        points.append({"threshold": scored[i][0], "coverage": j / n, "risk": risk, "n_answered": j})
        i = j
    return {
        "n": n,
        "n_without_outcome": unknown,
        "points": points,
        "aurc": area / n if n else None,
        "risk_at_full_coverage": points[-1]["risk"] if points else None,
        "method": "discrete AURC (Geifman & El-Yaniv 2017): mean risk of the top k over k = 1..n; ties enter "
        "together",
    }
