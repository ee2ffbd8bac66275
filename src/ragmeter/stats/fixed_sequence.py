"""Fixed-sequence testing of a confidence threshold (Trust or Escalate: Jung, Brahman and Choi, ICLR 2025,
"LLM Judges with Provable Guarantees for Human Agreement", section 2; the testing scheme is Learn then Test,
Angelopoulos et al., 2021).

A cheap judge answers an item when its confidence is at least a threshold t; the risk of t is the share of
answered items on which it disagrees with people. For target agreement A and risk level R the null hypothesis
of threshold t is "risk(t) > 1 - A". Thresholds are tested from the highest down, each with an exact one-sided
binomial test on the calibration items it answers: p(t) = P(Binomial(n(t), 1 - A) <= disagreements(t)). While
p(t) <= R the null is rejected and the next lower threshold is tested; the first p(t) > R stops the sequence.
The calibrated threshold is the lowest rejected one, and P(agreement on answered items >= A) >= 1 - R (for
exchangeable calibration and test items). A threshold answering too few calibration items to be rejected even
with no disagreement at all (n(t) < log R / log A; none at all included) is passed over, not tested: which
thresholds are passed over depends only on the confidences, never on the labels, and given the confidences
the disagreements are independent, so the test of each remaining threshold keeps its level (a sum of
independent Bernoullis is no wider in its lower tail than the binomial of the same mean: Hoeffding, 1956).
Without this, the top of the grid, where a handful of items sit, would stop every sequence at once. p(t) <= R is the same decision as the one-sided
Clopper-Pearson upper bound of the disagreement rate at level 1 - R falling below 1 - A (up to ties at the
boundary); that bound is reported for the calibrated threshold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from ragmeter.errors import InputError

# The thresholds tried when the caller names none: 1.00, 0.99, ..., 0.00 (a fixed grid, not the data's values).
DEFAULT_GRID = tuple(round(1.0 - i / 100, 2) for i in range(101))


@dataclass(frozen=True)
class ThresholdTest:
    threshold: float
    n: int  # calibration items with confidence >= threshold
    disagreements: int
    p_value: float
    rejected: bool


@dataclass(frozen=True)
class FixedSequenceResult:
    threshold: float | None  # None: no threshold passed; every item escalates
    target_agreement: float
    risk: float
    n_calibration: int
    coverage: float  # share of calibration items at or above the threshold
    empirical_agreement: float | None  # on those items
    agreement_lower_bound: float | None  # one-sided Clopper-Pearson at level 1 - risk, on those items
    tests: tuple[ThresholdTest, ...]


def binomial_p_value(disagreements: int, n: int, max_risk: float) -> float:
    """P(Binomial(n, max_risk) <= disagreements): small when the disagreement rate is below max_risk."""
    if n == 0:
        return 1.0
    return float(sps.binom.cdf(disagreements, n, max_risk))


def least_testable(target_agreement: float, risk: float) -> int:
    """The fewest answered items whose test can reject at all: the least n with target^n <= risk."""
    return max(1, math.ceil(math.log(risk) / math.log(target_agreement) - 1e-12))


def clopper_pearson_upper(k: int, n: int, alpha: float) -> float:
    """One-sided (1 - alpha) Clopper-Pearson upper bound of a binomial rate with k successes in n trials."""
    if n == 0:
        return 1.0
    if k >= n:
        return 1.0
    return float(sps.beta.ppf(1.0 - alpha, k + 1, n - k))


def _check(target_agreement: float, risk: float, conf: np.ndarray, agree: np.ndarray) -> None:
    if not 0.0 < target_agreement < 1.0:
        raise InputError(f"the target agreement must be in (0, 1), got {target_agreement:g}")
    if not 0.0 < risk < 1.0:
        raise InputError(f"the risk must be in (0, 1), got {risk:g}")
    if conf.shape != agree.shape or conf.ndim != 1:
        raise InputError("confidences and agreements must be two lists of one length")
    if conf.size == 0:
        raise InputError("no calibration items")
    if not np.all(np.isfinite(conf)):
        raise InputError("a confidence is not a finite number")


def fixed_sequence_threshold(
    confidences: Sequence[float],
    agreements: Sequence[bool],
    *,
    target_agreement: float,
    risk: float,
    grid: Sequence[float] = DEFAULT_GRID,
) -> FixedSequenceResult:
    """The lowest threshold of `grid` (tested from the highest down) whose agreement on the items it answers
    is at least `target_agreement` with probability at least 1 - `risk` (see the module text)."""
    conf = np.asarray(confidences, dtype=float)
    agree = np.asarray(agreements, dtype=bool)
    _check(target_agreement, risk, conf, agree)
    max_risk = 1.0 - target_agreement
    least = least_testable(target_agreement, risk)
    tests: list[ThresholdTest] = []
    chosen: float | None = None
    for t in sorted({float(x) for x in grid}, reverse=True):
        answered = conf >= t
        n = int(answered.sum())
        if n < least:
            continue  # could not be rejected even with no disagreement: passed over (module text)
        k = int((~agree[answered]).sum())
        p = binomial_p_value(k, n, max_risk)
        rejected = p <= risk
        tests.append(ThresholdTest(t, n, k, p, rejected))
        if not rejected:
            break
        chosen = t
    if chosen is None:
        return FixedSequenceResult(
            None, target_agreement, risk, int(conf.size), 0.0, None, None, tuple(tests)
        )
    answered = conf >= chosen
    n = int(answered.sum())
    k = int((~agree[answered]).sum())
    return FixedSequenceResult(
        threshold=chosen,
        target_agreement=target_agreement,
        risk=risk,
        n_calibration=int(conf.size),
        coverage=n / conf.size,
        empirical_agreement=1.0 - k / n,
        agreement_lower_bound=1.0 - clopper_pearson_upper(k, n, risk),
        tests=tuple(tests),
    )
