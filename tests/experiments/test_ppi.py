"""Prediction-powered inference: the estimate by hand, clipping, input errors, and a seeded simulation
showing the 95% interval covers the true mean at least 93% of the time with a biased, noisy judge."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragmeter.experiments.ppi import ppi_mean


def test_estimate_by_hand() -> None:
    judge_all = [0.9, 0.8, 0.7, 0.6, 1.0, 0.5]
    judge_lab = [0.9, 0.8, 0.7]
    human_lab = [1.0, 0.0, 1.0]
    res = ppi_mean(judge_all, judge_lab, human_lab, labeled_in_all=False)
    rect = np.array(judge_lab) - np.array(human_lab)
    assert res.judge_mean == pytest.approx(np.mean(judge_all))
    assert res.estimate == pytest.approx(np.mean(judge_all) - rect.mean())
    se = math.sqrt(np.var(judge_all, ddof=1) / 6 + rect.var(ddof=1) / 3)
    assert res.se == pytest.approx(se)
    assert res.ci[0] == pytest.approx(res.estimate - 1.959963984540054 * se)
    assert (res.n_labeled, res.n_total) == (3, 6)
    assert res.human_mean == pytest.approx(2 / 3)


def test_covariance_correction_when_labelled_items_are_in_all() -> None:
    rng = np.random.default_rng(1)
    f = rng.random(50)
    y = (f + rng.normal(0, 0.2, 50) > 0.5).astype(float)
    res = ppi_mean(f, f[:10], y[:10])
    rect = f[:10] - y[:10]
    var = f.var(ddof=1) / 50 + rect.var(ddof=1) / 10 - 2 * np.cov(f[:10], rect, ddof=1)[0, 1] / 50
    assert res.se == pytest.approx(math.sqrt(var))


def test_clipped_into_the_range() -> None:
    res = ppi_mean([0.99, 0.98, 1.0, 0.97], [0.99, 0.98], [1.0, 1.0], range=(0.0, 1.0))
    assert res.ci[1] <= 1.0 and res.ci[0] >= 0.0
    assert res.estimate <= 1.0
    assert res.clipped
    assert res.to_dict()["ci"] == list(res.ci)


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="two human labels"):
        ppi_mean([0.1, 0.2], [0.1], [1.0])
    with pytest.raises(ValueError, match="finite"):
        ppi_mean([0.1, float("nan")], [0.1, 0.2], [1.0, 0.0])
    with pytest.raises(ValueError, match="has 2 values"):
        ppi_mean([0.1, 0.2, 0.3], [0.1, 0.2], [1.0])
    with pytest.raises(ValueError, match="cannot hold"):
        ppi_mean([0.1, 0.2], [0.1, 0.2, 0.3], [1.0, 0.0, 1.0])


@pytest.mark.parametrize("labeled_in_all", [True, False])
def test_coverage_of_the_95_interval_with_a_biased_noisy_judge(labeled_in_all: bool) -> None:
    rng = np.random.default_rng(20230623)
    n_sets, big_n, n, true_mean = 1000, 2000, 200, 0.6
    covered = covered_judge = 0
    widths, human_widths = [], []
    for _ in range(n_sets):
        y = (rng.random(big_n) < true_mean).astype(float)
        # A judge that under-rates good answers and over-rates bad ones, with noise: biased by about -0.04.
        f = np.clip(0.15 + 0.7 * y + rng.normal(0, 0.25, big_n), 0.0, 1.0)
        lab = rng.choice(big_n, n, replace=False)
        if labeled_in_all:
            res = ppi_mean(f, f[lab], y[lab], range=(0.0, 1.0))
        else:
            rest = np.ones(big_n, dtype=bool)
            rest[lab] = False
            res = ppi_mean(f[rest], f[lab], y[lab], range=(0.0, 1.0), labeled_in_all=False)
        covered += res.ci[0] <= true_mean <= res.ci[1]
        covered_judge += abs(res.judge_mean - true_mean) < 1.96 * f.std() / math.sqrt(big_n)
        widths.append(res.ci[1] - res.ci[0])
        human_widths.append(res.human_ci[1] - res.human_ci[0])
    assert covered / n_sets >= 0.93
    # The plain judge mean is biased: its naive interval almost never covers the truth ...
    assert covered_judge / n_sets < 0.5
    # ... and PPI is narrower than the interval from the human labels alone.
    assert np.mean(widths) < np.mean(human_widths)
