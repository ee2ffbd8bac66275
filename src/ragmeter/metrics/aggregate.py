"""Aggregates with honest intervals: every interval lies inside its metric's range.

- `bootstrap`: percentile bootstrap of the mean (B resamples, seeded): it lies within [min, max] of the
  values, so within the metric's range by construction (clipped as well, against float round-off).
- `wilson`: Wilson score interval for proportions (metrics whose values are 0 or 1); inside [0, 1].
- latency: p50 / p95 / max, no interval.
A normal-approximation interval (mean +- 1.96 sd / sqrt n) is never used: it leaves [0, 1] near the ends.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import numpy as np

from ragmeter.metrics.registry import lookup
from ragmeter.metrics.spec import MetricSpec
from ragmeter.models import MetricSummary

BOOTSTRAP_RESAMPLES = 2000
Z95 = 1.959963984540054


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def bootstrap_mean(
    values: Sequence[float], *, seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of the mean (seeded, so the same values give the same interval)."""
    arr = np.asarray(values, dtype=np.float64)
    n = arr.size
    if n == 0:
        raise ValueError("no values")
    if n == 1 or float(arr.min()) == float(arr.max()):
        return (float(arr[0]), float(arr[0])) if n == 1 else (float(arr.min()), float(arr.max()))
    rng = np.random.default_rng(seed)
    means = np.empty(resamples, dtype=np.float64)
    # resample in blocks so that memory stays bounded for large runs (block x n indices at a time)
    block = max(1, min(resamples, 4_000_000 // n))
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = arr[idx].mean(axis=1)
    lo, hi = np.quantile(means, [0.025, 0.975])
    return (max(float(lo), float(arr.min())), min(float(hi), float(arr.max())))


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
        return wilson(sum(values), len(values)), "wilson"
    lo, hi = bootstrap_mean(values, seed=seed)
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
