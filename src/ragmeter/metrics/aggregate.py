"""Aggregates with honest intervals: every interval lies inside its metric's range.

The intervals come from `ragmeter.stats.intervals` (`wilson` and `bootstrap_mean` used to live here and
still resolve, with a DeprecationWarning naming the new place):
- `bootstrap`: percentile bootstrap of the mean (2,000 resamples, seeded from the run): it lies within
  [min, max] of the values, so within the metric's range by construction (clipped as well, against float
  round-off).
- `wilson`: Wilson score interval for proportions (metrics whose values are 0 or 1); inside [0, 1].
- latency: p50 / p95 / max, no interval.
A normal-approximation interval (mean +- 1.96 sd / sqrt n) is never used: it leaves [0, 1] near the ends.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragmeter._lazy import moved
from ragmeter.metrics.registry import lookup
from ragmeter.metrics.spec import MetricSpec
from ragmeter.models import MetricSummary
from ragmeter.stats import intervals

_MOVED = dict.fromkeys(("BOOTSTRAP_RESAMPLES", "Z95", "wilson", "bootstrap_mean"), "ragmeter.stats.intervals")


def __getattr__(name: str) -> Any:
    value = moved(__name__, name, _MOVED)
    return _bootstrap_mean_with_old_keyword if name == "bootstrap_mean" else value


def _bootstrap_mean_with_old_keyword(
    values: Sequence[float], *, seed: int = 0, resamples: int = intervals.BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """The old signature (`resamples=`) of what is now `ragmeter.stats.intervals.bootstrap_mean`."""
    return intervals.bootstrap_mean(values, seed=seed, n_resamples=resamples)


def _is_binary(values: Sequence[float], spec: MetricSpec) -> bool:
    lo, hi = spec.range
    return lo == 0.0 and hi == 1.0 and all(v in (0.0, 1.0) for v in values)


def interval(
    spec: MetricSpec | None, values: Sequence[float], *, seed: int = 0
) -> tuple[tuple[float, float] | None, str | None]:
    """(95% interval, method name) for the mean of `values` under `spec`'s declared method."""
    if not values:
        return None, None
    method = spec.interval if spec is not None else "bootstrap"
    if method == "none":
        return None, None
    if method == "wilson" and spec is not None and _is_binary(values, spec):
        return intervals.wilson(sum(values), len(values)), "wilson"
    lo, hi = intervals.bootstrap_mean(values, seed=seed)
    if spec is not None:
        lo, hi = spec.clip(lo), spec.clip(hi)
    return (lo, hi), "bootstrap-percentile"


def summarize(name: str, values: Sequence[float | None], *, seed: int = 0) -> MetricSummary:
    """Mean, sample std (n-1), valid and null counts and the declared 95% interval of one metric."""
    spec = lookup(name)
    valid = [float(v) for v in values if v is not None]
    n_null = len(values) - len(valid)
    if not valid:
        return MetricSummary(mean=None, std=None, n=0, n_null=n_null)
    mean = math.fsum(valid) / len(valid)
    if spec is not None and spec.bounded:
        mean = spec.clip(mean)
    std = statistics.stdev(valid) if len(valid) > 1 else 0.0
    ci, method = interval(spec, valid, seed=seed)
    return MetricSummary(mean=mean, std=std, n=len(valid), n_null=n_null, ci95=ci, ci_method=method)


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """p50 / p95 / max / mean of latencies (ms)."""
    arr = np.asarray(values, dtype=np.float64)
    return {
        "p50": float(np.percentile(arr, 50)),
        "p95": float(np.percentile(arr, 95)),
        "max": float(arr.max()),
        "mean": float(arr.mean()),
        "n": float(arr.size),
    }
