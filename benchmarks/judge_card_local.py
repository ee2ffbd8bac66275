"""The local judge's card for `retrieval_grade` on SciFact (query, relevant abstract) pairs, with the padding
and master-key perturbations: the card as markdown and the seconds it took.

    RAGMETER_DATA_DIR=/work/shared/datasets python benchmarks/judge_card_local.py [--pairs 20] [--chars 600]

Each pair: a SciFact test query and its first relevant abstract (title + text, cut to --chars characters to
keep prompts small on a shared CPU), as the one passage retrieval_grade grades. Calls: pairs x (1 original +
1 padded + 2 master-key: the key and its length-matched neutral padding). The machine is shared: the local
1.5B model takes seconds to tens of seconds per call on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path

from ragmeter.datasets import load_dataset
from ragmeter.llm import from_spec
from ragmeter.models import EvalDataset
from ragmeter.validity.card import build_card
from ragmeter.validity.render import card_lines, card_markdown


def pairs(n: int, chars: int, seed: int) -> EvalDataset:
    folder = Path(os.environ.get("RAGMETER_DATA_DIR", "../shared/datasets")) / "beir_scifact"
    data = load_dataset(str(folder), seed=seed) if folder.is_dir() else load_dataset("scifact", seed=seed)
    corpus = {d.doc_id: (f"{d.title}\n{d.text}" if d.title else d.text) for d in data.corpus or []}
    queries = []
    for q in data.queries:
        doc = next((d for d in q.relevant_doc_ids if d in corpus), None)
        if doc is None:
            continue
        queries.append(q.model_copy(update={"metadata": {"contexts": [corpus[doc][:chars]]}}))
        if len(queries) == n:
            break
    return EvalDataset(name=f"scifact-{n}-pairs", queries=queries)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--chars", type=int, default=600)
    ap.add_argument("--judge", default="local")
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    data = pairs(args.pairs, args.chars, args.seed)
    llm = from_spec(args.judge, concurrency=1, seed=args.seed)
    started = time.perf_counter()
    async with llm:
        card = await build_card(
            data,
            "retrieval_grade",
            llm=llm,
            judge_spec=args.judge,
            repeats=1,
            perturbations=["padding", "master_key"],
            seed=args.seed,
            concurrency=1,
        )
    wall = time.perf_counter() - started
    print("\n".join(card_lines(card)))
    print(card_markdown(card))
    print(f"{card.usage.get('calls')} judge calls, {wall:.0f} s wall (judge server start included)")


if __name__ == "__main__":
    asyncio.run(main())
