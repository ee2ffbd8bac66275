"""AP rank correlation: Yilmaz, Aslam and Robertson's tau_AP (SIGIR 2008) for rankings without ties, and
Urbano and Marrero's tau_AP,b (ICTIR 2017, "The Treatment of Ties in AP Correlation") when either ranking
has ties, as system scores under coarse qrels often do.

Higher score = better = earlier. tau_AP walks the estimated ranking and gives each item the share of the
items above it that the truth also puts above it; swaps near the top cost more than swaps below.

tau_AP,b treats the two rankings alike (both may tie; the value is symmetric): for each ranking as the
grouping one, every item outside its top tie group scores c_i / p_i, where p_i counts the items strictly above
it there and c_i those that the other ranking puts strictly above it too; the direction's value is
2 / (items outside the top group) * sum - 1, and tau_AP,b is the mean of both directions. Without ties it
is the mean of tau_AP in both directions (not the asymmetric tau_AP). Identical rankings score 1, tied or not.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def _pair(
    a: Sequence[float] | npt.ArrayLike, b: Sequence[float] | npt.ArrayLike
) -> tuple[FloatArray, FloatArray]:
    x = np.asarray(a, dtype=np.float64).reshape(-1)
    y = np.asarray(b, dtype=np.float64).reshape(-1)
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("agreement statistics need finite values")
    if len(x) != len(y):
        raise ValueError(f"the two raters label different numbers of items ({len(x)} vs {len(y)})")
    return x, y


def has_ties(values: FloatArray) -> bool:
    return len(np.unique(values)) < len(values)


def _yilmaz(t: FloatArray, e: FloatArray) -> float:
    order = np.argsort(-e, kind="stable")
    ts = t[order]
    total = sum(float((ts[:i] > ts[i]).sum()) / i for i in range(1, len(ts)))
    return 2.0 * total / (len(ts) - 1) - 1.0


def _tau_ap_b_direction(group_by: FloatArray, other: FloatArray) -> float | None:
    above = group_by[None, :] > group_by[:, None]  # [i, j]: j strictly above i in the grouping ranking
    both = above & (other[None, :] > other[:, None])
    p = above.sum(axis=1)
    scored = p > 0  # items outside the top tie group
    if not scored.any():
        return None  # every item tied: no order to compare
    share = both.sum(axis=1)[scored] / p[scored]
    return float(2.0 * share.sum() / scored.sum() - 1.0)


def tau_ap_b(a: Sequence[float] | npt.ArrayLike, b: Sequence[float] | npt.ArrayLike) -> float | None:
    """Urbano and Marrero's tau_AP,b of two score lists (ties allowed in both); None when undefined
    (fewer than two items, or one list all tied)."""
    x, y = _pair(a, b)
    if len(x) < 2:
        return None
    one, two = _tau_ap_b_direction(x, y), _tau_ap_b_direction(y, x)
    if one is None or two is None:
        return None
    return (one + two) / 2.0


def tau_ap(truth: Sequence[float] | npt.ArrayLike, estimate: Sequence[float] | npt.ArrayLike) -> float | None:
    """AP correlation of the ranking by `estimate` against the ranking by `truth`.

    Without ties: Yilmaz et al.'s tau_AP = 2/(N-1) * sum_{i=2..N} C(i)/(i-1) - 1 over the estimated ranking,
    C(i) = items above rank i that the truth also puts above it (asymmetric by design). With a tie in
    either list, which that definition does not cover: tau_AP,b (`tau_ap_b`). `tau_ap_variant` says which.
    """
    t, e = _pair(truth, estimate)
    if len(t) < 2:
        return None
    if has_ties(t) or has_ties(e):
        return tau_ap_b(t, e)
    return _yilmaz(t, e)


def tau_ap_variant(truth: Sequence[float] | npt.ArrayLike, estimate: Sequence[float] | npt.ArrayLike) -> str:
    """Which definition `tau_ap` used on these lists."""
    t, e = _pair(truth, estimate)
    if has_ties(t) or has_ties(e):
        return "tau_ap_b (Urbano and Marrero 2017; ties present)"
    return "tau_ap (Yilmaz, Aslam and Robertson 2008)"


__all__ = ["has_ties", "tau_ap", "tau_ap_b", "tau_ap_variant"]
