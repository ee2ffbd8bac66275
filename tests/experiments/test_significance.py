from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from ragmeter.experiments.significance import (
    bootstrap_ci,
    compare_many,
    compare_results,
    compare_runs,
    holm,
    paired_t_test,
    per_query_values,
    permutation_test,
)
from ragmeter.models import EvalRunResult, MetricResult, QueryEvalResult


def brute_force_perm_p(a: list[float], b: list[float]) -> float:
    """Every one of the 2^n sign patterns of the differences, the textbook way."""
    d = [y - x for x, y in zip(a, b, strict=True)]
    observed = abs(sum(d))
    hits = 0
    total = 0
    for signs in itertools.product((1, -1), repeat=len(d)):
        total += 1
        if abs(sum(s * x for s, x in zip(signs, d, strict=True))) >= observed - 1e-12:
            hits += 1
    return hits / total


@pytest.mark.parametrize("seed", range(6))
def test_t_test_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 40))
    a = rng.random(n)
    b = a + rng.normal(0.05 * seed, 0.2, n)
    expected = stats.ttest_rel(b, a).pvalue
    assert paired_t_test(a, b) == pytest.approx(float(expected), rel=1e-12, abs=1e-15)


def test_t_test_degenerate_cases() -> None:
    assert paired_t_test([0.5], [0.7]) is None
    assert paired_t_test([0.1, 0.2, 0.3], [0.1, 0.2, 0.3]) == 1.0
    # A constant non-zero shift has zero variance: the test calls it p = 0 (scipy gives NaN / 0).
    assert paired_t_test([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]) == 0.0


@pytest.mark.parametrize("seed", range(8))
def test_permutation_exact_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 11))
    # Coarse grades make ties between |sums| common, which is where an off-by-eps would show.
    a = [float(x) for x in rng.integers(0, 4, n) / 4]
    b = [float(x) for x in rng.integers(0, 4, n) / 4]
    p, exact = permutation_test(a, b, n_resamples=10_000)
    assert exact
    assert p == pytest.approx(brute_force_perm_p(a, b), abs=1e-15)


def test_permutation_known_value() -> None:
    # d = (1, 1, 1): only the all-plus and all-minus patterns reach |sum| = 3 -> p = 2/8.
    p, exact = permutation_test([0, 0, 0], [1, 1, 1])
    assert exact and p == 0.25
    assert permutation_test([0.2, 0.4], [0.2, 0.4]) == (1.0, True)
    assert permutation_test([], []) == (None, True)


def test_permutation_monte_carlo_is_seeded_and_close_to_exact() -> None:
    rng = np.random.default_rng(7)
    a = rng.random(14)
    b = a + rng.normal(0.1, 0.3, 14)
    exact_p, exact = permutation_test(a, b, n_resamples=1 << 14)
    assert exact
    mc1, is_exact = permutation_test(a, b, n_resamples=4000, seed=3)
    mc2, _ = permutation_test(a, b, n_resamples=4000, seed=3)
    mc3, _ = permutation_test(a, b, n_resamples=4000, seed=4)
    assert not is_exact
    assert mc1 == mc2
    assert mc1 != mc3
    assert exact_p is not None and mc1 is not None
    # Standard error of a 4000-sample estimate is <= 0.008; 5 sigma.
    assert abs(mc1 - exact_p) < 0.04
    brute = brute_force_perm_p(list(a), list(b))
    assert exact_p == pytest.approx(brute, abs=1e-15)


def test_bootstrap_ci_seeded_and_covers_mean() -> None:
    rng = np.random.default_rng(1)
    a = rng.random(50)
    b = a + rng.normal(0.1, 0.1, 50)
    ci1 = bootstrap_ci(a, b, seed=5)
    ci2 = bootstrap_ci(a, b, seed=5)
    ci3 = bootstrap_ci(a, b, seed=6)
    assert ci1 == ci2 and ci1 != ci3
    assert ci1 is not None
    mean = float((b - a).mean())
    low, high = ci1
    assert low < mean < high
    # Normal-theory half width as a sanity reference: the bootstrap one is within 20% of it.
    se = float((b - a).std(ddof=1) / np.sqrt(50))
    assert (high - low) / 2 == pytest.approx(1.96 * se, rel=0.2)
    assert bootstrap_ci([], []) is None


def test_holm_by_hand() -> None:
    p = [0.01, 0.04, 0.03, None, 0.005]
    # Sorted: 0.005 (x4) = 0.02, 0.01 (x3) = 0.03, 0.03 (x2) = 0.06, 0.04 (x1) = 0.04 -> monotone 0.06.
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, None, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_compare_runs_pairs_and_counts_missing() -> None:
    a = {
        "q1": {"ndcg@10": 0.5, "mrr": 1.0},
        "q2": {"ndcg@10": 0.2, "mrr": 0.5},
        "q3": {"ndcg@10": None, "mrr": 0.0},
        "q4": {"ndcg@10": 0.9, "mrr": 1.0},
    }
    b = {
        "q1": {"ndcg@10": 0.6, "mrr": 1.0},
        "q2": {"ndcg@10": 0.1, "mrr": 1.0},
        "q3": {"ndcg@10": 0.4, "mrr": 0.5},
        "q5": {"ndcg@10": 0.3, "mrr": 1.0},
    }
    cmp = compare_runs(a, b, seed=1, n_resamples=2000)
    assert [m.metric for m in cmp.metrics] == ["ndcg@10", "mrr"]
    ndcg = cmp.get("ndcg@10")
    # Pairs: q1, q2 (q3 null in A, q4 missing in B, q5 missing in A).
    assert ndcg.n == 2 and ndcg.n_excluded == 3
    assert ndcg.n_missing_a == 2 and ndcg.n_missing_b == 1
    assert ndcg.mean_a == pytest.approx(0.35) and ndcg.mean_b == pytest.approx(0.35)
    assert ndcg.delta == pytest.approx(0.0)
    assert (ndcg.wins, ndcg.losses, ndcg.ties) == (1, 1, 0)
    mrr = cmp.get("mrr")
    assert mrr.n == 3 and (mrr.wins, mrr.losses, mrr.ties) == (2, 0, 1)
    assert mrr.delta == pytest.approx(1.0 / 3.0)
    assert mrr.p_perm == pytest.approx(brute_force_perm_p([1.0, 0.5, 0.0], [1.0, 1.0, 0.5]))
    assert mrr.p_t == pytest.approx(float(stats.ttest_rel([1.0, 1.0, 0.5], [1.0, 0.5, 0.0]).pvalue))
    ps = [ndcg.p_perm, mrr.p_perm]
    assert [ndcg.p_holm, mrr.p_holm] == pytest.approx(holm(ps))
    assert [ndcg.p_t_holm, mrr.p_t_holm] == pytest.approx(holm([ndcg.p_t, mrr.p_t]))
    rows = cmp.rows()
    assert rows[1]["metric"] == "mrr" and rows[1]["ci95_low"] == mrr.ci95[0]  # type: ignore[index]


def test_compare_runs_metric_ci_independent_of_other_metrics() -> None:
    rng = np.random.default_rng(0)
    a = {f"q{i}": {"x": float(rng.random()), "y": float(rng.random())} for i in range(30)}
    b = {f"q{i}": {"x": float(rng.random()), "y": float(rng.random())} for i in range(30)}
    both = compare_runs(a, b, n_resamples=500)
    only_x = compare_runs(a, b, metrics=["x"], n_resamples=500)
    assert both.get("x").ci95 == only_x.get("x").ci95
    assert both.get("x").p_perm == only_x.get("x").p_perm
    # Holm over one metric is the raw p; over two it is at least the raw p.
    assert only_x.get("x").p_holm == only_x.get("x").p_perm
    assert both.get("x").p_holm >= both.get("x").p_perm  # type: ignore[operator]


def test_compare_runs_unknown_metric_gives_empty_row() -> None:
    cmp = compare_runs({"q": {"x": 1.0}}, {"q": {"x": 0.0}}, metrics=["x", "nope"])
    nope = cmp.get("nope")
    assert nope.n == 0 and nope.n_excluded == 1 and nope.p_perm is None and nope.p_holm is None
    assert cmp.get("x").p_holm == cmp.get("x").p_perm == 1.0


def test_detects_real_difference() -> None:
    rng = np.random.default_rng(11)
    base = rng.random(200)
    a = {f"q{i}": {"m": float(v)} for i, v in enumerate(base)}
    b = {f"q{i}": {"m": float(min(1.0, v + 0.1))} for i, v in enumerate(base)}
    m = compare_runs(a, b, n_resamples=2000).get("m")
    assert m.p_perm is not None and m.p_perm < 0.01 and m.perm_exact is False
    assert m.p_t is not None and m.p_t < 1e-6
    assert m.significant()
    assert m.ci95 is not None and m.ci95[0] > 0


def test_per_query_values_and_compare_many() -> None:
    def run(name: str, vals: list[float | None]) -> EvalRunResult:
        return EvalRunResult(
            name=name,
            per_query=[
                QueryEvalResult(query_id=f"q{i}", metrics={"m": MetricResult(name="m", value=v)})
                for i, v in enumerate(vals)
            ],
        )

    runs = {
        "bm25": per_query_values(run("bm25", [0.1, 0.2, None])),
        "dense": per_query_values(run("dense", [0.3, 0.2, 0.5])),
        "hybrid": per_query_values(run("hybrid", [0.4, 0.1, 0.6])),
    }
    assert runs["bm25"]["q2"]["m"] is None
    out = compare_many(runs, n_resamples=100)
    assert [(c.run_a, c.run_b) for c in out] == [("bm25", "dense"), ("bm25", "hybrid")]
    assert out[0].get("m").n == 2 and out[0].get("m").n_missing_a == 1
    with pytest.raises(ValueError):
        compare_runs({}, {}, n_resamples=0)


def test_compare_results_from_run_objects() -> None:
    def run(name: str, vals: list[float]) -> EvalRunResult:
        return EvalRunResult(
            name=name,
            per_query=[
                QueryEvalResult(query_id=f"q{i}", metrics={"m": MetricResult(name="m", value=v)})
                for i, v in enumerate(vals)
            ],
        )

    a, b, c = run("x", [0.1, 0.2, 0.3]), run("x", [0.2, 0.4, 0.6]), run("", [0.0, 0.0, 0.0])
    out = compare_results([a, b, c], n_resamples=100)
    assert [(r.run_a, r.run_b) for r in out] == [("x", "x (2)"), ("x", "run3")]
    assert out[0].get("m").delta == pytest.approx(0.2)
    assert out[0].get("m").p_perm == pytest.approx(brute_force_perm_p([0.1, 0.2, 0.3], [0.2, 0.4, 0.6]))


def test_wins_follow_the_registry_direction() -> None:
    import ragmeter.metrics as rm

    a = {"q1": {"hallucination_rate": 0.5, "mrr": 0.5}, "q2": {"hallucination_rate": 0.2, "mrr": 0.5}}
    b = {"q1": {"hallucination_rate": 0.1, "mrr": 1.0}, "q2": {"hallucination_rate": 0.2, "mrr": 0.2}}
    cmp = compare_runs(a, b, seed=1, n_resamples=200)
    hr, mrr = cmp.get("hallucination_rate"), cmp.get("mrr")
    assert rm.higher_is_better("hallucination_rate") is False and hr.higher_is_better is False
    # less hallucination in B on q1 is a win for B; the delta keeps its sign (B - A)
    assert (hr.wins, hr.losses, hr.ties) == (1, 0, 1) and hr.delta == pytest.approx(-0.2)
    assert mrr.higher_is_better and (mrr.wins, mrr.losses, mrr.ties) == (1, 1, 0)
