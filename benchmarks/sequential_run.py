"""A real `--sequential` run beside the full run: queries used, decision, wall time, at several true means.

    python benchmarks/sequential_run.py [--queries 200] [--threshold 0.6] [--alpha 0.05]

The dataset is synthetic: query i has one relevant document, which the system ranks first for a set share of
the queries (so hit@1's mean over the whole set is exactly that share). Each share is run twice through
`ragmeter.run.run_evaluation` (no store): once with the gate `hit@1 >= threshold` sequential, once in full.
The gate's per-query hit@1 comes from the IR engine as each query finishes (ragmeter.run.sequential).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from ragmeter.models import Document, EvalConfig, EvalDataset, EvalQuery
from ragmeter.run import run_evaluation

SHARES = (0.9, 0.8, 0.65, 0.6, 0.55, 0.5, 0.4)


def dataset(n: int) -> EvalDataset:
    corpus = [Document(doc_id=f"d{i}", text=f"fact {i}") for i in range(n)]
    queries = [
        EvalQuery(query_id=f"q{i}", question=f"question {i}", relevant_doc_ids=[f"d{i}"]) for i in range(n)
    ]
    return EvalDataset(name="synthetic", queries=queries, corpus=corpus)


def system(n: int, share: float) -> Callable[[str, int], list[tuple[str, float, str]]]:
    hits = round(share * n)

    def retrieve(question: str, k: int) -> list[tuple[str, float, str]]:
        i = int(question.rsplit(" ", 1)[1])
        own, other = f"d{i}", f"d{(i + 1) % n}"
        ranked = [own, other] if (i * 7919) % n < hits else [other, own]
        return [(doc, 1.0 / (r + 1), doc) for r, doc in enumerate(ranked[:k])]

    return retrieve


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--threshold", type=float, default=0.6)
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args()
    n, ds = args.queries, dataset(args.queries)
    gate = {"gates": {"hit@1": args.threshold}, "alpha": args.alpha}
    print(f"hit@1 >= {args.threshold}, alpha {args.alpha}, {n} queries (seed 42)")
    print("true mean | sequential: used / evaluated, decision, s | full: mean, decision, s")
    for share in SHARES:
        fn = system(n, share)
        rows = []
        for extra in ({"semantic": False, "sequential": gate}, {"semantic": False}):
            config = EvalConfig(
                dataset="synthetic",
                retrieval_top_k=[1],
                metrics=["hit@1"],
                evaluate_generation=False,
                extra=extra,
            )
            start = time.perf_counter()
            result = run_evaluation(ds, fn, config, store=False, progress=False)
            rows.append((result, time.perf_counter() - start))
        (seq, t_seq), (full, t_full) = rows
        s = seq.sequential or {}
        mean = full.aggregate["hit@1"].mean or 0.0
        full_word = "pass" if mean >= args.threshold else "fail"
        print(
            f"{share:9.2f} | {s.get('queries_used')} / {s.get('queries_evaluated')}, {s.get('decision')}, "
            f"{t_seq:.2f} | {mean:.3f}, {full_word}, {t_full:.2f}"
        )


if __name__ == "__main__":
    main()
