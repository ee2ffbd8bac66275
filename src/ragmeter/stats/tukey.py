"""Randomised Tukey HSD for more than two systems on the same queries (Carterette, TOIS 2012).

The classic Tukey HSD assumes independent groups; ours are k systems scored on the same n queries. The
randomised form keeps the pairing: under the null hypothesis that the systems are interchangeable, the k
values of a query may be shuffled among the systems. Each permutation shuffles every query's row
independently (or, with clusters, one shuffle per cluster applied to all its queries), and records the
range max_j mean_j - min_j mean_j of the system means. The adjusted p-value of a pair (i, j) is the share
of permutations whose range reaches |mean_i - mean_j| (with the +1 of a Monte Carlo p-value); comparing
every pair with the distribution of the maximum controls the family-wise error over all pairs.
"""

from __future__ import annotations

import numpy as np

from ragmeter.stats.resample import FloatArray, IntArray

_TIE_EPS = 1e-12
_CHUNK_CELLS = 4_000_000


def permuted_ranges(
    values: FloatArray, *, n_resamples: int, seed: int, codes: IntArray | None = None
) -> FloatArray:
    """max - min of the column means after shuffling each row's (or each cluster's) system labels."""
    n, k = values.shape
    rng = np.random.default_rng(seed)
    groups = n if codes is None else int(codes.max()) + 1
    out = np.empty(n_resamples)
    rows = max(1, _CHUNK_CELLS // max(1, n * k))
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        order = np.argsort(rng.random((stop - start, groups, k)), axis=2)
        if codes is not None:
            order = order[:, codes, :]
        shuffled = np.take_along_axis(np.broadcast_to(values, order.shape), order, axis=2)
        means = shuffled.mean(axis=1)
        out[start:stop] = means.max(axis=1) - means.min(axis=1)
    return out


def tukey_hsd_pvalues(
    values: FloatArray, *, n_resamples: int = 10_000, seed: int = 42, codes: IntArray | None = None
) -> FloatArray:
    """k x k matrix of family-wise adjusted p-values of every pair of columns of `values` (n x k)."""
    means = values.mean(axis=0)
    ranges = np.sort(permuted_ranges(values, n_resamples=n_resamples, seed=seed, codes=codes))
    diffs = np.abs(means[:, None] - means[None, :])
    threshold = diffs - _TIE_EPS * np.maximum(1.0, diffs)
    reached = n_resamples - np.searchsorted(ranges, threshold.ravel(), side="left")
    p: FloatArray = ((reached + 1) / (n_resamples + 1)).reshape(diffs.shape).astype(np.float64)
    return p
