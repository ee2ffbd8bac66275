"""Paired significance tests between two runs over the same queries.

Input is plain data: ``{query_id: {metric: value or None}}`` per run, so this module needs neither the
store nor the runner. For each metric the queries with a value in both runs are paired; a query that is
missing or null in either run is left out of that metric's pairing and counted.

Tests (two-sided, on the per-query differences d = b - a):
- paired t-test (scipy's Student t distribution, imported lazily);
- Fisher's randomisation test: sign flips of d, statistic |mean(d)|; exact enumeration of all 2^m sign
  patterns (m = non-zero differences) when 2^m <= n_resamples, else a seeded Monte Carlo estimate
  (count + 1) / (n_resamples + 1);
- percentile bootstrap 95% CI of mean(d), seeded, n_resamples resamples of the paired queries.
Holm-Bonferroni corrects the p-values across the metrics of one comparison. Beside the delta: Cohen's d_z
with its bootstrap interval and the minimum detectable effect (alpha 0.05, power 0.8). With clusters
(``clusters={query_id: label}``) the bootstrap resamples clusters, the randomisation test flips one sign
per cluster and the t-test uses the cluster-robust SE. Every statistic comes from ``ragmeter.stats``
(the intervals from its one bootstrap, ``ragmeter.stats.resample``).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ragmeter.stats import effects
from ragmeter.stats.paired import FloatArray
from ragmeter.stats.paired import bootstrap_ci as bootstrap_ci
from ragmeter.stats.paired import holm as holm
from ragmeter.stats.paired import paired_t_test as paired_t_test
from ragmeter.stats.paired import permutation_test as permutation_test
from ragmeter.stats.power import paired_mde

if TYPE_CHECKING:
    from ragmeter.models import EvalRunResult

PerQuery = Mapping[str, Mapping[str, float | None]]


class MetricComparison(BaseModel):
    """One metric of a paired comparison of run B against run A (delta = mean_b - mean_a)."""

    model_config = ConfigDict(extra="forbid")

    metric: str
    n: int = Field(description="queries with a value in both runs (the pairs)")
    n_excluded: int = Field(description="queries missing or null in at least one run")
    n_missing_a: int = 0
    n_missing_b: int = 0
    mean_a: float | None = None
    mean_b: float | None = None
    delta: float | None = None
    ci95: tuple[float, float] | None = None
    p_t: float | None = None
    p_perm: float | None = None
    perm_exact: bool | None = None
    p_holm: float | None = Field(default=None, description="Holm-adjusted p_perm across metrics")
    p_t_holm: float | None = Field(default=None, description="Holm-adjusted p_t across metrics")
    higher_is_better: bool = Field(default=True, description="the metric's direction (ragmeter.metrics)")
    wins: int = Field(default=0, description="queries where b is better than a, in the metric's direction")
    losses: int = Field(default=0, description="queries where b is worse than a")
    ties: int = 0
    dz: float | None = Field(default=None, description="Cohen's d_z = mean(d) / sd(d)")
    dz_ci95: tuple[float, float] | None = None
    mde: float | None = Field(default=None, description="minimum detectable |delta| at alpha 0.05, power 0.8")
    n_clusters: int | None = Field(
        default=None, description="clusters of the pairs when resampled by cluster"
    )

    def significant(self, alpha: float = 0.05) -> bool:
        return self.p_holm is not None and self.p_holm < alpha


class Comparison(BaseModel):
    """A paired comparison of run B against run A over a set of metrics."""

    model_config = ConfigDict(extra="forbid")

    run_a: str = "A"
    run_b: str = "B"
    seed: int
    n_resamples: int
    confidence: float = 0.95
    cluster_by: str | None = None
    method: str = "paired over queries"
    metrics: list[MetricComparison]

    def get(self, metric: str) -> MetricComparison:
        for m in self.metrics:
            if m.metric == metric:
                return m
        raise KeyError(metric)

    def rows(self) -> list[dict[str, Any]]:
        """Flat rows (one per metric) for tables and CSV exports."""
        out = []
        for m in self.metrics:
            row: dict[str, Any] = {"run_a": self.run_a, "run_b": self.run_b}
            row.update(m.model_dump(exclude={"ci95", "dz_ci95"}))
            row["ci95_low"] = m.ci95[0] if m.ci95 else None
            row["ci95_high"] = m.ci95[1] if m.ci95 else None
            out.append(row)
        return out


def per_query_values(run: EvalRunResult) -> dict[str, dict[str, float | None]]:
    """The ``{query_id: {metric: value}}`` table of a run (failed queries keep their null metrics)."""
    return {q.query_id: {name: m.value for name, m in q.metrics.items()} for q in run.per_query}


def _metric_names(per_query: PerQuery) -> list[str]:
    seen: dict[str, None] = {}
    for values in per_query.values():
        for name in values:
            seen.setdefault(name, None)
    return list(seen)


def _pair(
    per_query_a: PerQuery, per_query_b: PerQuery, metric: str
) -> tuple[FloatArray, FloatArray, int, int, list[str]]:
    """Paired arrays (in sorted query-id order), counts of queries lacking a value in A / in B, and the
    paired query ids."""
    ids: list[str] = []
    xs: list[float] = []
    ys: list[float] = []
    missing_a = missing_b = 0
    for qid in sorted(set(per_query_a) | set(per_query_b)):
        a = per_query_a.get(qid, {}).get(metric)
        b = per_query_b.get(qid, {}).get(metric)
        if a is None:
            missing_a += 1
        if b is None:
            missing_b += 1
        if a is None or b is None:
            continue
        ids.append(qid)
        xs.append(float(a))
        ys.append(float(b))
    return np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64), missing_a, missing_b, ids


def _metric_seed(seed: int, metric: str) -> list[int]:
    # Each metric gets its own stream, so a metric's CI does not depend on which others are compared.
    return [seed, zlib.crc32(metric.encode("utf-8"))]


def compare_metric(
    per_query_a: PerQuery,
    per_query_b: PerQuery,
    metric: str,
    clusters: Mapping[str, Any] | None = None,
    *,
    seed: int = 42,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
) -> MetricComparison:
    """All paired statistics of one metric (without the Holm correction, which needs every metric)."""
    from ragmeter.metrics import higher_is_better

    a, b, missing_a, missing_b, ids = _pair(per_query_a, per_query_b, metric)
    n = int(a.size)
    n_all = len(set(per_query_a) | set(per_query_b))
    result = MetricComparison(
        metric=metric,
        n=n,
        n_excluded=n_all - n,
        n_missing_a=missing_a,
        n_missing_b=missing_b,
        higher_is_better=higher_is_better(metric),
    )
    if n == 0:
        return result
    d = b - a
    codes = effects.cluster_codes([clusters[q] for q in ids]) if clusters is not None else None
    boot = effects.bootstrap_summary(d, codes, n_resamples=n_resamples, seed=seed + 2, confidence=confidence)
    result.mean_a = float(a.mean())
    result.mean_b = float(b.mean())
    result.delta = float(d.mean())
    result.dz, result.dz_ci95 = boot["dz"], boot["dz_ci95"]
    result.mde = paired_mde(d, codes)
    if codes is None:
        p_perm, exact = permutation_test(a, b, n_resamples=n_resamples, seed=seed + 1)
        result.ci95 = bootstrap_ci(a, b, n_resamples=n_resamples, seed=seed, confidence=confidence)
        result.p_t = paired_t_test(a, b)
    else:
        p_perm, exact = effects.sign_flip_test(d, codes, n_resamples=n_resamples, seed=seed + 1)
        result.ci95 = boot["ci95"]
        result.p_t = effects.clustered_t_test(d, codes)
        result.n_clusters = int(codes.max()) + 1
    result.p_perm = p_perm
    result.perm_exact = exact
    better = d if result.higher_is_better else -d
    result.wins = int(np.count_nonzero(better > 0))
    result.losses = int(np.count_nonzero(better < 0))
    result.ties = int(np.count_nonzero(d == 0))
    return result


def compare_runs(
    per_query_a: PerQuery,
    per_query_b: PerQuery,
    *,
    metrics: Iterable[str] | None = None,
    seed: int = 42,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    names: tuple[str, str] = ("A", "B"),
    clusters: Mapping[str, Any] | None = None,
    cluster_by: str | None = None,
) -> Comparison:
    """Paired comparison of run B against run A, Holm-corrected across the compared metrics.

    ``metrics`` defaults to the metrics that occur in both runs, in run A's order. ``clusters`` maps every
    query id to its cluster (named ``cluster_by``).
    """
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")
    if metrics is None:
        in_b = set(_metric_names(per_query_b))
        names_list = [m for m in _metric_names(per_query_a) if m in in_b]
    else:
        names_list = list(dict.fromkeys(metrics))
    rows = [
        compare_metric(
            per_query_a,
            per_query_b,
            metric,
            seed=_seed_for(seed, metric),
            n_resamples=n_resamples,
            confidence=confidence,
            clusters=clusters,
        )
        for metric in names_list
    ]
    for row, p in zip(rows, holm([r.p_perm for r in rows]), strict=True):
        row.p_holm = p
    for row, p in zip(rows, holm([r.p_t for r in rows]), strict=True):
        row.p_t_holm = p
    return Comparison(
        run_a=names[0],
        run_b=names[1],
        seed=seed,
        n_resamples=n_resamples,
        confidence=confidence,
        cluster_by=cluster_by if clusters is not None else None,
        method=(
            f"clusters of {cluster_by or 'the given field'} resampled (mean interval widened by "
            "sqrt(G/(G-1)); d_z interval not); signs flipped per cluster; cluster-robust t"
            if clusters is not None
            else "paired over queries"
        ),
        metrics=rows,
    )


def _seed_for(seed: int, metric: str) -> int:
    state = np.random.SeedSequence(_metric_seed(seed, metric)).generate_state(1)
    return int(state[0])


def compare_many(
    runs: Mapping[str, PerQuery],
    *,
    baseline: str | None = None,
    metrics: Iterable[str] | None = None,
    seed: int = 42,
    n_resamples: int = 10_000,
    clusters: Mapping[str, Any] | None = None,
    cluster_by: str | None = None,
) -> list[Comparison]:
    """Each run against the baseline (default: the first run), as `ragmeter runs compare A B C` shows."""
    if not runs:
        return []
    base = baseline if baseline is not None else next(iter(runs))
    if base not in runs:
        raise KeyError(base)
    metric_list = list(metrics) if metrics is not None else None
    return [
        compare_runs(
            runs[base],
            values,
            metrics=metric_list,
            seed=seed,
            n_resamples=n_resamples,
            names=(base, name),
            clusters=clusters,
            cluster_by=cluster_by,
        )
        for name, values in runs.items()
        if name != base
    ]


def compare_results(runs: Sequence[EvalRunResult], **options: Any) -> list[Comparison]:
    """`ragmeter runs compare A B [C ...]`: each run against the first, from EvalRunResult objects, with
    `compare_many`'s options (metrics, seed, n_resamples, clusters, cluster_by).

    Runs are labelled by name, else run id, else position (made unique).
    """
    labels: list[str] = []
    for i, run in enumerate(runs):
        label = run.name or run.run_id or f"run{i + 1}"
        labels.append(label if label not in labels else f"{label} ({i + 1})")
    values = {label: per_query_values(run) for label, run in zip(labels, runs, strict=True)}
    return compare_many(values, **options)
