"""Where does `ragmeter eval --executor ray` start to pay? Local native engine vs the same evaluation
partitioned by query over a local Ray instance, in one process, per run size.

    python benchmarks/ray_ir_eval.py --queries 1000 10000 100000 --depth 100 --cpus 2

Prints, per size: rows, local compute time, Ray time (partitions = 2 x CPUs; the first call after
`ray.init` is timed separately as warm-up), the ratio, and whether per-query values and means are identical.
Loading the files is the same for both and not timed.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ragmeter.ir import Qrels, Run, evaluate

MEASURES = ["ndcg@10", "map", "map@100", "recall@100", "precision@10", "mrr"]


def workload(q: int, depth: int, seed: int = 0) -> tuple[Qrels, Run]:
    rng = np.random.default_rng(seed)
    qids = np.repeat([f"q{i}" for i in range(q)], depth)
    docs = (rng.integers(0, 50_000, size=q * depth)).astype(str)
    # de-duplicate doc ids within a query by suffixing the position
    docs = np.char.add(docs, np.char.add("-", np.tile(np.arange(depth).astype(str), q)))
    scores = rng.integers(0, 1000, size=q * depth).astype(np.float64)
    run = Run.from_columns(qids.tolist(), docs.tolist(), scores)
    judged = rng.random(q * depth) < 0.1
    grades = rng.integers(0, 3, size=int(judged.sum()))
    qrels = Qrels.from_columns(qids[judged].tolist(), docs[judged].tolist(), grades)
    return qrels, run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, nargs="+", default=[1000, 10_000, 100_000])
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--cpus", type=int, default=2)
    args = ap.parse_args()

    from ragmeter.distributed.cluster import ensure_ray
    from ragmeter.distributed.ir_eval import evaluate_ray

    t = time.perf_counter()
    ensure_ray(num_cpus=args.cpus)
    print(f"ray.init with {args.cpus} CPUs: {time.perf_counter() - t:.1f} s (paid once per driver)")
    small_q, small_r = workload(10, 10)
    t = time.perf_counter()
    evaluate_ray(small_q, small_r, MEASURES)
    print(f"first Ray call (workers start, code shipped): {time.perf_counter() - t:.1f} s\n")
    print(f"{'queries':>8} {'rows':>10} {'local s':>9} {'ray s':>8} {'ray/local':>9}  identical")
    for q in args.queries:
        qrels, run = workload(q, args.depth)
        t = time.perf_counter()
        local = evaluate(qrels, run, MEASURES)
        t_local = time.perf_counter() - t
        t = time.perf_counter()
        remote = evaluate_ray(qrels, run, MEASURES, partitions=2 * args.cpus)
        t_ray = time.perf_counter() - t
        same = remote.per_query == local.per_query and remote.aggregate == local.aggregate
        print(f"{q:>8} {len(run):>10} {t_local:>9.3f} {t_ray:>8.3f} {t_ray / t_local:>9.1f}  {same}")


if __name__ == "__main__":
    main()
