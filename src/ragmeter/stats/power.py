"""Power of the two-sided paired t-test: the queries a minimum effect needs (`ragmeter plan`) and the
minimum detectable effect of a comparison (`ragmeter runs compare`).

Power comes from the noncentral t distribution: with n pairs, sd(d) = s and true mean difference delta,
t = mean(d) / (sd(d) / sqrt(n)) is noncentral t with n - 1 df and noncentrality delta / s * sqrt(n).
A planned paired variance comes from a pilot: the pilot pair's differences (--vs), or from one run alone
as Var(d) = 2 Var(x) (1 - rho), rho being the assumed correlation between the two systems' values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragmeter.stats.effects import FloatArray, IntArray, clustered_se


def power_paired_t(n: int | FloatArray, effect: float, *, alpha: float = 0.05) -> Any:
    """Power of the two-sided paired t-test with n pairs at standardised effect `effect` (= delta / sd)."""
    from scipy import stats

    n_arr = np.asarray(n, dtype=np.float64)
    df = n_arr - 1.0
    crit = stats.t.ppf(1.0 - alpha / 2.0, df)
    nc = effect * np.sqrt(n_arr)
    # scipy's nct.cdf far in the lower tail is NaN where it is 0 to double precision
    power = stats.nct.sf(crit, df, nc) + np.nan_to_num(stats.nct.cdf(-crit, df, nc))
    return power if power.ndim else float(power)


def queries_needed(
    mde: float, sd: float, *, alpha: float = 0.05, power: float = 0.8, limit: int = 10_000_000
) -> int | None:
    """Fewest pairs n >= 2 whose two-sided paired t-test detects `mde` with the given power; None when
    the effect is 0 or more than `limit` pairs would be needed."""
    if mde == 0.0 or not math.isfinite(sd):
        return None
    if sd == 0.0:
        return 2
    effect = abs(mde) / sd
    lo, hi = 2, 2
    while power_paired_t(hi, effect, alpha=alpha) < power:
        lo, hi = hi, hi * 2
        if hi > limit:
            return None
    while lo < hi:  # power grows with n: the first n that reaches it
        mid = (lo + hi) // 2
        if power_paired_t(mid, effect, alpha=alpha) >= power:
            hi = mid
        else:
            lo = mid + 1
    return hi


def min_detectable_effect(se: float, df: float, *, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """Smallest |delta| that a two-sided t-test with standard error `se` on `df` degrees of freedom
    detects with the given power (solved on the noncentral t)."""
    from scipy import optimize, stats

    if df < 1 or not math.isfinite(se):
        return None
    if se == 0.0:
        return 0.0
    crit = stats.t.ppf(1.0 - alpha / 2.0, df)

    def gap(nc: float) -> float:
        return float(stats.nct.sf(crit, df, nc) + np.nan_to_num(stats.nct.cdf(-crit, df, nc))) - power

    nc = optimize.brentq(gap, 0.0, crit + 12.0)  # power(crit + 12) is 1 to many digits
    return float(nc * se)


def paired_mde(
    d: FloatArray, codes: IntArray | None = None, *, alpha: float = 0.05, power: float = 0.8
) -> float | None:
    """Minimum detectable effect of this comparison: from sd(d)/sqrt(n) on n - 1 df, or with clusters
    from the cluster-robust SE on G - 1 df."""
    if codes is not None:
        se, g = clustered_se(d, codes)
        return min_detectable_effect(se, g - 1, alpha=alpha, power=power) if g >= 2 else None
    if d.size < 2:
        return None
    return min_detectable_effect(
        float(d.std(ddof=1)) / math.sqrt(d.size), d.size - 1, alpha=alpha, power=power
    )


def plan_queries(
    pilot: Sequence[float],
    *,
    mde: float,
    vs: Sequence[float] | None = None,
    rho: float = 0.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> dict[str, Any]:
    """The queries a two-sided paired t-test needs to detect `mde` from pilot values.

    With `vs` (the other system's values on the same pilot queries, paired by position) sd(d) is the
    pilot's paired sd; without it Var(d) = 2 Var(x) (1 - rho)."""
    x = np.asarray(pilot, dtype=np.float64)
    if vs is not None:
        d = np.asarray(vs, dtype=np.float64) - x
        sd = float(d.std(ddof=1)) if d.size > 1 else math.nan
        how = "sd of the pilot's paired differences"
    else:
        var = float(x.var(ddof=1)) if x.size > 1 else math.nan
        sd = math.sqrt(max(0.0, 2.0 * var * (1.0 - rho)))
        how = f"Var(d) = 2 Var(x) (1 - rho), rho = {rho:g}"
    needed = queries_needed(mde, sd, alpha=alpha, power=power)
    return {
        "n_pilot": int(x.size),
        "sd_d": sd,
        "variance_from": how,
        "mde": mde,
        "alpha": alpha,
        "power": power,
        "queries_needed": needed,
        "power_at_needed": power_paired_t(needed, abs(mde) / sd, alpha=alpha) if needed and sd > 0 else None,
        "test": "two-sided paired t-test (noncentral t)",
    }
