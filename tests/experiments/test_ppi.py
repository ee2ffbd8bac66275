"""Prediction-powered inference: the estimate by hand, clipping, input errors, and a seeded simulation
showing the 95% interval covers the true mean at least 94% of the time with a biased, noisy judge, at n = 200
and at n = 20 (Student t quantile), with the figures docs/judges.md states."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from ragmeter.stats.ppi import ppi_mean

SEED = 20230623


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
    # Student's t with n - 1 = 2 degrees of freedom (scipy.stats.t.ppf(0.975, 2) = 4.302652729749464).
    assert res.ci[0] == pytest.approx(res.estimate - 4.302652729749464 * se)
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


def _docs_coverage() -> list[float]:
    """The coverage figures docs/judges.md states for this simulation."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "judges.md").read_text(encoding="utf-8")
    m = re.search(r"measured ([0-9.]+) and ([0-9.]+) for the two settings", text)
    assert m, "docs/judges.md no longer states the simulated coverage"
    return [float(m.group(1)), float(m.group(2))]


def _coverage(n: int, noise: float, labeled_in_all: bool = True, seed: int = SEED) -> float:
    rng = np.random.default_rng(seed)
    covered = 0
    for _ in range(1000):
        y = (rng.random(2000) < 0.6).astype(float)
        f = np.clip(0.15 + 0.7 * y + rng.normal(0, noise, 2000), 0.0, 1.0)
        lab = rng.choice(2000, n, replace=False)
        res = ppi_mean(f, f[lab], y[lab], range=(0.0, 1.0), labeled_in_all=labeled_in_all)
        covered += res.ci[0] <= 0.6 <= res.ci[1]
    return covered / 1000


def test_small_n_coverage_reaches_the_nominal_level() -> None:
    """n = 20 labels, a noisy judge (sd 0.5): the normal quantile covered 0.933 of 1000 seeded datasets;
    Student's t (19 df) brings it to >= 0.94 (measured 0.952)."""
    assert _coverage(20, 0.5) >= 0.94


def test_t_quantile_equals_scipy() -> None:
    from ragmeter.stats.intervals import t_quantile

    scipy_stats = pytest.importorskip("scipy.stats")
    for df in (1, 2):
        assert t_quantile(0.975, df) == pytest.approx(scipy_stats.t.ppf(0.975, df), rel=1e-12)
    for df in (3, 4, 5, 9, 19, 99):
        assert t_quantile(0.975, df) == pytest.approx(scipy_stats.t.ppf(0.975, df), abs=0.04 / df**2)


def test_a_zero_width_interval_is_flagged() -> None:
    res = ppi_mean([1.0, 1.0, 1.0, 1.0], [1.0, 1.0], [1.0, 1.0], range=(0.0, 1.0))
    assert res.ci == (1.0, 1.0)
    assert res.degenerate and res.to_dict()["degenerate"] is True
    assert "zero-width" in res.ci_text() and "[" not in res.ci_text()
    wide = ppi_mean([0.2, 0.9, 0.4, 0.7], [0.2, 0.9], [0.0, 1.0], range=(0.0, 1.0))
    assert not wide.degenerate and wide.ci_text().startswith("[")


@pytest.mark.parametrize("labeled_in_all", [True, False])
def test_coverage_of_the_95_interval_with_a_biased_noisy_judge(labeled_in_all: bool) -> None:
    rng = np.random.default_rng(SEED)
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
    assert covered / n_sets >= 0.94
    # The figures in docs/judges.md are this test's, from this seed.
    assert covered / n_sets == _docs_coverage()[0 if labeled_in_all else 1]
    # The plain judge mean is biased: its naive interval almost never covers the truth ...
    assert covered_judge / n_sets < 0.5
    # ... and PPI is narrower than the interval from the human labels alone.
    assert np.mean(widths) < np.mean(human_widths)
