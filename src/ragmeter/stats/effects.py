"""Effect sizes and clustered forms of the paired comparison, over the per-query differences d = b - a.

- Cohen's d_z = mean(d) / sd(d) (the paired-design effect size) with a percentile bootstrap interval: in each
  resample d_z = mean / sd with a two-pass sd (ddof=1); a resample whose differences all tie has no spread,
  and its d_z is 0 when they tie at 0 and +inf or -inf (the sign of the tie) otherwise. Those resamples are
  kept, so an end of the interval is infinite when more than 2.5% of the resamples tie away from 0: the data
  cannot bound the effect size from that side (it happens with few pairs and one value dominating).
- clustered forms: with a cluster label per query (questions from one document, one user, one topic) the
  bootstrap resamples whole clusters, the sign-flip test flips one sign per cluster (the cluster sums of d),
  and the t-test uses the cluster-robust standard error (inspect_ai's clustered stderr: CR1 with G/(G-1),
  on G - 1 degrees of freedom). The clustered interval of the mean is widened by sqrt(G / (G - 1)) around
  the observed mean (resampling G clusters shrinks the mean's variance by (G - 1) / G; the CR1 factor),
  and its method says so; d_z's interval is never widened.
Power and minimum detectable effects live in `ragmeter.stats.power`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragmeter.stats import resample
from ragmeter.stats.paired import permutation_test

FloatArray = resample.FloatArray
IntArray = resample.IntArray

CLUSTERED_MEAN_METHOD = "clusters resampled, widened by sqrt(G/(G-1))"


def cluster_codes(labels: Sequence[Any]) -> IntArray:
    """Integer codes 0..G-1 of cluster labels, in order of first appearance."""
    seen: dict[str, int] = {}
    return np.asarray([seen.setdefault(str(x), len(seen)) for x in labels], dtype=np.int64)


def _cluster_sums(d: FloatArray, codes: IntArray | None) -> FloatArray:
    """Per cluster: the sum of d (every query its own cluster when codes is None)."""
    if codes is None:
        return d
    g = int(codes.max()) + 1 if codes.size else 0
    return np.bincount(codes, weights=d, minlength=g).astype(np.float64)


def _n_units(d: FloatArray, codes: IntArray | None) -> int:
    return int(d.size) if codes is None else int(codes.max()) + 1


def moments(d: FloatArray, weights: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per row of `weights` (times each query is drawn): the mean of d, its two-pass sd (ddof=1), and
    the value the drawn differences all tie at (NaN where they do not all tie; the test is exact)."""
    drawn = weights > 0.0
    n = weights.sum(axis=1)
    mean = (weights @ d) / n
    dev = d[None, :] - mean[:, None]
    var = np.einsum("ij,ij->i", weights * dev, dev) / np.maximum(n - 1.0, 1.0)
    low = np.where(drawn, d[None, :], np.inf).min(axis=1)
    high = np.where(drawn, d[None, :], -np.inf).max(axis=1)
    return mean, np.sqrt(var), np.where(low == high, low, np.nan)


def drawn_moments(x: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """`moments` of resamples given as their drawn values, one resample per row of `x` (two-pass)."""
    mean = x.mean(axis=1)
    dev = x - mean[:, None]
    var = np.einsum("ij,ij->i", dev, dev) / max(x.shape[1] - 1, 1)
    low, high = x.min(axis=1), x.max(axis=1)
    return mean, np.sqrt(var), np.where(low == high, low, np.nan)


def dz_of(mean: FloatArray, sd: FloatArray, tie: FloatArray) -> FloatArray:
    """d_z = mean / sd; a tie at 0 gives 0, a tie at v != 0 gives sign(v) * inf."""
    tied = ~np.isnan(tie)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where(tied | (sd == 0.0), np.nan, mean / np.where(sd == 0.0, 1.0, sd))
    at = np.nan_to_num(tie)
    tie_value = np.where(at == 0.0, 0.0, np.where(at > 0.0, np.inf, -np.inf))
    return np.asarray(np.where(tied, tie_value, spread), dtype=np.float64)


def _units(d: FloatArray, codes: IntArray | None) -> tuple[FloatArray, IntArray | None]:
    """The differences by unit, and the codes still needed: none when every query is its own cluster
    (then a resample is its drawn values, and the clustered and plain forms are the same arithmetic)."""
    if codes is None:
        return d, None
    g = int(codes.max()) + 1
    if g < d.size:
        return d, codes
    by_unit = np.empty_like(d)
    by_unit[codes] = d
    return by_unit, None


def _resampled(d: FloatArray, codes: IntArray | None, idx: IntArray) -> tuple[FloatArray, ...]:
    """`moments` of each resample in `idx` (rows of drawn unit indices). With clusters, from each cluster's
    size, sum, mean, within-cluster sum of squares (two-pass) and extremes: a resample's sum of squares is
    the drawn clusters' within parts plus their sizes times the squared distance of their means from the
    resample's mean (no cancellation), and it ties when its clusters' extremes all meet."""
    if codes is None:
        return drawn_moments(d[idx])
    g = int(codes.max()) + 1
    size = np.bincount(codes, minlength=g).astype(np.float64)
    total = np.bincount(codes, weights=d, minlength=g)
    centre = total / size
    within = np.bincount(codes, weights=(d - centre[codes]) ** 2, minlength=g)
    low_c = np.full(g, np.inf)
    high_c = np.full(g, -np.inf)
    np.minimum.at(low_c, codes, d)
    np.maximum.at(high_c, codes, d)
    w = resample.unit_counts(idx, g)
    n = w @ size
    mean = (w @ total) / n
    dev = centre[None, :] - mean[:, None]
    ss = np.einsum("ij,ij->i", w * size * dev, dev) + w @ within
    drawn = w > 0.0
    low = np.where(drawn, low_c, np.inf).min(axis=1)
    high = np.where(drawn, high_c, -np.inf).max(axis=1)
    sd = np.sqrt(ss / np.maximum(n - 1.0, 1.0))
    return mean, sd, np.where(low == high, low, np.nan)


def resampled_moments(
    d: FloatArray, codes: IntArray | None, *, n_resamples: int, seed: resample.Seed
) -> tuple[FloatArray, FloatArray]:
    """Mean and two-pass sd (ddof=1) of d in each of `n_resamples` bootstrap resamples of the clusters
    (queries when codes is None); nothing widened."""
    g = _n_units(d, codes)
    units, needed = _units(d, codes)

    def stat(idx: IntArray) -> FloatArray:
        mean, sd, _ = _resampled(units, needed, idx)
        return np.stack([mean, sd], axis=1)

    draws = resample.bootstrap(stat, g, n_resamples=n_resamples, seed=seed).draws
    return draws[:, 0].copy(), draws[:, 1].copy()


def cohens_dz(d: FloatArray) -> float | None:
    """mean(d) / sd(d); None with fewer than two pairs or when every difference ties (an effect size is
    then undefined)."""
    if d.size < 2 or float(d.min()) == float(d.max()):
        return None
    return float(d.mean()) / float(d.std(ddof=1))


def widen(means: FloatArray, centre: float, g: int) -> FloatArray:
    """Resampled means widened by sqrt(G / (G - 1)) around `centre` (the CR1 factor)."""
    if g < 2:
        return means
    return np.asarray(centre + (means - centre) * math.sqrt(g / (g - 1)), dtype=np.float64)


def bootstrap_summary(
    d: FloatArray,
    codes: IntArray | None = None,
    *,
    n_resamples: int = 10_000,
    seed: resample.Seed = 42,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Percentile intervals of mean(d) and of Cohen's d_z from one set of (clustered) resamples.

    `ci95` is the plain percentile interval of the mean, or with clusters the clustered one widened by
    sqrt(G/(G-1)) (`ci95_method` names which); `dz_ci95` is the plain percentile interval of d_z."""
    if d.size == 0:
        return {"ci95": None, "ci95_method": None, "dz": None, "dz_ci95": None}
    g = _n_units(d, codes)
    units, needed = _units(d, codes)

    def stat(idx: IntArray) -> FloatArray:
        mean, sd, tie = _resampled(units, needed, idx)
        return np.stack([mean, dz_of(mean, sd, tie)], axis=1)

    boot = resample.bootstrap(stat, g, n_resamples=n_resamples, seed=seed, confidence=confidence)
    means = boot.draws[:, 0]
    method = "percentile bootstrap"
    if codes is not None:
        means = widen(means, float(d.mean()), g)
        method = f"percentile bootstrap, {CLUSTERED_MEAN_METHOD}"
    dz_obs = cohens_dz(d)
    return {
        "ci95": resample.percentile_interval(means, confidence),
        "ci95_method": method,
        "dz": dz_obs,
        "dz_ci95": boot.interval(1) if dz_obs is not None else None,
    }


def clustered_se(d: FloatArray, codes: IntArray) -> tuple[float, int]:
    """Cluster-robust (CR1) standard error of mean(d) and the number of clusters G."""
    centred = d - d.mean()
    sums = np.bincount(codes, weights=centred)
    g = int(np.count_nonzero(np.bincount(codes)))
    if g < 2:
        return math.nan, g
    return float(math.sqrt(g / (g - 1) * float(np.sum(sums * sums))) / d.size), g


def clustered_t_test(d: FloatArray, codes: IntArray) -> float | None:
    """Two-sided p-value of mean(d) = 0 with the cluster-robust SE on G - 1 degrees of freedom."""
    from scipy import stats

    se, g = clustered_se(d, codes)
    if g < 2:
        return None
    mean = float(d.mean())
    if se == 0.0 or not math.isfinite(se):
        return 1.0 if mean == 0.0 else 0.0
    return float(min(1.0, 2.0 * stats.t.sf(abs(mean / se), g - 1)))


def sign_flip_test(
    d: FloatArray, codes: IntArray | None, *, n_resamples: int = 10_000, seed: int = 42
) -> tuple[float | None, bool]:
    """Fisher's randomisation test with one sign per cluster: the test on the clusters' sums of d."""
    sums = _cluster_sums(d, codes)
    return permutation_test(np.zeros_like(sums), sums, n_resamples=n_resamples, seed=seed)
