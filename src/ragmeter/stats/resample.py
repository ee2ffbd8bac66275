"""The one bootstrap: seeded resamples of units drawn with replacement, and their percentile interval.

A unit is a query (plain and paired use: the values or the paired differences d = b - a of one query) or a
cluster (clustered use: every query of a drawn cluster comes along). `bootstrap` draws the resamples in
chunks of at most `CHUNK_CELLS` unit indices, from `numpy.random.default_rng(seed)` with
`rng.integers(0, n_units, size=(rows, n_units))`, and hands each chunk to the caller's vectorised
statistic; the draws are the same whatever the chunking, so a seed and a count fix the resamples.

The interval is the percentile interval of the statistic over the resamples (numpy's linear
interpolation). A resample whose statistic is undefined gives NaN and is left out (and counted); an
infinite statistic (Cohen's d_z of a resample whose differences all tie away from 0) is kept, so an end of
the interval may be infinite: more than the tail's share of resamples had no spread at all.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

FloatArray = np.ndarray[Any, np.dtype[np.float64]]
IntArray = np.ndarray[Any, np.dtype[np.int64]]
Seed = int | Sequence[int]
Statistic = Callable[[IntArray], Any]

# Upper bound on the (resamples x units) indices drawn at once.
CHUNK_CELLS = 2_000_000


def draw_chunks(n_units: int, *, n_resamples: int, seed: Seed) -> Iterator[IntArray]:
    """The resamples as (rows, n_units) matrices of unit indices, `n_resamples` rows in all."""
    if n_units < 1 or n_resamples < 1:
        raise ValueError(f"a bootstrap needs units and resamples, got {n_units} and {n_resamples}")
    rng = np.random.default_rng(seed)
    rows = max(1, CHUNK_CELLS // n_units)
    for start in range(0, n_resamples, rows):
        yield rng.integers(0, n_units, size=(min(rows, n_resamples - start), n_units))


def unit_counts(idx: IntArray, n_units: int) -> FloatArray:
    """(rows, n_units) times each unit was drawn in each resample of `idx`."""
    rows = idx.shape[0]
    flat = (idx + n_units * np.arange(rows)[:, None]).ravel()
    return np.bincount(flat, minlength=rows * n_units).reshape(rows, n_units).astype(np.float64)


def _quantile(ordered: FloatArray, q: float) -> float:
    """numpy's linear quantile of sorted values, where an infinite neighbour wins (numpy gives NaN
    between two infinities and rounds nothing else differently)."""
    pos = q * (ordered.size - 1)
    if abs(pos - round(pos)) < 1e-9:  # (1 - 0.95) / 2 * 4000 is 100.00000000000009: an order statistic
        pos = round(pos)
    lo = math.floor(pos)
    hi = min(lo + 1, ordered.size - 1)
    a, b = float(ordered[lo]), float(ordered[hi])
    if pos == lo or a == b:
        return a
    if math.isinf(a) and math.isinf(b):
        return a if pos - lo < 0.5 else b
    if math.isinf(a) or math.isinf(b):
        return a if math.isinf(a) else b
    return float(np.quantile(ordered, q))


def percentile_interval(values: FloatArray, confidence: float = 0.95) -> tuple[float, float] | None:
    """The central `confidence` percentile interval of `values` (NaN left out; None when none is left)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    kept = np.sort(values[~np.isnan(values)])
    if kept.size == 0:
        return None
    tail = (1.0 - confidence) / 2.0
    if np.isfinite(kept).all():
        lo, hi = np.quantile(kept, [tail, 1.0 - tail])
        return float(lo), float(hi)
    return _quantile(kept, tail), _quantile(kept, 1.0 - tail)


@dataclass(frozen=True)
class Bootstrap:
    """The statistic in every resample: `draws` is (n_resamples,) or (n_resamples, k) for k statistics."""

    draws: FloatArray
    n_resamples: int
    seed: Seed
    confidence: float

    def valid(self, column: int | None = None) -> int:
        """Resamples whose statistic is defined (not NaN)."""
        values = self.draws if column is None else self.draws[:, column]
        return int(np.count_nonzero(~np.isnan(values)))

    def interval(self, column: int | None = None, *, min_valid: int = 1) -> tuple[float, float] | None:
        """The percentile interval of one statistic; None with fewer than `min_valid` defined resamples."""
        values = self.draws if column is None else self.draws[:, column]
        if self.valid(column) < max(1, min_valid):
            return None
        return percentile_interval(values, self.confidence)


def bootstrap(
    statistic: Statistic,
    n_units: int,
    *,
    n_resamples: int,
    seed: Seed,
    confidence: float = 0.95,
) -> Bootstrap:
    """Percentile bootstrap: `statistic` maps a (rows, n_units) matrix of drawn unit indices to the
    statistic of each row, (rows,) or (rows, k) (NaN where undefined). The count and the seed are the
    caller's; each use documents its default."""
    parts = [
        np.asarray(statistic(idx), dtype=np.float64)
        for idx in draw_chunks(n_units, n_resamples=n_resamples, seed=seed)
    ]
    return Bootstrap(np.concatenate(parts, axis=0), n_resamples, seed, confidence)


def per_resample(statistic: Callable[[IntArray], float | None]) -> Statistic:
    """A statistic of one resample's index vector, applied row by row (None -> NaN)."""

    def rows(idx: IntArray) -> FloatArray:
        out = np.empty(idx.shape[0])
        for i, row in enumerate(idx):
            value = statistic(row)
            out[i] = math.nan if value is None or not math.isfinite(value) else value
        return out

    return rows
