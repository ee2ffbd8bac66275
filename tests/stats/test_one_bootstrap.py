"""One bootstrap: every public interval (a run's summary, a comparison's mean difference and d_z, diagnose's
attribution, judge repeat stability, judge-human agreement) comes from `ragmeter.stats.resample.bootstrap`.

A spy replaces that function, records each call (units, resample count, seed) and what it returned; each
public interval must then be the percentile interval of the recorded draws, under the caller's seed and
count. Given the same values, seed and count, the uses that resample the same units draw the very same
resamples."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from ragmeter.diagnose.attribution import attribute
from ragmeter.experiments.significance import compare_runs
from ragmeter.metrics.aggregate import summarize
from ragmeter.models import EvalRunResult, MetricResult, QueryEvalResult
from ragmeter.stats import resample
from ragmeter.stats.krippendorff import repeat_stability
from ragmeter.validity.agreement import agreement

VALUES = [0.12, 0.5, 0.33, 0.9, 0.71, 0.05, 0.64, 0.28, 0.47, 0.83, 0.19, 0.56]
SEED = 7
N = 400


@dataclass
class Call:
    n_units: int
    n_resamples: int
    seed: Any
    idx: np.ndarray
    result: resample.Bootstrap


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[Call]:
    seen: list[Call] = []
    real = resample.bootstrap

    def spy(statistic: Any, n_units: int, **kw: Any) -> resample.Bootstrap:
        drawn: list[np.ndarray] = []

        def recording(idx: np.ndarray) -> Any:
            drawn.append(idx.copy())
            return statistic(idx)

        out = real(recording, n_units, **kw)
        seen.append(Call(n_units, kw["n_resamples"], kw["seed"], np.concatenate(drawn), out))
        return out

    monkeypatch.setattr(resample, "bootstrap", spy)
    return seen


def _interval(call: Call, column: int | None = None) -> tuple[float, float]:
    draws = call.result.draws if column is None else call.result.draws[:, column]
    ci = resample.percentile_interval(draws, call.result.confidence)
    assert ci is not None
    return ci


def test_run_summary_interval(calls: list[Call]) -> None:
    s = summarize("mrr", VALUES, seed=SEED)
    assert s.ci_method == "bootstrap-percentile"
    (call,) = calls
    assert (call.n_units, call.n_resamples, call.seed) == (len(VALUES), 2000, SEED)
    assert s.ci95 == pytest.approx(_interval(call))


def test_compare_mean_and_dz_intervals(calls: list[Call]) -> None:
    a = {f"q{i:02d}": {"mrr": 0.4} for i in range(len(VALUES))}
    b = {f"q{i:02d}": {"mrr": 0.4 + v - 0.45} for i, v in enumerate(VALUES)}
    m = compare_runs(a, b, seed=SEED, n_resamples=N).get("mrr")
    mean_call = next(c for c in calls if c.result.draws.ndim == 1)
    dz_call = next(c for c in calls if c.result.draws.ndim == 2)
    assert len(calls) == 2 and {mean_call.n_resamples, dz_call.n_resamples} == {N}
    assert m.ci95 == pytest.approx(_interval(mean_call))
    assert m.dz_ci95 == pytest.approx(_interval(dz_call, 1))
    # the same pairs resampled under the two streams of the metric's seed (documented: seed and seed + 2)
    assert dz_call.seed == mean_call.seed + 2


def test_diagnose_attribution_intervals(calls: list[Call]) -> None:
    def run(shift: float) -> EvalRunResult:
        return EvalRunResult(
            per_query=[
                QueryEvalResult(
                    query_id=f"q{i:02d}", metrics={"f1": MetricResult(name="f1", value=min(1.0, v + shift))}
                )
                for i, v in enumerate(VALUES)
            ]
        )

    runs = {"run": run(0.0), "oracle-rank": run(0.05), "oracle-context": run(0.1)}
    out = attribute("f1", runs, seed=SEED, n_resamples=N)
    (call,) = calls
    assert (call.n_units, call.n_resamples, call.seed) == (len(VALUES), N, SEED)
    for i, part in enumerate(("ranking_and_context", "retrieval", "generation")):
        assert out["parts"][part]["ci95"] == pytest.approx(list(_interval(call, i)))


def test_repeat_stability_interval(calls: list[Call]) -> None:
    v = np.asarray(VALUES)
    grades = np.stack([v, np.roll(v, 1) * 0.3 + v * 0.7, v * 0.9 + 0.05], axis=1)
    result = repeat_stability(grades, level="interval", threshold=0.5, n_resamples=N, seed=SEED)
    (call,) = calls
    assert (call.n_units, call.n_resamples, call.seed) == (len(VALUES), N, SEED)
    assert result.interval == pytest.approx(_interval(call))


def test_agreement_intervals(calls: list[Call]) -> None:
    human = [round(v * 3) for v in VALUES]
    judge = [round(v * 3 + (0.6 if i % 3 == 0 else 0.0)) for i, v in enumerate(VALUES)]
    res = agreement(human, judge, labels=[0, 1, 2, 3], n_resamples=N, seed=SEED)
    assert len(calls) == 5 and all(
        (c.n_units, c.n_resamples, c.seed) == (len(VALUES), N, SEED) for c in calls
    )
    cis = [res.accuracy_ci, res.kappa_ci, res.weighted_kappa_ci, res.spearman_ci, res.kendall_ci]
    for ci, call in zip(cis, calls, strict=True):
        assert ci == pytest.approx(list(_interval(call)))


def test_the_same_units_and_seed_draw_the_same_resamples(calls: list[Call]) -> None:
    summarize("mrr", VALUES, seed=SEED)
    v = np.asarray(VALUES)
    repeat_stability(
        np.stack([v, v[::-1]], axis=1), level="interval", threshold=0.5, n_resamples=2000, seed=SEED
    )
    agreement(
        [round(x * 3) for x in VALUES], [round(x * 3) for x in VALUES[::-1]], n_resamples=2000, seed=SEED
    )
    first = calls[0].idx
    assert len(calls) == 7 and all(np.array_equal(c.idx, first) for c in calls)
