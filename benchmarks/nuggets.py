"""The local judge makes and assigns nuggets for a few demo queries: seconds per step, and how many of our
hand-written nuggets (ragmeter/datasets/demo/demo.nuggets.jsonl) its nuggets cover.

    python benchmarks/nuggets.py [--queries q06,q44,q53] [--judge local] [--prompt ours|nuggetizer]

Per query: (1) create: nuggets from the query's relevant document (one window, then importance: 2 calls);
(2) assign: the created nuggets against the gold answer (ceil(n / 10) calls); (3) found: our hand-written
nuggets assigned against the created nuggets listed as one passage (a hand-written nugget counts as found when
labelled support; partial support is shown apart). The local model costs 15-40 s a call on 2 shared cores.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))


async def main() -> None:
    from ragmeter.datasets import load_dataset
    from ragmeter.judges.nugget_create import create, passages_of
    from ragmeter.judges.nuggets import assign
    from ragmeter.llm import from_spec
    from ragmeter.nuggets import read_nuggets
    from ragmeter.nuggets.demo import demo_nuggets_path

    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", default="q06,q44,q53")
    ap.add_argument("--judge", default="local")
    ap.add_argument("--prompt", default="ours", choices=["ours", "nuggetizer"])
    args = ap.parse_args()
    data = load_dataset("demo")
    ours = read_nuggets(demo_nuggets_path())
    passages = passages_of(data)
    queries = {q.query_id: q for q in data.queries}
    t = time.perf_counter()
    llm = from_spec(args.judge, concurrency=1, timeout=600, seed=0)
    try:
        await llm.complete([{"role": "user", "content": "Say OK."}], max_tokens=4)  # start the server
        print(f"judge {args.judge} ready in {time.perf_counter() - t:.1f} s; prompt style {args.prompt}")
        total_found = total_ours = 0
        for qid in args.queries.split(","):
            q, mine = queries[qid], ours.get(qid)
            assert mine is not None
            t0 = time.perf_counter()
            made = await create(llm, qid, q.question, passages[qid], style=args.prompt, keep=20)
            t1 = time.perf_counter()
            created = made.nuggets.nuggets
            on_answer = await assign(
                llm, args.prompt, q.question, q.ground_truth_answer or "", created, query_id=qid
            )
            t2 = time.perf_counter()
            listed = "\n".join(f"- {n.text}" for n in created)
            found = await assign(llm, args.prompt, q.question, listed, mine.nuggets, query_id=qid)
            t3 = time.perf_counter()
            full = sum(1 for v in found.labels.values() if v == "support")
            part = sum(1 for v in found.labels.values() if v == "partial_support")
            total_found, total_ours = total_found + full, total_ours + len(mine.nuggets)
            print(f"\n{qid} {q.question}")
            print(
                f"  create  {t1 - t0:6.1f} s  {made.calls} calls  {len(created)} nuggets "
                f"({sum(n.importance == 'vital' for n in created)} vital){'  flags: ' + '; '.join(made.flags) if made.flags else ''}"
            )
            for n in created:
                print(f"          {n.importance:<5} {n.text}")
            print(
                f"  assign  {t2 - t1:6.1f} s  {on_answer.calls} calls  vs the gold answer: {on_answer.labels}"
                f"{'  errors: ' + '; '.join(on_answer.errors) if on_answer.errors else ''}"
            )
            print(
                f"  found   {t3 - t2:6.1f} s  {found.calls} calls  ours found: {full} of {len(mine.nuggets)} "
                f"(+{part} partial) {found.labels}{'  errors: ' + '; '.join(found.errors) if found.errors else ''}"
            )
        print(
            f"\nhand-written nuggets found (support): {total_found} of {total_ours}; "
            f"total {time.perf_counter() - t:.1f} s"
        )
    finally:
        await llm.aclose()


if __name__ == "__main__":
    asyncio.run(main())
