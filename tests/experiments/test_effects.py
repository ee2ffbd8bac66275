"""Effect sizes, clustered intervals and tests, power planning and the randomised Tukey HSD.

The seeded simulations below use 1,000 or more datasets each: a coverage or rejection rate near 0.95 or
0.05 then has a Monte Carlo standard error of about 0.007, and each tolerance is named beside its assert.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ragmeter.experiments import tukey
from ragmeter.experiments.effects import query_clusters
from ragmeter.experiments.significance import compare_runs, permutation_test
from ragmeter.stats import effects, power
from ragmeter.stats import tukey as stats_tukey

MC_SE = 0.007  # sqrt(0.05 * 0.95 / 1000)


def test_cohens_dz_and_its_interval() -> None:
    d = np.array([0.1, 0.3, 0.2, 0.4, 0.0, 0.2])
    assert effects.cohens_dz(d) == pytest.approx(d.mean() / d.std(ddof=1))
    s = effects.bootstrap_summary(d, n_resamples=4000, seed=3)
    assert s["dz_ci95"][0] < s["dz"] < s["dz_ci95"][1]
    assert s["ci95"][0] < d.mean() < s["ci95"][1]
    assert effects.cohens_dz(np.zeros(4)) is None and effects.cohens_dz(np.ones(1)) is None


def test_clustered_forms_reduce_to_cluster_sums() -> None:
    rng = np.random.default_rng(0)
    d = rng.normal(0.1, 1.0, 24)
    codes = np.repeat(np.arange(6), 4)
    sums = np.bincount(codes, weights=d)
    # one sign per cluster: Fisher's test on the cluster sums (exact: 2^6 patterns)
    p, exact = effects.sign_flip_test(d, codes, n_resamples=10_000)
    assert exact and p == pytest.approx(permutation_test(np.zeros(6), sums)[0])
    # CR1 standard error by hand
    centred = np.bincount(codes, weights=d - d.mean())
    se = math.sqrt(6 / 5 * float(np.sum(centred**2))) / 24
    assert effects.clustered_se(d, codes) == (pytest.approx(se), 6)
    t = d.mean() / se
    assert effects.clustered_t_test(d, codes) == pytest.approx(2 * stats.t.sf(abs(t), 5))
    # each query its own cluster: the resampled moments are those of the plain bootstrap
    m1, _ = effects.resampled_moments(d, None, n_resamples=20_000, seed=1)
    m2, _ = effects.resampled_moments(d, np.arange(24), n_resamples=20_000, seed=1)
    assert np.array_equal(m1, m2) and m1.std() == pytest.approx(d.std() / math.sqrt(24), rel=0.05)


def test_compare_runs_clustered_names_method_and_widens() -> None:
    rng = np.random.default_rng(5)
    g = np.repeat(rng.normal(0, 0.3, 20), 5)
    a = {f"q{i}": {"mrr": 0.5} for i in range(100)}
    b = {f"q{i}": {"mrr": 0.5 + 0.05 + g[i] + rng.normal(0, 0.05)} for i in range(100)}
    clusters = {f"q{i}": f"doc{i // 5}" for i in range(100)}
    plain = compare_runs(a, b, n_resamples=2000).get("mrr")
    clustered = compare_runs(a, b, n_resamples=2000, clusters=clusters, cluster_by="doc")
    m = clustered.get("mrr")
    assert clustered.cluster_by == "doc" and "clusters of doc" in clustered.method
    assert m.n_clusters == 20 and plain.n_clusters is None
    assert plain.ci95 is not None and m.ci95 is not None
    assert (m.ci95[1] - m.ci95[0]) > 1.5 * (plain.ci95[1] - plain.ci95[0])
    assert m.mde is not None and plain.mde is not None and m.mde > plain.mde
    assert m.dz == pytest.approx(plain.dz) and m.dz_ci95 is not None


def test_query_clusters_refuses_missing_field() -> None:
    from ragmeter.errors import InputError
    from ragmeter.models import EvalQuery

    qs = [EvalQuery(query_id="a", question="?", metadata={"doc": 1}), EvalQuery(query_id="b", question="?")]
    with pytest.raises(InputError, match="query 'b' has no metadata field 'doc'"):
        query_clusters(qs, "doc", ["a", "b"])
    with pytest.raises(InputError, match="at least 2"):
        query_clusters(qs, "doc", ["a"])


def test_sim_clustered_intervals_cover_where_query_level_undercover() -> None:
    """2,000 datasets of 40 clusters x 4 queries, intra-cluster correlation 0.8: the clustered interval
    covers >= 0.93 (nominal 0.95; its true coverage is about 0.94, MC SE here 0.005); the query-level
    interval, on the first 500 of them, covers < 0.85 (about 0.70)."""
    rng = np.random.default_rng(2025)
    clusters, size, delta = 40, 4, 0.1
    codes = np.repeat(np.arange(clusters), size)
    hits_c = hits_q = 0
    for i in range(2000):
        d = delta + np.repeat(rng.normal(0, 0.2, clusters), size) + rng.normal(0, 0.1, clusters * size)
        lo, hi = effects.bootstrap_summary(d, codes, n_resamples=1000, seed=i)["ci95"]
        hits_c += lo <= delta <= hi
        if i < 500:
            lo, hi = effects.bootstrap_summary(d, None, n_resamples=1000, seed=i)["ci95"]
            hits_q += lo <= delta <= hi
    assert hits_c / 2000 >= 0.93
    assert hits_q / 500 < 0.85


def test_sim_clustered_sign_flip_keeps_its_level() -> None:
    """1,000 null datasets, 30 clusters: per-cluster sign flips reject <= 0.05 + 0.015 (2 MC SE); per-query
    flips, blind to the clusters, reject far more often."""
    rng = np.random.default_rng(7)
    codes = np.repeat(np.arange(30), 5)
    rej_c = rej_q = 0
    for i in range(1000):
        d = np.repeat(rng.normal(0, 0.2, 30), 5) + rng.normal(0, 0.1, 150)
        rej_c += effects.sign_flip_test(d, codes, n_resamples=400, seed=i)[0] < 0.05  # type: ignore[operator]
        rej_q += effects.sign_flip_test(d, None, n_resamples=400, seed=i)[0] < 0.05  # type: ignore[operator]
    assert rej_c / 1000 <= 0.05 + 0.015
    assert rej_q / 1000 > 0.2


@pytest.mark.parametrize(("mde", "sd"), [(0.05, 0.2), (0.1, 0.25)])
def test_sim_planned_power_matches_paired_t_test(mde: float, sd: float) -> None:
    """Plan n from a pilot of the true sd, then simulate 4,000 datasets of n pairs at the true effect: the
    paired t-test's rejection rate is within 0.05 of the planned power (MC SE ~0.0065)."""
    n = power.queries_needed(mde, sd, alpha=0.05, power=0.8)
    assert n is not None and power.power_paired_t(n - 1, mde / sd) < 0.8 <= power.power_paired_t(n, mde / sd)
    planned = power.power_paired_t(n, mde / sd)
    rng = np.random.default_rng(11)
    d = rng.normal(mde, sd, (4000, n))
    t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(n))
    simulated = float(np.mean(2 * stats.t.sf(np.abs(t), n - 1) < 0.05))
    assert abs(simulated - planned) <= 0.05
    # the minimum detectable effect of n pairs with the true se inverts the plan
    mde_back = power.min_detectable_effect(sd / math.sqrt(n), n - 1)
    assert mde_back is not None and mde_back <= mde and mde_back == pytest.approx(mde, rel=0.02)


def test_plan_queries_from_one_run_uses_rho() -> None:
    x = np.linspace(0, 1, 50)
    plan0 = power.plan_queries(x, mde=0.05)
    plan5 = power.plan_queries(x, mde=0.05, rho=0.5)
    assert plan0["sd_d"] == pytest.approx(math.sqrt(2 * x.var(ddof=1)))
    assert plan5["sd_d"] == pytest.approx(math.sqrt(x.var(ddof=1)))
    assert plan5["queries_needed"] < plan0["queries_needed"]
    paired = power.plan_queries(x, vs=x + np.tile([0.0, 0.1], 25), mde=0.05)
    assert paired["sd_d"] == pytest.approx(np.tile([0.0, 0.1], 25).std(ddof=1))


def test_tukey_hsd_finds_the_different_system() -> None:
    rng = np.random.default_rng(3)
    base = rng.normal(0.5, 0.2, 60)
    per_system = {
        "a": {f"q{i}": base[i] + rng.normal(0, 0.02) for i in range(60)},
        "b": {f"q{i}": base[i] + rng.normal(0, 0.02) for i in range(60)},
        "c": {f"q{i}": base[i] + 0.05 + rng.normal(0, 0.02) for i in range(60)},
    }
    result = tukey.randomised_tukey_hsd("mrr", per_system, n_resamples=2000, seed=1)
    p = {(x.a, x.b): x.p_adjusted for x in result.pairs}
    assert p[("a", "c")] < 0.01 and p[("b", "c")] < 0.01 and p[("a", "b")] > 0.05
    assert "within query" in result.method


def test_sim_tukey_hsd_family_wise_error_under_null() -> None:
    """1,000 null datasets (4 systems, 30 queries, query effects shared by the systems): the share with any
    pair significant at 0.05 is <= 0.05 + 0.015 (about 2 MC SE)."""
    rng = np.random.default_rng(99)
    upper = np.triu_indices(4, 1)
    family_errors = 0
    for i in range(1000):
        x = rng.normal(0, 1, (30, 1)) + rng.normal(0, 0.5, (30, 4))
        family_errors += bool((stats_tukey.tukey_hsd_pvalues(x, n_resamples=200, seed=i)[upper] < 0.05).any())
    assert family_errors / 1000 <= 0.05 + 0.015


def test_sim_tukey_clustered_permutes_per_cluster() -> None:
    """With clusters, one permutation per cluster: under a null with cluster x system effects, permuting per
    query over-rejects and per cluster keeps <= 0.05 + 0.015 (1,000 datasets)."""
    rng = np.random.default_rng(5)
    codes = np.repeat(np.arange(15), 4)
    upper = np.triu_indices(3, 1)
    err_c = err_q = 0
    for i in range(1000):
        x = np.repeat(rng.normal(0, 0.5, (15, 3)), 4, axis=0) + rng.normal(0, 0.2, (60, 3))
        err_c += bool(
            (stats_tukey.tukey_hsd_pvalues(x, n_resamples=200, seed=i, codes=codes)[upper] < 0.05).any()
        )
        err_q += bool((stats_tukey.tukey_hsd_pvalues(x, n_resamples=200, seed=i)[upper] < 0.05).any())
    assert err_c / 1000 <= 0.05 + 0.015
    assert err_q / 1000 > 0.15


def test_holm_over_metrics_x_variants() -> None:
    from ragmeter.experiments.ablation import _holm_over_grid
    from ragmeter.experiments.significance import holm

    rng = np.random.default_rng(1)
    base = {f"q{i}": {"mrr": 0.5, "map": 0.4} for i in range(30)}
    variants = [
        {
            f"q{i}": {"mrr": 0.5 + shift + rng.normal(0, 0.1), "map": 0.4 + rng.normal(0, 0.1)}
            for i in range(30)
        }
        for shift in (0.0, 0.05, 0.1)
    ]
    comparisons = [compare_runs(base, v, n_resamples=500) for v in variants]
    raw = [m.p_perm for c in comparisons for m in c.metrics]
    _holm_over_grid(comparisons)
    assert [m.p_holm for c in comparisons for m in c.metrics] == pytest.approx(holm(raw))
    assert len(raw) == 6  # 3 variants x 2 metrics in one family
