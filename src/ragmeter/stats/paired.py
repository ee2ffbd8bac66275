"""Two-sample paired tests on per-query differences d = b - a: t-test, randomisation test, bootstrap CI, Holm.

Inputs are plain float sequences or arrays of equal length (one pair per query); the seeded tests are
reproducible for a given seed. ``ragmeter.experiments.significance`` pairs runs and calls these. The
randomisation test draws random sign vectors (a permutation, not a resample); the interval comes from the
one bootstrap (`ragmeter.stats.resample`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragmeter.stats import resample

FloatArray = np.ndarray[Any, np.dtype[np.float64]]

# Floating-point slack when comparing a permuted statistic with the observed one: sums of the same
# numbers in a different order may differ in the last bits, and a tie must count as "as extreme".
_TIE_EPS = 1e-12
# Upper bound on (resamples x queries) held in memory at once by the bootstrap and Monte Carlo loops.
_CHUNK_CELLS = 2_000_000


def paired_t_test(a: Sequence[float] | FloatArray, b: Sequence[float] | FloatArray) -> float | None:
    """Two-sided p-value of the paired t-test on d = b - a; None with fewer than two pairs.

    Zero variance of d is decided without the t distribution: p = 1 when every difference is 0, else 0
    (scipy returns NaN there).
    """
    d = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    n = d.size
    if n < 2:
        return None
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    if sd == 0.0 or not math.isfinite(sd):
        return 1.0 if mean == 0.0 else 0.0
    from scipy import stats

    t = mean / (sd / math.sqrt(n))
    return float(min(1.0, 2.0 * stats.t.sf(abs(t), n - 1)))


def permutation_test(
    a: Sequence[float] | FloatArray,
    b: Sequence[float] | FloatArray,
    *,
    n_resamples: int = 10_000,
    seed: int = 42,
) -> tuple[float | None, bool]:
    """Fisher's paired randomisation test (two-sided). Returns (p-value, exact?).

    Flipping the sign of a zero difference changes nothing, so only the m non-zero differences are
    permuted: exactly when 2^m <= n_resamples, otherwise by n_resamples seeded random sign vectors.
    """
    d = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    if d.size == 0:
        return None, True
    d = d[d != 0.0]
    m = d.size
    if m == 0:
        return 1.0, True
    observed = abs(float(d.sum()))
    threshold = observed - _TIE_EPS * max(1.0, observed)
    if m < 63 and (1 << m) <= n_resamples:
        total = 1 << m
        hits = 0
        rows = max(1, _CHUNK_CELLS // m)
        shifts = np.arange(m, dtype=np.int64)
        for start in range(0, total, rows):
            codes = np.arange(start, min(total, start + rows), dtype=np.int64)
            signs = 1.0 - 2.0 * ((codes[:, None] >> shifts) & 1).astype(np.float64)
            hits += int(np.count_nonzero(np.abs(signs @ d) >= threshold))
        return hits / total, True
    rng = np.random.default_rng(seed)
    hits = 0
    rows = max(1, _CHUNK_CELLS // m)
    done = 0
    total_d = float(d.sum())
    while done < n_resamples:
        size = min(rows, n_resamples - done)
        # Random bits b (1 = flip): sum(sign * d) = sum(d) - 2 * (b @ d). Unpacking random bytes is ~4x
        # faster than drawing signs one by one.
        raw = np.frombuffer(rng.bytes((size * m + 7) // 8), dtype=np.uint8)
        flips = np.unpackbits(raw, count=size * m).reshape(size, m).astype(np.float64)
        hits += int(np.count_nonzero(np.abs(total_d - 2.0 * (flips @ d)) >= threshold))
        done += size
    return (hits + 1) / (n_resamples + 1), False


def bootstrap_ci(
    a: Sequence[float] | FloatArray,
    b: Sequence[float] | FloatArray,
    *,
    n_resamples: int = 10_000,
    seed: resample.Seed = 42,
    confidence: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile bootstrap CI of mean(b - a), resampling the paired queries with replacement (the one
    bootstrap of `ragmeter.stats.resample`; a comparison draws 10,000 resamples by default)."""
    d = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    if d.size == 0:
        return None

    def means(idx: resample.IntArray) -> FloatArray:
        return np.asarray(d[idx].mean(axis=1), dtype=np.float64)

    return resample.bootstrap(
        means, d.size, n_resamples=n_resamples, seed=seed, confidence=confidence
    ).interval()


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni step-down adjusted p-values; None entries stay None and are not counted."""
    present = [(p, i) for i, p in enumerate(p_values) if p is not None]
    m = len(present)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(sorted(present)):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted
