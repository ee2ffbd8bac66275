"""RAGChecker's claim metrics (rc_*) with the local model on a small SQuAD sample: judge calls and
seconds per query, and the values next to the failure class of each query.

    RAGMETER_DATA_DIR=/work/shared/datasets python benchmarks/diagnose.py [--queries 3] [--judge local]

Each query: the question, its gold paragraph and one distractor paragraph as the generator's contexts
(cut to --chars characters to keep the prompts small), the answer = the sentence of the gold paragraph
that holds the gold answer (an extractive baseline; no generation call), the reference = the gold answer.
The machine is shared: keep --queries small (the local 1.5B model takes seconds per call on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

from ragmeter.judges import run_judges
from ragmeter.judges.claims import RC_METRICS

REPO = Path(__file__).resolve().parents[1]


class Counting:
    """The judge client, counting its calls."""

    def __init__(self, llm: Any) -> None:
        self.llm, self.calls = llm, 0

    async def complete(self, *args: Any, **kw: Any) -> Any:
        self.calls += 1
        return await self.llm.complete(*args, **kw)


def sentence_with(text: str, answer: str) -> str:
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        if answer.lower() in sentence.lower():
            return sentence
    return answer


def show(q: Any, seconds: float, calls: int, values: dict[str, Any]) -> None:
    shown = " ".join(
        f"{n.removeprefix('rc_')}={'null' if v.value is None else f'{v.value:.2f}'}"
        for n, v in values.items()
    )
    errors = {v.error for v in values.values() if v.error}
    print(
        f"  {q.query_id}: {seconds:.1f} s, {calls} calls; {shown}" + (f"; errors: {errors}" if errors else "")
    )
    sys.stdout.flush()


async def main(args: argparse.Namespace) -> None:
    from ragmeter.datasets import load_dataset
    from ragmeter.llm import from_spec

    ds = load_dataset("squad_mini", data_dir=args.data_dir, seed=args.seed)
    docs = {d.doc_id: d.text for d in ds.corpus or []}
    rng = random.Random(args.seed)
    sample = rng.sample(ds.queries, args.queries)
    llm = from_spec(args.judge, concurrency=2, timeout=600, seed=0)
    print(f"judge {args.judge}: starting; {len(sample)} queries", flush=True)
    names = list(RC_METRICS)
    rows = []
    async with llm:
        counting = Counting(llm)
        for q in sample:
            gold = docs[q.relevant_doc_ids[0]]
            other = docs[rng.choice([d for d in docs if d != q.relevant_doc_ids[0]])]
            contexts = [gold[: args.chars], other[: args.chars]]
            answer = sentence_with(gold, q.gold_answers()[0])
            before, t = counting.calls, time.perf_counter()
            values = await run_judges(
                names,
                question=q.question,
                answer=answer,
                contexts=contexts,
                ground_truth=q.ground_truth_answer,
                llm=counting,  # type: ignore[arg-type]
                query_id=q.query_id,
            )
            rows.append((q, time.perf_counter() - t, counting.calls - before, values))
            show(*rows[-1])
    print(f"{len(rows)} SQuAD queries, judge {args.judge}, contexts 2 x <= {args.chars} chars")
    total_s = sum(r[1] for r in rows)
    total_calls = sum(r[2] for r in rows)
    print(
        f"per query: {total_s / len(rows):.1f} s and {total_calls / len(rows):.1f} judge calls "
        f"(all 11 rc_* metrics share them); load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=3)
    ap.add_argument("--judge", default="local")
    ap.add_argument("--chars", type=int, default=600)
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument(
        "--data-dir", default=os.environ.get("RAGMETER_DATA_DIR", str(REPO.parent / "shared" / "datasets"))
    )
    asyncio.run(main(ap.parse_args()))
