"""How many queries a sequential gate needs, beside the full run, at three true effect sizes.

    python benchmarks/sequential_gate.py [--queries 500] [--sequences 1000] [--alpha 0.05] [--threshold 0.7]

Each sequence is its own finite query set of 0-1 scores (Beta-distributed, true mean = threshold + effect),
drawn in a seeded random order; the gate (`ragmeter.experiments.sequential`, a without-replacement
empirical-Bernstein confidence sequence, Waudby-Smith & Ramdas 2020) stops once it is settled. The full run
judges every query. Prints the mean and 90th percentile fraction of queries used, how often the gate's
decision differs from the full run's, and the seconds the whole simulation took.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ragmeter.experiments.sequential import simulate_gates

EFFECTS = (0.02, 0.05, 0.10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--sequences", type=int, default=1000)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--threshold", type=float, default=0.7)
    parser.add_argument("--concentration", type=float, default=4.0, help="Beta a + b: lower = more spread")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n, runs, c = args.queries, args.sequences, args.concentration
    print(
        f"{runs} sequences x {n} queries, gate mean >= {args.threshold}, alpha {args.alpha}, Beta(a+b={c:g})"
    )
    print(
        f"{'effect':>7} {'side':>5} {'used mean':>10} {'used p90':>9} {'full run':>9} {'errors':>7} {'seconds':>8}"
    )
    for effect in EFFECTS:
        for sign in (+1, -1):
            mean = args.threshold + sign * effect
            pops = rng.beta(mean * c, (1 - mean) * c, size=(1, runs, n))
            start = time.perf_counter()
            sim = simulate_gates(pops, [args.threshold], alpha=args.alpha, seed=1)
            seconds = time.perf_counter() - start
            used = sim.stopped_at / n
            print(
                f"{sign * effect:>+7.2f} {'pass' if sign > 0 else 'fail':>5} {used.mean():>10.3f}"
                f" {np.quantile(used, 0.9):>9.3f} {1.0:>9.3f} {sim.error_rate:>7.3f} {seconds:>8.2f}"
            )


if __name__ == "__main__":
    main()
