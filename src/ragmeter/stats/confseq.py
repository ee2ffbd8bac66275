"""The without-replacement confidence sequence for the mean of a finite query set (Waudby-Smith & Ramdas,
"Confidence sequences for sampling without replacement", NeurIPS 2020, Theorem 3) and the gate decision
it gives: pure numpy, below the run loop (which gates while it runs) and experiments (which simulate it).
The formula and the Bonferroni rule are explained in ragmeter.experiments.sequential.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

FloatArray = np.ndarray[Any, np.dtype[np.float64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]

TRUNCATION = 0.5  # the largest bet; the paper's choice (c = 1/2)


def _before(a: FloatArray, first: float) -> FloatArray:
    """The running statistic as known before each draw: shifted one step, `first` (the prior) in front."""
    return np.concatenate([np.full((*a.shape[:-1], 1), first), a[..., :-1]], axis=-1)


def _lower_eb_wor(x: FloatArray, population: int, alpha: float) -> FloatArray:
    """The lower sequence for values in [0, 1] along the last axis (any leading axes: independent runs)."""
    n = x.shape[-1]
    t = np.arange(1, n + 1, dtype=np.float64)
    s = np.cumsum(x, axis=-1)
    s_prev = _before(s, 0.0)
    m = (0.5 + s) / (t + 1.0)
    m_prev = _before(m, 0.5)
    s2 = (0.25 + np.cumsum((x - m) ** 2, axis=-1)) / (t + 1.0)
    s2_prev = _before(s2, 0.25)
    log_a = math.log(1.0 / alpha)
    bets = np.minimum(np.sqrt(2.0 * log_a / (s2_prev * t * np.log1p(t))), TRUNCATION)
    left = population - t + 1.0
    psi = -np.log1p(-bets) - bets
    numerator = (
        np.cumsum(bets * (x + s_prev / left), axis=-1) - log_a - np.cumsum((x - m_prev) ** 2 * psi, axis=-1)
    )
    weight = np.cumsum(bets * (1.0 + (t - 1.0) / left), axis=-1)
    return np.asarray(numerator / weight, dtype=np.float64)


def wor_confidence_sequence(
    values: Sequence[float] | FloatArray,
    population: int,
    *,
    alpha: float = 0.05,
    bounds: tuple[float, float] = (0.0, 1.0),
) -> tuple[FloatArray, FloatArray]:
    """Lower and upper bounds, after each draw, on the mean of all `population` values (each side a / 2).

    `values` are the draws in order (last axis; leading axes are independent runs), each within `bounds`."""
    lo, hi = bounds
    if not hi > lo:
        raise ValueError(f"bounds must be increasing, got {bounds}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    x = (np.asarray(values, dtype=np.float64) - lo) / (hi - lo)
    if x.shape[-1] > population:
        raise ValueError(f"{x.shape[-1]} draws from a population of {population}")
    if not np.all((x >= -1e-12) & (x <= 1.0 + 1e-12)):
        raise ValueError(f"values must lie in {bounds}")
    x = np.clip(x, 0.0, 1.0)
    lower = _lower_eb_wor(x, population, alpha / 2.0)
    upper = 1.0 - _lower_eb_wor(1.0 - x, population, alpha / 2.0)
    t = np.arange(1, x.shape[-1] + 1, dtype=np.float64)
    s = np.cumsum(x, axis=-1)
    # Running intersection, then clipped into what boundedness alone proves (which always holds the mean,
    # so clipping costs no coverage and makes the last step exact even after a miss).
    floor, ceiling = s / population, (s + population - t) / population
    lower = np.clip(np.maximum.accumulate(lower, axis=-1), floor, ceiling)
    upper = np.clip(np.minimum.accumulate(upper, axis=-1), floor, ceiling)
    return lo + (hi - lo) * lower, lo + (hi - lo) * upper


def decide(lower: Any, upper: Any, threshold: Any, higher: Any) -> tuple[Any, Any]:
    """(settled, passed) from bounds on the mean (arrays broadcast); `passed` means only where settled."""
    passes = np.where(higher, lower >= threshold, upper <= threshold)
    fails = np.where(higher, upper < threshold, lower > threshold)
    return passes | fails, passes


@dataclass(frozen=True)
class GateState:
    """Where the gates stand after `used` of `population` queries."""

    used: int
    population: int
    bounds: dict[str, tuple[float, float]]  # per metric: the confidence sequence's current bounds
    decisions: dict[str, bool | None]  # per metric: True pass, False fail, None not settled yet

    @property
    def settled(self) -> bool:
        return all(d is not None for d in self.decisions.values())

    @property
    def passed(self) -> bool | None:
        """Every gate passes (None while any is unsettled)."""
        return all(bool(d) for d in self.decisions.values()) if self.settled else None
