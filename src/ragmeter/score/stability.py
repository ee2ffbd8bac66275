"""Stability of a judge across repeats: Krippendorff's alpha, its bootstrap interval, and verdict flips;
`judge_stability` computes them for each judge metric of a run judged in repeats (`run --repeat N`).

Plain numpy over an items x repeats matrix of one judge metric's values (NaN = no value: a failed call).
The repeats play the part of coders and the judged items the part of units, so alpha = 1 says a repeat
never changes a grade and alpha near 0 says repeats agree no better than grades drawn at random from the
pooled values.

Alpha is computed from the coincidence matrix (Krippendorff, "Computing Krippendorff's alpha-reliability",
2011): with C the items x values count matrix and m_u the number of values item u has (items with fewer than
two take no part), o = C' diag(1 / (m - 1)) C minus its diagonal share; alpha = 1 - (n - 1) * sum(o * d2) /
sum(n_c n_k d2), d2 the squared distance of the level of measurement (interval: (c - k)^2; ordinal: the
squared count of pairable values from c to k less half of each end). A bootstrap resample of items is a
weight per item, so each resample is one weighted product of the same count matrix.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from ragmeter.models import JudgeStability, QueryEvalResult

FloatArray = np.ndarray[Any, np.dtype[np.float64]]
Level = Literal["interval", "ordinal"]


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


def _distance(values: FloatArray, totals: FloatArray, level: Level) -> FloatArray:
    """Squared distance between every two values at the level of measurement."""
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
    """Krippendorff's alpha of an items x repeats matrix (NaN = missing); None when undefined."""
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
    """Alpha with a percentile bootstrap interval over items, and the verdict flip share."""
    values, counts, m = _counts(np.asarray(grades, dtype=np.float64))
    items = counts.shape[0]
    share = flip_share(grades, threshold, higher=higher)
    if items == 0:
        return RepeatStability(None, None, share, 0, level)
    point = _alpha(counts, m, np.ones(items), values, level)
    if math.isnan(point):
        return RepeatStability(None, None, share, items, level)
    rng = np.random.default_rng(seed)
    draws = np.empty(n_resamples)
    for b in range(n_resamples):
        weights = np.bincount(rng.integers(0, items, size=items), minlength=items).astype(np.float64)
        draws[b] = _alpha(counts, m, weights, values, level)
    draws = draws[np.isfinite(draws)]
    interval = None
    if draws.size:
        tail = (1.0 - confidence) / 2.0 * 100.0
        lo, hi = np.percentile(draws, [tail, 100.0 - tail])
        interval = (float(lo), float(hi))
    return RepeatStability(point, interval, share, items, level)


def judge_stability(
    names: Sequence[str],
    per_query: Sequence[QueryEvalResult],
    *,
    temperature: float | None,
    seeds: Sequence[int | None],
    thresholds: Mapping[str, float] | None = None,
    seed: int = 0,
) -> dict[str, JudgeStability]:
    """The stability of each judge metric of a run judged in repeats, over its answered queries.

    The level of measurement is the metric's (registry). The pass threshold of the flip share is the gate's
    (`--fail-under`) when one names the metric, else the middle of the metric's range."""
    import ragmeter.metrics as rm

    out: dict[str, JudgeStability] = {}
    for name in names:
        rows = [r.repeats[name] for r in per_query if r.status == "ok" and name in r.repeats]
        if not rows:
            continue
        width = max(len(each) for each in rows)
        grades = np.full((len(rows), width), np.nan)
        for i, each in enumerate(rows):
            for j, v in enumerate(each):
                if v.value is not None:
                    grades[i, j] = v.value
        spec = rm.get(name)
        lo, hi = spec.range
        gate = (thresholds or {}).get(name)
        threshold = gate if gate is not None else ((lo or 0.0) + (hi if hi is not None else 1.0)) / 2.0
        stab = repeat_stability(
            grades, level=spec.level, threshold=threshold, higher=spec.higher_is_better, seed=seed
        )
        _, sd = repeat_summary(grades)
        measured = {k: v for k, v in asdict(stab).items() if k != "interval"}
        mean_sd = float(np.nanmean(sd)) if np.isfinite(sd).any() else None
        origin = "gate" if gate is not None else "mid-range"
        out[name] = JudgeStability.model_validate(
            {**measured, "alpha_ci95": stab.interval, "repeats": width, "mean_sd": mean_sd}
            | {
                "threshold": threshold,
                "threshold_from": origin,
                "temperature": temperature,
                "seeds": list(seeds),
            }
        )
    return out


STABILITY_COLUMNS = ("metric", "repeats", "level", "alpha", "95% CI", "flip share", "mean sd", "sampling")
STABILITY_NOTE = (
    "each judged query judged in repeats: alpha = Krippendorff's alpha across the repeats at the metric's "
    "level of measurement (1 = a repeat never changes a value, 0 = no better than chance), 95% CI = "
    "percentile bootstrap over queries; flip share = queries whose pass verdict (value >= threshold) differs "
    "between repeats; mean sd = mean over queries of the sd across repeats; a query's value is its mean"
)


def stability_rows(stability: Mapping[str, JudgeStability]) -> list[list[str]]:
    """The stability of each judge metric as display cells (STABILITY_COLUMNS), metrics in name order."""

    def num(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    rows = []
    for name in sorted(stability):
        s = stability[name]
        ci = "-" if s.alpha_ci95 is None else f"[{s.alpha_ci95[0]:.3f}, {s.alpha_ci95[1]:.3f}]"
        flip = "-" if s.flip_share is None else f"{s.flip_share:.3f} at {s.threshold:g} ({s.threshold_from})"
        temperature = "not sent" if s.temperature is None else f"{s.temperature:g}"
        seeds = ", ".join("-" if x is None else str(x) for x in s.seeds)
        sampling = f"temperature {temperature}, seeds {seeds}"
        rows.append(
            [name, f"{s.repeats} x {s.items}", s.level, num(s.alpha), ci, flip, num(s.mean_sd), sampling]
        )
    return rows
