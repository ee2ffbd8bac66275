"""Time ragmeter's paired tests against scipy's generic ones, in one process, on the same data.

    python benchmarks/significance.py [--queries 300] [--resamples 10000] [--repeat 3]

Peers: scipy.stats.permutation_test (paired sign flips, permutation_type="samples", vectorized) and
scipy.stats.bootstrap (percentile CI of the mean difference). Prints seconds per metric and the ratios.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from scipy import stats

from ragmeter.experiments.significance import bootstrap_ci, permutation_test


def best_of(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    a = rng.random(args.queries)
    b = np.clip(a + rng.normal(0.02, 0.2, args.queries), 0, 1)
    r = args.resamples

    def scipy_perm() -> float:
        res = stats.permutation_test(
            (a, b),
            lambda x, y, axis: np.mean(y - x, axis=axis),
            permutation_type="samples",
            vectorized=True,
            n_resamples=r,
            alternative="two-sided",
            random_state=1,
        )
        return float(res.pvalue)

    def scipy_boot() -> tuple[float, float]:
        res = stats.bootstrap(
            (b - a,), np.mean, n_resamples=r, method="percentile", vectorized=True, random_state=1
        )
        return float(res.confidence_interval.low), float(res.confidence_interval.high)

    ours_perm = best_of(lambda: permutation_test(a, b, n_resamples=r, seed=1), args.repeat)
    theirs_perm = best_of(scipy_perm, args.repeat)
    ours_boot = best_of(lambda: bootstrap_ci(a, b, n_resamples=r, seed=1), args.repeat)
    theirs_boot = best_of(scipy_boot, args.repeat)
    p_ours, _ = permutation_test(a, b, n_resamples=r, seed=1)
    print(f"{args.queries} paired queries, {r} resamples, best of {args.repeat}")
    print(
        f"permutation  ragmeter {ours_perm:.4f} s  scipy {theirs_perm:.4f} s  ratio {theirs_perm / ours_perm:.1f}x"
    )
    print(
        f"bootstrap    ragmeter {ours_boot:.4f} s  scipy {theirs_boot:.4f} s  ratio {theirs_boot / ours_boot:.1f}x"
    )
    print(f"p (ragmeter MC) {p_ours:.4f}  p (scipy) {scipy_perm():.4f}")
    print(f"CI (ragmeter) {bootstrap_ci(a, b, n_resamples=r, seed=1)}  CI (scipy) {scipy_boot()}")


if __name__ == "__main__":
    main()
