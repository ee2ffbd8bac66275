"""Intervals of one mean: Wilson's score interval for a proportion, the percentile bootstrap of a mean, and
Student's t quantile.

- `wilson`: inside [0, 1] by construction, for metrics whose values are 0 or 1;
- `bootstrap_mean`: the percentile bootstrap of the mean (`ragmeter.stats.resample`; a run's summary draws
  `BOOTSTRAP_RESAMPLES` = 2,000 resamples, seeded from the run), inside [min, max] of the values;
- `t_quantile`: Student's t quantile without scipy (the core package does not depend on it).
A normal-approximation interval (mean +- 1.96 sd / sqrt n) is never used: it leaves [0, 1] near the ends.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from ragmeter.stats import resample

BOOTSTRAP_RESAMPLES = 2000
Z95 = 1.959963984540054


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval of a proportion (successes of n); (0, 1) when n is 0."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def bootstrap_mean(
    values: Sequence[float],
    *,
    seed: resample.Seed = 0,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (seeded, so the same values give the same interval)."""
    arr = np.asarray(values, dtype=np.float64)
    n = arr.size
    if n == 0:
        raise ValueError("no values")
    if n == 1 or float(arr.min()) == float(arr.max()):
        return (float(arr[0]), float(arr[0])) if n == 1 else (float(arr.min()), float(arr.max()))

    def means(idx: resample.IntArray) -> resample.FloatArray:
        return np.asarray(arr[idx].mean(axis=1), dtype=np.float64)

    boot = resample.bootstrap(means, n, n_resamples=n_resamples, seed=seed, confidence=confidence)
    ci = boot.interval()
    assert ci is not None  # every resample has a mean
    return (max(ci[0], float(arr.min())), min(ci[1], float(arr.max())))


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile (scipy.stats.t.ppf within 0.004 at df 3, 1e-6 from df 19; exact for df 1 and 2):
    closed forms for df <= 2, else the Cornish-Fisher expansion around the normal quantile (Abramowitz and
    Stegun 26.7.5). numpy/stdlib only: the core package does not depend on scipy."""
    if df < 1:
        raise ValueError(f"df must be >= 1, got {df}")
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2.0 * p - 1.0) / math.sqrt(2.0 * p * (1.0 - p))
    z = NormalDist().inv_cdf(p)
    g1 = (z**3 + z) / 4.0
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96.0
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384.0
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160.0
    v = float(df)
    return z + g1 / v + g2 / v**2 + g3 / v**3 + g4 / v**4
