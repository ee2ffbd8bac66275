"""The stability block of a run judged in repeats: the level of measurement and the flip threshold come from
the metric registry (and the gate), the statistics from ragmeter.score.stability."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter.models import MetricResult, QueryEvalResult
from ragmeter.score.stability import judge_stability
from ragmeter.stats.krippendorff import krippendorff_alpha


def _query(qid: str, name: str, values: list[float | None]) -> QueryEvalResult:
    repeats = [MetricResult(name=name, value=v) for v in values]
    return QueryEvalResult(query_id=qid, repeats={name: repeats})


def test_a_zero_one_judge_is_measured_at_the_interval_level_around_mid_range() -> None:
    rows = [[0.2, 0.3, 0.1], [0.9, 0.4, 0.8], [0.6, 0.6, None], [None, 0.7, None], [0.5, 0.55, 0.45]]
    per_query = [_query(f"q{i}", "groundedness", r) for i, r in enumerate(rows)]
    failed = QueryEvalResult(query_id="x", status="failed", repeats={"groundedness": []})
    out = judge_stability(["groundedness"], [*per_query, failed], temperature=0.7, seeds=[1, 2, 3])
    s = out["groundedness"]
    grades = np.array([[np.nan if v is None else v for v in r] for r in rows])
    assert s.level == "interval" and s.alpha == pytest.approx(krippendorff_alpha(grades, "interval"))
    assert s.items == 4  # q3 has one valid repeat: no pair to compare
    assert (s.threshold, s.threshold_from) == (0.5, "mid-range")
    assert s.flip_share == pytest.approx(2 / 4)  # q1 (0.4 < 0.5 <= 0.8) and q4 (0.45 < 0.5 <= 0.5, 0.55)
    gated = judge_stability(
        ["groundedness"], per_query, temperature=None, seeds=[None], thresholds={"groundedness": 0.25}
    )
    g = gated["groundedness"]
    assert g.threshold_from == "gate" and g.flip_share == pytest.approx(1 / 4)  # only q0 crosses 0.25
