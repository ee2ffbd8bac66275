"""Stability of a judge across repeats: Krippendorff's alpha, its bootstrap interval, and verdict flips
(`ragmeter.score.stability.judge_stability` computes them for each judge metric of a run judged in repeats).

Plain numpy over an items x repeats matrix of one judge metric's values (NaN = no value: a failed call).
The repeats play the part of coders and the judged items the part of units, so alpha = 1 says a repeat
never changes a grade and alpha near 0 says repeats agree no better than grades drawn at random from the
pooled values.

Alpha is computed from the coincidence matrix (Krippendorff, "Computing Krippendorff's alpha-reliability",
2011): with C the items x values count matrix and m_u the number of values item u has (items with fewer than
two take no part), o = C' diag(1 / (m - 1)) C minus its diagonal share; alpha = 1 - (n - 1) * sum(o * d2) /
sum(n_c n_k d2), d2 the squared distance of the level of measurement (nominal: 0 for equal values, 1
otherwise; interval: (c - k)^2; ordinal: the squared count of pairable values from c to k less half of each
end); any other level is refused. A bootstrap resample of items (the one bootstrap, `ragmeter.stats.resample`)
is a weight per item, so each resample is one weighted product of the same count matrix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ragmeter.stats import resample

FloatArray = np.ndarray[Any, np.dtype[np.float64]]
Level = Literal["nominal", "ordinal", "interval"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval")


@dataclass(frozen=True)
class RepeatStability:
    """One judge metric's repeat stability, over the items with at least two values."""

    alpha: float | None  # None: no variation at all among the pooled values (alpha undefined)
    interval: tuple[float, float] | None  # percentile bootstrap over items
    flip_share: float | None  # share of items whose verdict differs between two repeats
    items: int  # items with at least two values
    level: Level


def _counts(grades: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The distinct values, the items x values count matrix and each item's number of values (items with
    fewer than two values dropped)."""
    finite = np.isfinite(grades)
    keep = finite.sum(axis=1) >= 2
    rows = grades[keep]
    values = np.unique(rows[np.isfinite(rows)])
    counts = np.zeros((rows.shape[0], values.size))
    for j in range(rows.shape[1]):
        col = rows[:, j]
        ok = np.isfinite(col)
        np.add.at(counts, (np.nonzero(ok)[0], np.searchsorted(values, col[ok])), 1.0)
    return values, counts, counts.sum(axis=1)


def check_level(level: str) -> Level:
    """`level` when it is a level of measurement alpha knows; ValueError naming the choices otherwise."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    return level


def _distance(values: FloatArray, totals: FloatArray, level: Level) -> FloatArray:
    """Squared distance between every two values at the level of measurement."""
    if level == "nominal":
        return np.asarray(np.not_equal.outer(values, values), dtype=np.float64)
    if level == "interval":
        return np.asarray(np.subtract.outer(values, values) ** 2, dtype=np.float64)
    cum = np.cumsum(totals)
    # sum of n_g for g from c to k, less (n_c + n_k) / 2: cum[max] - cum[min] + n[min] - (n_c + n_k) / 2
    lo = np.minimum.outer(np.arange(values.size), np.arange(values.size))
    hi = np.maximum.outer(np.arange(values.size), np.arange(values.size))
    span = cum[hi] - cum[lo] + totals[lo] - (totals[lo] + totals[hi]) / 2.0
    return np.asarray(span**2, dtype=np.float64)


def _alpha(counts: FloatArray, m: FloatArray, weights: FloatArray, values: FloatArray, level: Level) -> float:
    """Alpha of the items weighted by `weights` (1 each for the sample; draw counts for a resample)."""
    w = weights / (m - 1.0)
    coincidence = (counts * w[:, None]).T @ counts
    coincidence -= np.diag((counts * w[:, None]).sum(axis=0))
    totals = coincidence.sum(axis=1)
    n = totals.sum()
    d2 = _distance(values, totals, level)
    expected = float(totals @ d2 @ totals)
    if n <= 1 or expected <= 0:
        return math.nan
    return float(1.0 - (n - 1.0) * float((coincidence * d2).sum()) / expected)


def krippendorff_alpha(grades: FloatArray, level: Level = "interval") -> float | None:
    """Krippendorff's alpha of an items x repeats matrix (NaN = missing) at the level of measurement
    (nominal, ordinal or interval; ValueError for any other); None when undefined."""
    level = check_level(level)
    values, counts, m = _counts(np.asarray(grades, dtype=np.float64))
    if counts.shape[0] == 0:
        return None
    value = _alpha(counts, m, np.ones_like(m), values, level)
    return None if math.isnan(value) else value


def flip_share(grades: FloatArray, threshold: float, *, higher: bool = True) -> float | None:
    """Share of items (with two or more values) whose pass verdict is not the same in every repeat.

    A value passes when it is at least `threshold` (at most, for a lower-is-better metric)."""
    grades = np.asarray(grades, dtype=np.float64)
    finite = np.isfinite(grades)
    keep = finite.sum(axis=1) >= 2
    if not keep.any():
        return None
    with np.errstate(invalid="ignore"):
        passed = grades >= threshold if higher else grades <= threshold
    passes = (passed & finite)[keep].sum(axis=1)
    valid = finite[keep].sum(axis=1)
    return float(np.mean((passes > 0) & (passes < valid)))


def repeat_summary(grades: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Per item: the mean and the sample sd (ddof=1) of its values; NaN where too few values."""
    grades = np.asarray(grades, dtype=np.float64)
    n = np.isfinite(grades).sum(axis=1)
    total = np.nansum(grades, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, total / np.maximum(n, 1), np.nan)
        dev = np.where(np.isfinite(grades), grades - mean[:, None], 0.0)
        sd = np.where(n > 1, np.sqrt((dev**2).sum(axis=1) / np.maximum(n - 1, 1)), np.nan)
    return mean, sd


def repeat_stability(
    grades: FloatArray,
    *,
    level: Level,
    threshold: float,
    higher: bool = True,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> RepeatStability:
    """Alpha with a percentile bootstrap interval over items (the one bootstrap; 1,000 resamples unless
    told, seeded by the caller; resamples where alpha is undefined are left out), and the verdict flip
    share."""
    level = check_level(level)
    values, counts, m = _counts(np.asarray(grades, dtype=np.float64))
    items = counts.shape[0]
    share = flip_share(grades, threshold, higher=higher)
    if items == 0:
        return RepeatStability(None, None, share, 0, level)
    point = _alpha(counts, m, np.ones(items), values, level)
    if math.isnan(point):
        return RepeatStability(None, None, share, items, level)

    def alphas(idx: resample.IntArray) -> FloatArray:
        weights = resample.unit_counts(idx, items)
        return np.asarray([_alpha(counts, m, w, values, level) for w in weights], dtype=np.float64)

    boot = resample.bootstrap(alphas, items, n_resamples=n_resamples, seed=seed, confidence=confidence)
    return RepeatStability(point, boot.interval(), share, items, level)
