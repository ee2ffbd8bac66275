"""Agreement statistics against their oracles: scikit-learn's cohen_kappa_score, scipy's kendalltau and
spearmanr; tau_AP by hand; bootstrap intervals seeded and containing the point estimate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.validity.agreement import (
    agreement,
    average_ranks,
    bootstrap_interval,
    cohen_kappa,
    confusion_matrix,
    kendall_tau,
    spearman,
    tau_ap,
)

sklearn_metrics = pytest.importorskip("sklearn.metrics")
scipy_stats = pytest.importorskip("scipy.stats")

# The oracles warn on undefined cases (a constant rater); we check that ours says None there.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning")

pairs_of_labels = st.integers(2, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 3), min_size=n, max_size=n),
        st.lists(st.integers(0, 3), min_size=n, max_size=n),
    )
)


def _same(ours: float | None, oracle: float) -> None:
    if ours is None:
        assert not math.isfinite(oracle)
    else:
        assert ours == pytest.approx(oracle, abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(pairs_of_labels, st.sampled_from([None, "linear", "quadratic"]))
def test_kappa_equals_sklearn(labels: tuple[list[int], list[int]], weights: str | None) -> None:
    a, b = labels
    with np.errstate(all="ignore"):
        oracle = sklearn_metrics.cohen_kappa_score(a, b, weights=weights)
    _same(cohen_kappa(a, b, weights=weights), float(oracle))  # type: ignore[arg-type]


@settings(max_examples=100, deadline=None)
@given(pairs_of_labels)
def test_kappa_with_the_full_scale_equals_sklearn_with_labels(labels: tuple[list[int], list[int]]) -> None:
    a, b = labels
    with np.errstate(all="ignore"):
        oracle = sklearn_metrics.cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights="quadratic")
    _same(cohen_kappa(a, b, weights="quadratic", labels=[0, 1, 2, 3]), float(oracle))


def test_kappa_of_booleans_and_strings() -> None:
    a = [True, False, True, True, False, False]
    b = [True, False, False, True, False, True]
    assert cohen_kappa(a, b) == pytest.approx(sklearn_metrics.cohen_kappa_score(a, b))
    s = ["rel", "non", "rel", "non"]
    t = ["rel", "rel", "rel", "non"]
    assert cohen_kappa(s, t) == pytest.approx(sklearn_metrics.cohen_kappa_score(s, t))


def test_kappa_undefined_is_none_not_nan() -> None:
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) is None
    assert cohen_kappa([], []) is None


def test_confusion_matrix_rows_are_the_first_rater() -> None:
    labels, m = confusion_matrix([0, 0, 1, 2], [0, 1, 1, 1], labels=[0, 1, 2, 3])
    assert labels == [0, 1, 2, 3]
    assert m == [[1, 1, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]]
    oracle = sklearn_metrics.confusion_matrix([0, 0, 1, 2], [0, 1, 1, 1], labels=[0, 1, 2, 3])
    assert m == oracle.tolist()


def test_unknown_label_and_length_mismatch_raise() -> None:
    with pytest.raises(ValueError, match="not in the label set"):
        cohen_kappa([0, 5], [0, 1], labels=[0, 1])
    with pytest.raises(ValueError, match="different numbers"):
        cohen_kappa([0, 1], [0])


values = st.lists(
    st.tuples(st.integers(-3, 3).map(float), st.floats(-2, 2, allow_nan=False).map(lambda x: round(x, 1))),
    min_size=2,
    max_size=50,
)


@settings(max_examples=300, deadline=None)
@given(values)
def test_kendall_tau_b_and_spearman_equal_scipy(pairs: list[tuple[float, float]]) -> None:
    x = [p[0] for p in pairs]
    y = [p[1] for p in pairs]
    with np.errstate(all="ignore"):
        tau = scipy_stats.kendalltau(x, y).statistic
        rho = scipy_stats.spearmanr(x, y).statistic
    _same(kendall_tau(x, y), float(tau))
    _same(spearman(x, y), float(rho))


def test_average_ranks_equal_rankdata() -> None:
    x = [3.0, 1.0, 3.0, 2.0, 3.0, 0.5]
    assert average_ranks(x).tolist() == scipy_stats.rankdata(x).tolist()


def test_tau_ap_by_hand() -> None:
    truth = [4, 3, 2, 1]  # a > b > c > d
    assert tau_ap(truth, truth) == pytest.approx(1.0)
    assert tau_ap(truth, [1, 2, 3, 4]) == pytest.approx(-1.0)
    # b a c d: C = 0/1, 2/2, 3/3 -> 2/3 * 2 - 1
    assert tau_ap(truth, [3, 4, 2, 1]) == pytest.approx(1 / 3)
    # a b d c: C = 1/1, 2/2, 2/3 -> 2/3 * (8/3) - 1
    assert tau_ap(truth, [4, 3, 1, 2]) == pytest.approx(7 / 9)
    # Kendall's tau counts both swaps the same; tau_AP punishes the swap at the top more.
    assert kendall_tau(truth, [3, 4, 2, 1]) == kendall_tau(truth, [4, 3, 1, 2])
    assert tau_ap(truth, [3, 4, 2, 1]) < tau_ap(truth, [4, 3, 1, 2])  # type: ignore[operator]


@settings(max_examples=100, deadline=None)
@given(st.permutations(list(range(8))))
def test_tau_ap_is_within_bounds_and_one_only_for_the_same_order(perm: list[int]) -> None:
    truth = list(range(8, 0, -1))
    est = [float(8 - p) for p in perm]
    value = tau_ap(truth, est)
    assert value is not None and -1.0 - 1e-12 <= value <= 1.0 + 1e-12
    assert (abs(value - 1.0) < 1e-12) == (perm == list(range(8)))


def test_bootstrap_is_seeded_and_contains_the_estimate() -> None:
    rng = np.random.default_rng(3)
    human = rng.integers(0, 4, 300).tolist()
    judge = np.clip(np.array(human) + rng.integers(-1, 2, 300), 0, 3).tolist()
    one = agreement(human, judge, labels=[0, 1, 2, 3], n_resamples=500, seed=7)
    two = agreement(human, judge, labels=[0, 1, 2, 3], n_resamples=500, seed=7)
    assert one.to_dict() == two.to_dict()
    for key in ("accuracy", "kappa", "weighted_kappa", "spearman", "kendall"):
        lo, hi = getattr(one, f"{key}_ci")
        assert lo is not None and hi is not None
        assert lo <= getattr(one, key) <= hi, key
    assert one.kappa == pytest.approx(sklearn_metrics.cohen_kappa_score(human, judge))
    assert one.weighted_kappa == pytest.approx(
        sklearn_metrics.cohen_kappa_score(human, judge, weights="quadratic", labels=[0, 1, 2, 3])
    )
    assert sum(map(sum, one.confusion)) == 300


def test_bootstrap_of_a_constant_rater_has_no_interval() -> None:
    ci = bootstrap_interval(lambda idx: None, 10, n_resamples=50, seed=0)
    assert (ci.lo, ci.hi, ci.n_valid) == (None, None, 0)
    report = agreement([1, 1, 1, 1], [1, 0, 1, 1], labels=[0, 1])
    assert report.kappa == pytest.approx(sklearn_metrics.cohen_kappa_score([1, 1, 1, 1], [1, 0, 1, 1]))
    assert report.spearman is None and report.kendall is None
    assert report.notes
