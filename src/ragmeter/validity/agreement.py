"""Agreement between two raters (a judge and people): accuracy, Cohen's kappa, rank correlations, tau_AP,
with seeded bootstrap intervals.

Everything is numpy; the definitions follow scikit-learn's `cohen_kappa_score` (weights on label
*positions*, as sklearn does: pass the full scale as `labels` so that positions equal grades) and scipy's
`kendalltau` (tau-b) and `spearmanr` (Pearson correlation of average ranks), which the tests use as oracles.
An undefined statistic (one rater constant, fewer than two items) is None, never NaN.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable, Sequence, Sized
from dataclasses import dataclass, field, fields
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ragmeter.stats import resample
from ragmeter.validity.tau_ap import tau_ap as tau_ap
from ragmeter.validity.tau_ap import tau_ap_b as tau_ap_b

Weights = Literal["linear", "quadratic"] | None
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def _as_float(values: Sequence[float] | npt.ArrayLike) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.isfinite(arr).all():
        raise ValueError("agreement statistics need finite values")
    return arr


def _same_length(a: Sized, b: Sized) -> None:
    if len(a) != len(b):
        raise ValueError(f"the two raters label different numbers of items ({len(a)} vs {len(b)})")


# --- confusion matrix, accuracy, kappa -----------------------------------------------------------


def label_set(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[Any]:
    """The labels of both raters, sorted (sklearn's default `labels`)."""
    return sorted(set(a) | set(b))


def encode(
    a: Sequence[Hashable], b: Sequence[Hashable], labels: Sequence[Hashable] | None = None
) -> tuple[list[Any], IntArray, IntArray]:
    """(labels, positions of a, positions of b); a label missing from `labels` raises ValueError."""
    _same_length(a, b)
    labs = list(labels) if labels is not None else label_set(a, b)
    pos = {lab: i for i, lab in enumerate(labs)}
    try:
        ia = np.fromiter((pos[x] for x in a), dtype=np.int64, count=len(a))
        ib = np.fromiter((pos[x] for x in b), dtype=np.int64, count=len(b))
    except KeyError as exc:
        raise ValueError(f"label {exc.args[0]!r} is not in the label set {labs!r}") from None
    return labs, ia, ib


def _confusion(ia: IntArray, ib: IntArray, k: int) -> IntArray:
    return np.bincount(ia * k + ib, minlength=k * k).reshape(k, k).astype(np.int64)


def confusion_matrix(
    a: Sequence[Hashable], b: Sequence[Hashable], labels: Sequence[Hashable] | None = None
) -> tuple[list[Any], list[list[int]]]:
    """(labels, matrix) with matrix[i][j] = items rater a put in labels[i] and rater b in labels[j]."""
    labs, ia, ib = encode(a, b, labels)
    return labs, _confusion(ia, ib, len(labs)).tolist()


def _weight_matrix(k: int, weights: Weights) -> FloatArray:
    idx = np.arange(k, dtype=np.float64)
    diff = np.abs(idx[:, None] - idx[None, :])
    if weights is None:
        return (diff > 0).astype(np.float64)
    if weights == "linear":
        return diff
    if weights == "quadratic":
        return diff**2
    raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")


def _kappa_from_confusion(cm: npt.NDArray[Any], w: FloatArray) -> float | None:
    n = cm.sum()
    if n == 0:
        return None
    expected = np.outer(cm.sum(axis=1), cm.sum(axis=0)) / n
    denom = float((w * expected).sum())
    if denom <= 0.0:
        return None  # both raters used one and the same label: chance agreement is total
    return 1.0 - float((w * cm).sum()) / denom


def cohen_kappa(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    weights: Weights = None,
    labels: Sequence[Hashable] | None = None,
) -> float | None:
    """Cohen's kappa (weights on label positions, as sklearn). None when undefined."""
    labs, ia, ib = encode(a, b, labels)
    k = len(labs)
    return _kappa_from_confusion(_confusion(ia, ib, k), _weight_matrix(k, weights))


def accuracy(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    _same_length(a, b)
    if not a:
        return None
    return sum(1 for x, y in zip(a, b, strict=True) if x == y) / len(a)


# --- rank correlations ---------------------------------------------------------------------------


def average_ranks(values: Sequence[float] | npt.ArrayLike) -> FloatArray:
    """1-based ranks, ties sharing their average rank (scipy.stats.rankdata 'average')."""
    x = _as_float(values)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts).astype(np.float64)
    starts = ends - counts + 1.0
    return ((starts + ends) / 2.0)[inverse.reshape(-1)]


def pearson(x: FloatArray, y: FloatArray) -> float | None:
    if len(x) < 2:
        return None
    dx = x - x.mean()
    dy = y - y.mean()
    denom = float(np.sqrt((dx * dx).sum() * (dy * dy).sum()))
    if denom == 0.0:
        return None
    return float(np.clip((dx * dy).sum() / denom, -1.0, 1.0))


def spearman(a: Sequence[float] | npt.ArrayLike, b: Sequence[float] | npt.ArrayLike) -> float | None:
    """Spearman's rho: Pearson correlation of average ranks (scipy.stats.spearmanr)."""
    x, y = _as_float(a), _as_float(b)
    _same_length(x, y)
    return pearson(average_ranks(x), average_ranks(y))


def _contingency(x: FloatArray, y: FloatArray) -> IntArray:
    _, ix = np.unique(x, return_inverse=True)
    uy, iy = np.unique(y, return_inverse=True)
    kx = int(ix.max()) + 1 if len(ix) else 0
    ky = len(uy)
    return np.bincount(ix.reshape(-1) * ky + iy.reshape(-1), minlength=kx * ky).reshape(kx, ky)


def _tau_b_from_table(table: npt.NDArray[Any]) -> float | None:
    """Kendall's tau-b from the contingency table of the two raters' distinct values (sorted)."""
    t = table.astype(np.float64)
    n = t.sum()
    if n < 2:
        return None
    # below_right[i, j] = sum of t[i' > i, j' > j]; below_left[i, j] = sum of t[i' > i, j' < j].
    suffix = t[::-1, ::-1].cumsum(0).cumsum(1)[::-1, ::-1]  # sum over i' >= i, j' >= j
    below_right = np.zeros_like(t)
    below_right[:-1, :-1] = suffix[1:, 1:]
    rows_below = t[::-1].cumsum(0)[::-1]  # sum over i' >= i, per column
    left = rows_below.cumsum(1)  # sum over i' >= i, j' <= j
    below_left = np.zeros_like(t)
    below_left[:-1, 1:] = left[1:, :-1]
    concordant = float((t * below_right).sum())
    discordant = float((t * below_left).sum())
    n0 = n * (n - 1) / 2.0
    r = t.sum(axis=1)
    c = t.sum(axis=0)
    n1 = float((r * (r - 1) / 2.0).sum())
    n2 = float((c * (c - 1) / 2.0).sum())
    denom = (n0 - n1) * (n0 - n2)
    if denom <= 0.0:
        return None
    return float(np.clip((concordant - discordant) / np.sqrt(denom), -1.0, 1.0))


def kendall_tau(a: Sequence[float] | npt.ArrayLike, b: Sequence[float] | npt.ArrayLike) -> float | None:
    """Kendall's tau-b (scipy.stats.kendalltau's default). Linear in the items, quadratic in the
    distinct values: fine for labels and scores on a scale, and for rankings of a few hundred systems."""
    x, y = _as_float(a), _as_float(b)
    _same_length(x, y)
    return _tau_b_from_table(_contingency(x, y))


# --- bootstrap -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    """A percentile bootstrap interval; `n_valid` resamples gave a defined statistic."""

    lo: float | None
    hi: float | None
    n_boot: int
    n_valid: int

    def as_list(self) -> list[float | None]:
        return [self.lo, self.hi]


def resample_count(n_resamples: int | None, n_boot: int | None, default: int = 1000) -> int:
    """The resample count of an agreement interval: `n_resamples` (the one name every interval takes), or
    `n_boot`, its old name, with a DeprecationWarning; `default` when neither is given."""
    if n_boot is not None:
        warnings.warn("n_boot= is deprecated: pass n_resamples=", DeprecationWarning, stacklevel=3)
        if n_resamples is None:
            return n_boot
    return default if n_resamples is None else n_resamples


def bootstrap_interval(
    statistic: Callable[[IntArray], float | None],
    n: int,
    *,
    n_resamples: int | None = None,
    seed: int = 0,
    level: float = 0.95,
    n_boot: int | None = None,
) -> Interval:
    """Percentile interval of `statistic(indices)` over `n_boot` resamples of range(n) with replacement.

    The one bootstrap (`ragmeter.stats.resample`; 1,000 resamples unless told, seeded by the caller).
    Resamples where the statistic is undefined are skipped (and counted): with fewer than half of them
    valid, there is no interval.
    """
    n_boot = resample_count(n_resamples, n_boot)
    if n < 2 or n_boot < 1:
        return Interval(None, None, n_boot, 0)
    boot = resample.bootstrap(
        resample.per_resample(statistic), n, n_resamples=n_boot, seed=seed, confidence=level
    )
    ci = boot.interval(min_valid=max(1, n_boot // 2))
    if ci is None:
        return Interval(None, None, n_boot, boot.valid())
    return Interval(ci[0], ci[1], n_boot, boot.valid())


# --- the report ----------------------------------------------------------------------------------


@dataclass
class Agreement:
    """Agreement of a judge with people on the same items (labels already on one scale)."""

    n: int
    labels: list[Any]
    accuracy: float | None
    accuracy_ci: list[float | None]
    kappa: float | None
    kappa_ci: list[float | None]
    weighted_kappa: float | None
    weighted_kappa_ci: list[float | None]
    spearman: float | None
    spearman_ci: list[float | None]
    kendall: float | None
    kendall_ci: list[float | None]
    confusion: list[list[int]]  # rows: human, columns: judge
    n_boot: int
    seed: int
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        # the statistics as they are (n, labels, each value and its interval), then the grouped parts
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _GROUPED}
        out["confusion"] = {
            "rows": "human",
            "columns": "judge",
            "labels": self.labels,
            "matrix": self.confusion,
        }
        out["bootstrap"] = {"n_boot": self.n_boot, "seed": self.seed, "level": 0.95, "method": "percentile"}
        out["notes"] = self.notes
        return out


_GROUPED = ("confusion", "n_boot", "seed", "notes")


def agreement(
    human: Sequence[float],
    judge: Sequence[float],
    *,
    labels: Sequence[float] | None = None,
    judge_scores: Sequence[float] | None = None,
    n_resamples: int | None = None,
    seed: int = 0,
    n_boot: int | None = None,
) -> Agreement:
    """Every agreement statistic with its bootstrap 95% interval (one resample set for all of them).

    `human` and `judge` are labels on one scale (`labels`: the whole scale, so that the weighted kappa
    weighs grade distances; default: the labels seen). `judge_scores`, when given, are the judge's raw
    values (before mapping to the scale) and the rank correlations use them instead of `judge`. The
    intervals: 1,000 resamples of the items unless `n_resamples` says otherwise (`n_boot` is its deprecated
    old name), seeded by `seed`.
    """
    n_boot = resample_count(n_resamples, n_boot)
    _same_length(human, judge)
    labs, ih, ij = encode(human, judge, labels)
    k = len(labs)
    h = _as_float(human)
    s = _as_float(judge_scores if judge_scores is not None else judge)
    _same_length(h, s)
    w_plain = _weight_matrix(k, None)
    w_quad = _weight_matrix(k, "quadratic")

    def acc(idx: IntArray) -> float | None:
        return float((ih[idx] == ij[idx]).mean()) if len(idx) else None

    def kap(idx: IntArray) -> float | None:
        return _kappa_from_confusion(_confusion(ih[idx], ij[idx], k), w_plain)

    def wkap(idx: IntArray) -> float | None:
        return _kappa_from_confusion(_confusion(ih[idx], ij[idx], k), w_quad)

    def rho(idx: IntArray) -> float | None:
        return pearson(average_ranks(h[idx]), average_ranks(s[idx]))

    def tau(idx: IntArray) -> float | None:
        return _tau_b_from_table(_contingency(h[idx], s[idx]))

    n = len(h)
    everything = np.arange(n, dtype=np.int64)

    def ci(stat: Callable[[IntArray], float | None]) -> list[float | None]:
        return bootstrap_interval(stat, n, n_resamples=n_boot, seed=seed).as_list()

    kappa = kap(everything)
    return Agreement(
        n=n,
        labels=list(labs),
        accuracy=acc(everything),
        accuracy_ci=ci(acc),
        kappa=kappa,
        kappa_ci=ci(kap),
        weighted_kappa=wkap(everything),
        weighted_kappa_ci=ci(wkap),
        spearman=rho(everything),
        spearman_ci=ci(rho),
        kendall=tau(everything),
        kendall_ci=ci(tau),
        confusion=_confusion(ih, ij, k).tolist(),
        n_boot=n_boot,
        seed=seed,
        notes=constant_rater_notes(ih, ij, kappa) if n else [],
    )


def constant_rater_notes(ih: IntArray, ij: IntArray, kappa: float | None) -> list[str]:
    """What a constant rater does to kappa, worded from the kappa actually computed (never contradicting
    it): undefined when both raters give one and the same label, 0 by construction when only one does."""
    human_one, judge_one = len(set(ih.tolist())) < 2, len(set(ij.tolist())) < 2
    if not (human_one or judge_one):
        return []
    who = (
        "the human labels and the judge's"
        if human_one and judge_one
        else ("the human labels" if human_one else "the judge's labels")
    )
    if kappa is None:
        return [f"{who} are all one and the same label: kappa and the rank correlations are undefined"]
    return [
        f"{who} are all the same: kappa is {kappa:.3f} by construction (chance agreement explains every "
        "agreement) and the rank correlations are undefined"
    ]
