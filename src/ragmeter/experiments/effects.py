"""Effect sizes, clustered resampling and power of paired comparisons.

Plain numpy over the per-query differences d = b - a (no store, no runner):

- Cohen's d_z = mean(d) / sd(d) (the paired-design effect size) with a percentile bootstrap interval;
- clustered forms: with a cluster label per query (questions from one document, one user, one topic) the
  bootstrap resamples whole clusters, the sign-flip test flips one sign per cluster (the cluster sums of d),
  and the t-test uses the cluster-robust standard error (inspect_ai's clustered stderr: CR1 with G/(G-1),
  on G - 1 degrees of freedom);
Power and minimum detectable effects live in `ragmeter.experiments.power`.

The bootstrap counts how often each cluster is drawn, so a resample's mean is (counts @ sums) /
(counts @ sizes): one matrix product for all resamples. Without clusters every query is its own cluster.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ragmeter.models import EvalQuery

FloatArray = np.ndarray[Any, np.dtype[np.float64]]
IntArray = np.ndarray[Any, np.dtype[np.int64]]

# Upper bound on (resamples x clusters) cells drawn at once.
_CHUNK_CELLS = 2_000_000


def cluster_codes(labels: Sequence[Any]) -> IntArray:
    """Integer codes 0..G-1 of cluster labels, in order of first appearance."""
    seen: dict[str, int] = {}
    return np.asarray([seen.setdefault(str(x), len(seen)) for x in labels], dtype=np.int64)


def _cluster_sums(d: FloatArray, codes: IntArray | None) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per cluster: sum of d, sum of d^2 and size (every query its own cluster when codes is None)."""
    if codes is None:
        return d, d * d, np.ones_like(d)
    g = int(codes.max()) + 1 if codes.size else 0
    sums: FloatArray = np.bincount(codes, weights=d, minlength=g).astype(np.float64)
    squares: FloatArray = np.bincount(codes, weights=d * d, minlength=g).astype(np.float64)
    sizes: FloatArray = np.bincount(codes, minlength=g).astype(np.float64)
    return sums, squares, sizes


def resampled_moments(
    d: FloatArray, codes: IntArray | None, *, n_resamples: int, seed: int
) -> tuple[FloatArray, FloatArray]:
    """Mean and sd (ddof=1) of d in each of `n_resamples` bootstrap resamples of the clusters, the means
    widened by sqrt(G / (G - 1)) around the observed mean."""
    s1, s2, size = _cluster_sums(d, codes)
    g = s1.size
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    sds = np.empty(n_resamples)
    rows = max(1, _CHUNK_CELLS // max(1, g))
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        picks = rng.integers(0, g, size=(stop - start, g)) + g * np.arange(stop - start)[:, None]
        counts = np.bincount(picks.ravel(), minlength=(stop - start) * g).reshape(stop - start, g)
        counts = counts.astype(np.float64)
        n = counts @ size
        mean = (counts @ s1) / n
        var = np.maximum((counts @ s2) - n * mean * mean, 0.0) / np.maximum(n - 1.0, 1.0)
        means[start:stop] = mean
        sds[start:stop] = np.sqrt(var)
    if g > 1:
        # Resampling G clusters shrinks the spread of the mean by (G - 1) / G in variance; widening the
        # resampled means by sqrt(G / (G - 1)) matches the CR1 variance (few clusters undercover otherwise).
        centre = float(s1.sum() / size.sum())
        means = centre + (means - centre) * math.sqrt(g / (g - 1))
    return means, sds


def percentile_interval(values: FloatArray, confidence: float) -> tuple[float, float] | None:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high)


def cohens_dz(d: FloatArray) -> float | None:
    """mean(d) / sd(d); None with fewer than two pairs or sd 0 (an effect size is then undefined)."""
    if d.size < 2:
        return None
    sd = float(d.std(ddof=1))
    return float(d.mean()) / sd if sd > 0.0 else None


def bootstrap_summary(
    d: FloatArray,
    codes: IntArray | None = None,
    *,
    n_resamples: int = 10_000,
    seed: int = 42,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Percentile intervals of mean(d) and of Cohen's d_z from one set of (clustered) resamples."""
    if d.size == 0:
        return {"ci95": None, "dz": None, "dz_ci95": None}
    means, sds = resampled_moments(d, codes, n_resamples=n_resamples, seed=seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        dz = np.where(sds > 0.0, means / sds, np.nan)
    dz_obs = cohens_dz(d)
    return {
        "ci95": percentile_interval(means, confidence),
        "dz": dz_obs,
        "dz_ci95": percentile_interval(dz, confidence) if dz_obs is not None else None,
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
    from ragmeter.experiments.significance import permutation_test

    sums = _cluster_sums(d, codes)[0]
    return permutation_test(np.zeros_like(sums), sums, n_resamples=n_resamples, seed=seed)


def query_clusters(queries: Iterable[EvalQuery], field: str, needed: Iterable[str]) -> dict[str, Any]:
    """{query_id: its metadata[field]} for --cluster-by; InputError naming the first query without the
    field, or when fewer than two clusters remain (nothing to resample)."""
    from ragmeter.errors import InputError

    by_id = {q.query_id: q for q in queries}
    out: dict[str, Any] = {}
    for qid in needed:
        q = by_id.get(qid)
        if q is None or field not in q.metadata:
            where = "is not in the dataset" if q is None else f"has no metadata field {field!r}"
            raise InputError(f"query {qid!r} {where}", source=f"--cluster-by {field}")
        value = q.metadata[field]
        out[qid] = value if isinstance(value, (str, int, float, bool)) else repr(value)
    if len({str(v) for v in out.values()}) < 2:
        raise InputError(
            f"the compared queries fall in {len(set(map(str, out.values())))} cluster(s); clustered "
            "intervals need at least 2",
            source=f"--cluster-by {field}",
        )
    return out
