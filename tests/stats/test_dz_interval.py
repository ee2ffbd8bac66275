"""Cohen's d_z and its interval as docs/experiments.md describes them: a percentile bootstrap of mean / sd over
the resampled pairs, nothing widened; a resample whose differences all tie gives 0 (tied at 0) or +-inf (tied
elsewhere), and those resamples are kept; the sd is two-pass, so a tie is an exact 0, never a rounding
residue. The reference below recomputes each resample's d_z in plain Python from the very indices the
bootstrap drew (captured by a spy on `ragmeter.stats.resample.bootstrap`)."""

from __future__ import annotations

import math
import statistics
from typing import Any

import numpy as np
import pytest

from ragmeter.experiments.significance import compare_runs
from ragmeter.stats import effects, resample

# 4,001 resamples: the 2.5% / 97.5% and 25% / 75% points fall on (or within 1e-13 of) order statistics.
B = 4001


def _reference_dz(x: list[float]) -> float:
    if min(x) == max(x):
        return 0.0 if x[0] == 0.0 else math.copysign(math.inf, x[0])
    return statistics.fmean(x) / statistics.stdev(x)


def _captured(monkeypatch: pytest.MonkeyPatch) -> list[np.ndarray]:
    """Every index matrix the bootstrap hands to a statistic, in order."""
    seen: list[np.ndarray] = []
    real = resample.bootstrap

    def spy(statistic: Any, n_units: int, **kw: Any) -> resample.Bootstrap:
        def recording(idx: np.ndarray) -> Any:
            seen.append(idx.copy())
            return statistic(idx)

        return real(recording, n_units, **kw)

    monkeypatch.setattr(resample, "bootstrap", spy)
    return seen


def _reference_interval(
    d: np.ndarray, idx: np.ndarray, confidence: float, codes: np.ndarray | None = None
) -> tuple[float, float]:
    rows = []
    for row in idx:
        if codes is None:
            drawn = [float(d[i]) for i in row]
        else:  # every query of each drawn cluster, as often as the cluster is drawn
            drawn = [float(d[q]) for c in row for q in np.flatnonzero(codes == c)]
        rows.append(_reference_dz(drawn))
    rows.sort()
    tail = (1.0 - confidence) / 2.0
    return rows[round(tail * (len(rows) - 1))], rows[round((1.0 - tail) * (len(rows) - 1))]


@pytest.mark.parametrize("confidence", [0.5, 0.95])
@pytest.mark.parametrize(
    "d",
    [
        [0.1, 0.3, 0.2, 0.4, 0.0, 0.2, -0.1, 0.25, 0.05],  # n = 9: widening by sqrt(9/8) moved ends ~0.04
        [0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.2],  # many resamples tie at 0
        [0.25, 0.25, 0.25, 0.25, 0.0, 0.25],  # many resamples tie at 0.25 (d_z +inf)
        [-0.5, -0.5, -0.5, -0.5, -0.5, 0.1, -0.5],  # ties at -0.5 (d_z -inf)
    ],
)
def test_dz_interval_is_the_plain_percentile_bootstrap_of_the_same_resamples(
    monkeypatch: pytest.MonkeyPatch, d: list[float], confidence: float
) -> None:
    seen = _captured(monkeypatch)
    arr = np.asarray(d)
    out = effects.bootstrap_summary(arr, n_resamples=B, seed=11, confidence=confidence)
    idx = np.concatenate(seen)
    assert idx.shape == (B, arr.size)
    lo, hi = _reference_interval(arr, idx, confidence)
    assert out["dz"] == pytest.approx(_reference_dz(d))
    assert out["dz_ci95"] == pytest.approx((lo, hi), rel=1e-9, abs=1e-12)


def test_clustered_dz_interval_resamples_clusters_and_is_not_widened(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _captured(monkeypatch)
    d = np.array([0.1, 0.3, 0.0, 0.2, 0.4, 0.0, -0.2, 0.1, 0.3, 0.0])
    codes = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
    out = effects.bootstrap_summary(d, codes, n_resamples=B, seed=5, confidence=0.5)
    idx = np.concatenate(seen)
    assert idx.shape == (B, 5)
    assert out["dz_ci95"] == pytest.approx(_reference_interval(d, idx, 0.5, codes), rel=1e-9)
    assert "sqrt(G/(G-1))" in out["ci95_method"]


def test_one_loss_among_ties_at_zero_gives_an_interval_that_holds_zero() -> None:
    # today's main printed d_z -0.22 [-0.48, -0.22] here: the all-zero resamples were dropped
    s = effects.bootstrap_summary(np.array([0.0] * 20 + [-1.0]), n_resamples=10_000, seed=42)
    lo, hi = s["dz_ci95"]
    assert lo < 0.0 <= hi
    assert hi == 0.0  # over a third of the resamples miss the loss and tie at 0


def test_runs_compare_dz_interval_agrees_with_its_randomisation_test() -> None:
    a = {f"q{i}": {"mrr": 0.5} for i in range(21)}
    b = {f"q{i}": {"mrr": 0.5 - (1.0 if i == 0 else 0.0)} for i in range(21)}
    m = compare_runs(a, b, n_resamples=10_000).get("mrr")
    assert m.p_perm == 1.0
    assert m.dz_ci95 is not None and m.dz_ci95[0] < 0.0 <= m.dz_ci95[1]


def test_one_dominant_difference_gives_an_infinite_upper_end_not_a_rounding_artefact() -> None:
    # a one-pass variance left ~1e-17 for resamples of five 1/3s and put the upper end near 5e7
    s = effects.bootstrap_summary(np.array([1 / 3] * 5 + [0.0]), n_resamples=10_000, seed=42)
    lo, hi = s["dz_ci95"]
    assert hi == math.inf
    assert math.isfinite(lo) and lo > 0.0


def test_variance_of_tied_values_is_exactly_zero() -> None:
    d = np.array([1 / 3] * 6)
    assert effects.cohens_dz(d) is None
    mean, sd, tie = effects.moments(d, np.array([[1.0, 2.0, 0.0, 1.0, 1.0, 1.0]]))
    assert sd[0] == 0.0 and tie[0] == d[0]
    assert effects.dz_of(mean, sd, tie)[0] == math.inf


def test_resampled_means_are_not_widened() -> None:
    d = np.array([0.1, 0.3, 0.2, 0.4, 0.0, 0.2, -0.1, 0.25, 0.05])
    means, _ = effects.resampled_moments(d, None, n_resamples=B, seed=3)
    idx = np.concatenate(list(resample.draw_chunks(d.size, n_resamples=B, seed=3)))
    assert means == pytest.approx(d[idx].mean(axis=1), rel=1e-12)
