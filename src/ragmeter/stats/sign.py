"""The paired sign test and the net shift of paired verdicts (judge cards' bias battery).

Each item gives one sign: +1 when a change moved its verdict in the change's favour, -1 against, 0 when the
verdict did not move. The net shift is the mean sign over all items (ties count in n: a judge that rarely
moves has a small shift). Its 95% interval is the percentile bootstrap of that mean (the one bootstrap,
`ragmeter.stats.resample`, seeded by the caller); the sign test is the exact two-sided binomial test of
"in favour" against "against" with the ties left out (the textbook sign test).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ragmeter.stats.intervals import bootstrap_mean


def sign_test(favour: int, against: int) -> float:
    """Exact two-sided p-value of the sign test: favour ~ Binomial(favour + against, 1/2); 1.0 when both 0."""
    if favour < 0 or against < 0:
        raise ValueError("counts must be >= 0")
    n = favour + against
    if n == 0:
        return 1.0
    k = min(favour, against)
    tail: float = sum(math.comb(n, i) for i in range(k + 1)) / (1 << n)  # exact ints: no overflow
    return min(1.0, 2.0 * tail)


@dataclass(frozen=True)
class NetShift:
    """The net shift of n paired verdicts: (favour - against) / n, its interval and the sign test."""

    n: int
    favour: int
    against: int
    ties: int
    shift: float | None
    interval: tuple[float, float] | None
    p_value: float

    def beyond(self, tolerance: float) -> int:
        """+1 when the whole interval lies above +tolerance, -1 when below -tolerance, else 0."""
        if self.interval is None:
            return 0
        lo, hi = self.interval
        return 1 if lo > tolerance else -1 if hi < -tolerance else 0


def net_shift(signs: Sequence[int], *, seed: int = 42, n_resamples: int = 2000) -> NetShift:
    """The net shift of per-item signs (each -1, 0 or +1)."""
    if any(s not in (-1, 0, 1) for s in signs):
        raise ValueError("signs must be -1, 0 or +1")
    favour = sum(1 for s in signs if s > 0)
    against = sum(1 for s in signs if s < 0)
    n = len(signs)
    p = sign_test(favour, against)
    if n == 0:
        return NetShift(0, 0, 0, 0, None, None, p)
    ci = bootstrap_mean([float(s) for s in signs], seed=seed, n_resamples=n_resamples)
    return NetShift(n, favour, against, n - favour - against, (favour - against) / n, ci, p)
