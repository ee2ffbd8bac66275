"""The Ray executor against the local executor, in one run: N judged queries against the scripted
OpenAI-compatible server with a fixed latency per call (a stand-in for a remote LLM or a vLLM server).

    python benchmarks/ray_executor.py --queries 1000 --latency 1.0 --workers 1 2 4 --concurrency 8 32

Each query is retrieved by a keyword system and graded by the retrieval_grade judge (one LLM call). Prints
the wall time of each configuration (Ray: workers x concurrency per worker; local: concurrency) and the
throughput in queries/s, and checks that every configuration gives the same per-query grades.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "distributed"))
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(HERE.parent / "tests" / "distributed"), os.environ.get("PYTHONPATH")) if p
)


def dataset(n: int) -> Any:
    from ray_systems import make_dataset

    from ragmeter.models import EvalDataset

    base = make_dataset()
    queries = [
        q.model_copy(update={"query_id": f"{q.query_id}-{i}"})
        for i in range(n // len(base.queries) + 1)
        for q in base.queries
    ][:n]
    return EvalDataset(name="capitals-x", queries=queries, corpus=base.corpus)


class Timed:
    """Wraps an executor: when each result reached the driver (start-up vs steady throughput)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.stamps = inner, "timed", []

    async def execute(self, record: Any, pending: Any, on_result: Any) -> None:
        def stamp(position: int, result: Any) -> Any:
            self.stamps.append(time.perf_counter())
            return on_result(position, result)

        await self.inner.execute(record, pending, stamp)


async def one(ds: Any, url: str, executor: Any, concurrency: int) -> tuple[float, dict[str, Any]]:
    from ragmeter.models import EvalConfig
    from ragmeter.run.api import arun_evaluation

    config = EvalConfig(
        dataset="capitals-x",
        retrieval_top_k=[5],
        evaluate_generation=False,
        use_llm_judge=True,
        judge_model=f"openai-compatible:judge@{url}",
        metrics=["retrieval_grade"],
        concurrency=concurrency,
    )
    from ragmeter.run.executor import LocalExecutor

    timed = Timed(executor or LocalExecutor(ds))
    t = time.perf_counter()
    result = await arun_evaluation(
        ds, "ray_systems:keyword_retrieve", config, store=False, progress=False, executor=timed
    )
    wall = time.perf_counter() - t
    first, last = timed.stamps[0] - t, timed.stamps[-1] - timed.stamps[0]
    steady = (len(timed.stamps) - 1) / last if last > 0 else float("nan")
    grades = {r.query_id: r.metrics["retrieval_grade"].value for r in result.per_query}
    return wall, {"grades": grades, "first": first, "steady": steady}


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--latency", type=float, default=1.0)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    ap.add_argument("--cpus", type=int, default=2)
    args = ap.parse_args()

    from ragmeter.distributed.cluster import ensure_ray
    from ragmeter.llm.scripted import ScriptedServer, Step
    from ragmeter.run.ray_executor import RayExecutor

    def responder(req: object) -> Step:
        grade = 9 if "France" in getattr(req, "user", "") else 5
        return Step(text=f'{{"reasoning": "ok", "grade": {grade}}}')

    t = time.perf_counter()
    ensure_ray(num_cpus=args.cpus)
    print(f"ray.init ({args.cpus} CPUs): {time.perf_counter() - t:.1f} s, not counted below")
    ds = dataset(args.queries)
    print(f"{args.queries} judged queries, {args.latency:.1f} s per LLM call (scripted server, 127.0.0.1)\n")
    print(
        f"{'executor':<10} {'workers':>7} {'conc/worker':>11} {'in flight':>9} {'wall s':>8} {'q/s':>7} "
        f"{'first result s':>14} {'steady q/s':>10}"
    )
    reference: dict[str, Any] | None = None
    async with ScriptedServer(responder, latency=args.latency) as server:
        for c in args.concurrency:
            wall, out = await one(ds, server.url, None, c)
            reference = reference or out["grades"]
            assert out["grades"] == reference
            print(
                f"{'local':<10} {1:>7} {c:>11} {c:>9} {wall:>8.1f} {args.queries / wall:>7.1f} "
                f"{out['first']:>14.1f} {out['steady']:>10.1f}"
            )
            for w in args.workers:
                ex = RayExecutor(ds, workers=w, concurrency=c)
                wall, out = await one(ds, server.url, ex, c)
                same = "same grades" if out["grades"] == reference else "DIFFERENT grades"
                print(
                    f"{'ray':<10} {w:>7} {c:>11} {w * c:>9} {wall:>8.1f} {args.queries / wall:>7.1f} "
                    f"{out['first']:>14.1f} {out['steady']:>10.1f}  {same}"
                )


if __name__ == "__main__":
    asyncio.run(main())
