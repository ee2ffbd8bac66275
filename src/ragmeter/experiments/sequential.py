"""Anytime-valid gates: stop judging once a without-replacement confidence sequence settles every gate.

A gate asks whether the mean of a metric over the WHOLE finite query set is on the right side of its
threshold. Queries are taken in a random order without replacement; after each one the predictable-mixture
empirical-Bernstein confidence sequence for the mean of a finite population (Waudby-Smith & Ramdas,
"Confidence sequences for sampling without replacement", NeurIPS 2020, Theorem 3) bounds that mean, valid
at every step at once, so the loop may stop at any data-dependent time. For values in [0, 1], population N,
after t draws (S_i the sum of the first i values):

    lower_t = [sum_i l_i (x_i + S_{i-1} / (N - i + 1)) - log(1 / a) - sum_i (x_i - m_{i-1})^2 psi(l_i)]
              / sum_i l_i (1 + (i - 1) / (N - i + 1)),          psi(l) = -log(1 - l) - l,

with the bets l_i = min(sqrt(2 log(1 / a) / (s2_{i-1} i log(1 + i))), 1/2) and the running estimates
m_i = (1/2 + S_i) / (i + 1), s2_i = (1/4 + sum_{j<=i} (x_j - m_j)^2) / (i + 1) (the paper's choices; the
`confseq` package's predmix_empbern_lower_cs with N set). The upper sequence is 1 - lower of 1 - x. Both are
intersected with their own past and clipped into what boundedness alone gives ([S_t / N, (S_t + N - t) / N]),
so the sequence collapses to the exact mean once every query is in.

The gate decision (`gate_state`): a gate passes once its lower bound reaches the threshold (its upper bound,
for a lower-is-better metric) and fails once the other bound is past it. Bonferroni over k gates: a wrong
decision on a gate needs the one side of its sequence that faces the truth to fail, so each side of each
gate's sequence carries a / k, and the chance that any decision differs from the full run's is at most a.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter.stats.confseq import (
    TRUNCATION,
    BoolArray,
    FloatArray,
    GateState,
    decide,
    wor_confidence_sequence,
)

__all__ = [
    "TRUNCATION",
    "GateSimulation",
    "GateState",
    "decide",
    "gate_state",
    "simulate_gates",
    "wor_confidence_sequence",
]


def gate_state(
    observed: Mapping[str, Sequence[float]],
    population: int,
    thresholds: Mapping[str, float],
    *,
    ranges: Mapping[str, tuple[float, float]],
    higher: Mapping[str, bool],
    alpha: float = 0.05,
) -> GateState:
    """The gates' decisions from the values seen so far, in the (random) order they were drawn.

    Every gate must have as many values as there are queries used: a query without a value (a failed judge
    call) has to be mapped to a value of the range by the caller, because a gate over the valid values only
    is not a mean over a fixed finite population."""
    lengths = {len(observed.get(metric, ())) for metric in thresholds}
    if len(lengths) != 1:
        raise ValueError(f"every gate needs the same number of values, got {sorted(lengths)}")
    used = lengths.pop()
    share = 2.0 * alpha / max(1, len(thresholds))  # each side of each sequence carries alpha / k
    bounds: dict[str, tuple[float, float]] = {}
    decisions: dict[str, bool | None] = {}
    for metric, threshold in thresholds.items():
        if used == 0:
            decisions[metric] = None
            continue
        lower, upper = wor_confidence_sequence(
            observed[metric], population, alpha=share, bounds=ranges[metric]
        )
        lo, hi = float(lower[-1]), float(upper[-1])
        bounds[metric] = (lo, hi)
        settled, passes = decide(lo, hi, threshold, higher[metric])
        decisions[metric] = bool(passes) if bool(settled) else None
    return GateState(used, population, bounds, decisions)


@dataclass(frozen=True)
class GateSimulation:
    """Seeded simulation of sequential gates: per sequence, when it stopped and what it decided."""

    stopped_at: np.ndarray[Any, np.dtype[np.int64]]  # queries used (1..N)
    decision: BoolArray  # all gates pass, at the stop
    full_decision: BoolArray  # all gates pass, over the whole population
    population: int

    @property
    def error_rate(self) -> float:
        return float(np.mean(self.decision != self.full_decision))

    @property
    def mean_fraction_used(self) -> float:
        return float(np.mean(self.stopped_at) / self.population)


def simulate_gates(
    populations: FloatArray,
    thresholds: Sequence[float],
    *,
    higher: Sequence[bool] | None = None,
    ranges: Sequence[tuple[float, float]] | None = None,
    alpha: float = 0.05,
    seed: int = 0,
) -> GateSimulation:
    """Run the sequential gate on `populations` (gates x sequences x N values; each sequence its own
    finite query set) drawn in a seeded random order, all sequences at once."""
    pops = np.asarray(populations, dtype=np.float64)
    k, n_seq, n = pops.shape
    higher_arr = np.asarray([True] * k if higher is None else list(higher))[:, None, None]
    ranges = [(0.0, 1.0)] * k if ranges is None else list(ranges)
    order = np.random.default_rng(seed).permuted(np.tile(np.arange(n), (n_seq, 1)), axis=1)
    drawn = np.take_along_axis(pops, np.broadcast_to(order, pops.shape), axis=2)
    share = 2.0 * alpha / k
    settled_all = np.ones((n_seq, n), dtype=bool)
    passes_all = np.ones((n_seq, n), dtype=bool)
    for g in range(k):
        lower, upper = wor_confidence_sequence(drawn[g], n, alpha=share, bounds=ranges[g])
        settled, passes = decide(lower, upper, thresholds[g], higher_arr[g])
        settled_all &= settled
        passes_all &= passes
    stop = np.argmax(settled_all, axis=1)  # settled at t = N at the latest (the bounds are exact there)
    decision = passes_all[np.arange(n_seq), stop]
    means = pops.mean(axis=2)
    th = np.asarray(thresholds, dtype=np.float64)[:, None]
    full = np.where(higher_arr[:, :, 0], means >= th, means <= th).all(axis=0)
    return GateSimulation(stop.astype(np.int64) + 1, decision, full, n)
