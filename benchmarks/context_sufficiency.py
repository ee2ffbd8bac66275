"""How well does the local judge's `context_sufficiency` (the sufficient-context autorater's method, Joren et
al. ICLR 2025) tell a SciFact claim's own abstract from BM25 hard negatives?

    python benchmarks/context_sufficiency.py [--claims 20] [--judge local] [--drop Q1,Q2] [--json OUT]

A seeded sample of `--claims` SciFact test claims with a relevant abstract; each is judged twice, as a pair:
with its relevant abstract and BM25's top non-relevant abstract as the contexts (label: sufficient), and with
BM25's top two non-relevant abstracts only (label: insufficient). The question asked is whether the claim is
true (a relevant SciFact abstract supports or refutes it). Prints every judgment of a negative that the judge
called sufficient, with its reasoning: read them, and rerun with `--drop QID,...` (free: judgments are cached)
to drop a pair whose "negative" in fact decides the claim. Reports accuracy and Cohen's kappa with bootstrap
95% intervals, and the seconds a call. SciFact is read from $RAGMETER_DATA_DIR/beir_scifact or
../shared/datasets/beir_scifact. About 15-40 s a call with the local model on 2 busy cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_agreement import doc_text, scifact_dir  # noqa: E402


def sample_pairs(dataset: Any, bm25: Any, n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    queries = sorted((q for q in dataset.queries if q.relevant_doc_ids), key=lambda q: q.query_id)
    rng.shuffle(queries)
    out = []
    for q in queries[:n]:
        relevant = set(q.judgments())
        negatives = [r.doc_id for r in bm25.retrieve(q.question, 10) if r.doc_id not in relevant][:2]
        out.append(
            {
                "query_id": q.query_id,
                "claim": q.question,
                "positive": [sorted(relevant)[0], negatives[0]],
                "negative": negatives,
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--claims", type=int, default=20, help="claims; each gives one positive and one negative")
    ap.add_argument("--judge", default="local")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--drop", default="", help="query ids whose pair is dropped (a negative that decides)")
    ap.add_argument("--cache", default=str(REPO / ".ragmeter" / "bench-sufficiency-cache.sqlite"))
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--json", dest="json_out", help="also write the results here")
    args = ap.parse_args()

    from ragmeter.datasets.beir import load_beir
    from ragmeter.judges import context_sufficiency
    from ragmeter.llm import from_spec
    from ragmeter.systems import build_system
    from ragmeter.validity.agreement import agreement

    dataset = load_beir(scifact_dir())
    docs = {d.doc_id: doc_text(d) for d in dataset.corpus or []}
    bm25 = build_system(
        "builtin", dataset=dataset, index_dir=REPO / ".ragmeter" / "bench-indexes", mode="fulltext"
    )
    pairs = sample_pairs(dataset, bm25, args.claims, args.seed)
    llm = from_spec(args.judge, cache=args.cache, concurrency=2, timeout=600, seed=0)
    question = "Is the following claim true? {}"

    async def judge_all() -> list[Any]:
        async with llm:
            jobs = [
                context_sufficiency(
                    question.format(p["claim"]),
                    None,
                    [docs[d] for d in p[kind]],
                    llm=llm,
                    query_id=p["query_id"],
                )
                for p in pairs
                for kind in ("positive", "negative")
            ]
            return list(await asyncio.gather(*jobs))

    t0 = time.perf_counter()
    results = asyncio.run(judge_all())
    wall = time.perf_counter() - t0
    dropped = {q for q in args.drop.split(",") if q}
    rows = []
    for i, p in enumerate(pairs):
        for j, kind in enumerate(("positive", "negative")):
            r = results[2 * i + j]
            rows.append(
                {
                    "query_id": p["query_id"],
                    "kind": kind,
                    "docs": p[kind],
                    "label": int(kind == "positive"),
                    "judged": r.value,
                    "error": r.error,
                    "latency_s": r.details.get("latency_s"),
                    "reasoning": r.details.get("reasoning", ""),
                }
            )
    for row in rows:
        if row["kind"] == "negative" and row["judged"] == 1.0:
            claim = next(p["claim"] for p in pairs if p["query_id"] == row["query_id"])
            print(f"--- negative judged sufficient: {row['query_id']} {claim!r} docs {row['docs']}")
            print(f"    reasoning: {row['reasoning'][:600]}")
    kept = [r for r in rows if r["query_id"] not in dropped and r["judged"] is not None]
    stats = agreement(
        [r["label"] for r in kept],
        [int(r["judged"]) for r in kept],
        labels=[0, 1],
        n_resamples=args.n_boot,
        seed=args.seed,
    ).to_dict()
    latencies = [r["latency_s"] for r in rows if r["latency_s"]]
    usage = llm.usage.model_dump()
    summary = {
        "pairs": len(pairs),
        "dropped_pairs": sorted(dropped),
        "judgments": len(kept),
        "failed": sum(1 for r in rows if r["judged"] is None),
        **{k: stats[k] for k in ("accuracy", "accuracy_ci", "kappa", "kappa_ci", "confusion")},
        "seconds_per_call": round(sum(latencies) / len(latencies), 1) if latencies else None,
        "wall_s": round(wall, 1),
        "calls": usage.get("calls"),
        "cached_calls": usage.get("cached_calls"),
        "prompt_version": context_sufficiency.version,
    }
    print(json.dumps(summary, indent=1))
    if args.json_out:
        Path(args.json_out).write_text(
            json.dumps({"summary": summary, "rows": rows}, indent=1), encoding="utf-8"
        )


if __name__ == "__main__":
    main()
