"""The sign test against scipy's exact binomial test, and the net shift's counts and interval."""

from __future__ import annotations

import pytest

from ragmeter.stats.sign import net_shift, sign_test

scipy_stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize(("favour", "against"), [(0, 10), (7, 3), (50, 50), (61, 39), (5000, 5100), (1, 0)])
def test_sign_test_is_the_exact_binomial_test(favour: int, against: int) -> None:
    want = scipy_stats.binomtest(favour, favour + against).pvalue
    assert sign_test(favour, against) == pytest.approx(want, rel=1e-9)


def test_no_moves_no_evidence() -> None:
    assert sign_test(0, 0) == 1.0
    with pytest.raises(ValueError):
        sign_test(-1, 2)


def test_net_shift_counts_ties_in_n_and_is_seeded() -> None:
    signs = [1] * 30 + [-1] * 10 + [0] * 60
    s = net_shift(signs, seed=3)
    assert (s.n, s.favour, s.against, s.ties) == (100, 30, 10, 60)
    assert s.shift == pytest.approx(0.2)
    assert s.interval is not None and s.interval[0] < 0.2 < s.interval[1]
    assert net_shift(signs, seed=3).interval == s.interval
    assert s.beyond(0.05) == 1 and s.beyond(0.5) == 0
    assert net_shift([-x for x in signs], seed=3).beyond(0.05) == -1
    assert net_shift([0] * 20).interval == (0.0, 0.0)
    with pytest.raises(ValueError):
        net_shift([2])
