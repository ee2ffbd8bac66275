"""How well does the local judge agree with SciFact's human relevance labels?

    python benchmarks/judge_agreement.py [--pairs 60] [--rank-queries 12] [--depth 3] [--judge local]
        [--prompt ours|umbrela|both]

1. Per-label agreement: a seeded sample of SciFact test queries; for each, one relevant abstract (human
   grade 1) and BM25's top-ranked abstracts the qrels do not mark relevant (hard negatives, human grade 0),
   `--pairs` pairs in all. The judge grades each pair 0-3 with the UMBRELA-style prompt
   (ragmeter.judges.trec_relevance); grades >= 2 count as relevant. Reports Cohen's kappa with its bootstrap 95%
   interval, accuracy and the confusion matrix (also with grades >= 1 as relevant).
2. System rankings: retrieval variants of the built-in pipeline (BM25, BM25 tuned, BM25 without chunking,
   dense, hybrid, BM25-heavy hybrid) retrieve for `--rank-queries` seeded queries; their top `--depth` docs
   are pooled and every pooled pair is graded by the judge (UMBRELA's setting: the LLM qrels replace the
   human ones). Reports Kendall's tau (with a query-bootstrap interval) and tau_AP between the rankings of
   the variants by nDCG@depth under the human qrels and under the LLM qrels.

Judgments are cached in `--cache` (default .ragmeter/bench-judge-cache.sqlite): a rerun costs nothing.
SciFact is read from $RAGMETER_DATA_DIR/beir_scifact or ../shared/datasets/beir_scifact (never copied).
The local model takes about 20 s a pair with an abstract on 2 cores: the defaults (60 + about 70 pairs)
take about 45 minutes cold. Dense variants need the `semantic` extra (skipped with a note otherwise).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

VARIANTS: dict[str, dict[str, Any]] = {
    "bm25": {"mode": "fulltext"},
    "bm25-k1.2-b0.5": {"mode": "fulltext", "bm25_k1": 1.2, "bm25_b": 0.5},
    "bm25-no-chunking": {"mode": "fulltext", "disable": {"chunking"}},
    "dense": {"mode": "semantic"},
    "hybrid": {"mode": "hybrid"},
    "hybrid-bm25x2": {"mode": "hybrid", "weights": {"bm25": 2.0, "dense": 1.0}},
}


def scifact_dir() -> Path:
    env = os.environ.get("RAGMETER_DATA_DIR")
    base = Path(env) if env else REPO.parent / "shared" / "datasets"
    for name in ("beir_scifact", "scifact"):
        if (base / name / "corpus.jsonl").is_file():
            return base / name
    sys.exit(f"SciFact not found under {base} (set RAGMETER_DATA_DIR)")


def doc_text(doc: Any) -> str:
    return f"{doc.title}\n{doc.text}" if doc.title else str(doc.text)


def label_sample(dataset: Any, bm25: Any, n_pairs: int, seed: int) -> list[tuple[str, str, int]]:
    """(query id, doc id, human grade 0/1): per query one relevant doc and two BM25 hard negatives."""
    rng = random.Random(seed)
    queries = [q for q in dataset.queries if q.relevant_doc_ids]
    rng.shuffle(queries)
    pairs: list[tuple[str, str, int]] = []
    for q in queries:
        if len(pairs) >= n_pairs:
            break
        relevant = set(q.judgments())
        pairs.append((q.query_id, sorted(relevant)[0], 1))
        negatives = [r.doc_id for r in bm25.retrieve(q.question, 10) if r.doc_id not in relevant][:2]
        pairs.extend((q.query_id, d, 0) for d in negatives)
    return pairs[:n_pairs]


async def grade(
    pairs: list[tuple[str, str]], queries: dict[str, str], docs: dict[str, str], llm: Any, prompt: str
) -> list[Any]:
    from ragmeter.validity.qrels_judging import label_pairs

    return await label_pairs(pairs, queries=queries, docs=docs, llm=llm, concurrency=2, prompt=prompt)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=60, help="pairs for the per-label agreement")
    ap.add_argument("--rank-queries", type=int, default=12, help="queries for the system rankings (0: skip)")
    ap.add_argument("--depth", type=int, default=3, help="pool depth (and the nDCG cut-off)")
    ap.add_argument("--judge", default="local")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated subset of the variants")
    ap.add_argument("--cache", default=str(REPO / ".ragmeter" / "bench-judge-cache.sqlite"))
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--json", dest="json_out", help="also write the results here")
    ap.add_argument(
        "--prompt", choices=("ours", "umbrela", "both"), default="ours", help="trec_relevance prompt(s)"
    )
    args = ap.parse_args()

    from ragmeter.datasets.beir import load_beir
    from ragmeter.ir import Qrels, Run
    from ragmeter.llm import from_spec
    from ragmeter.systems import build_system
    from ragmeter.validity.agreement import agreement
    from ragmeter.validity.qrels_judging import labels_to_qrels, meta_evaluate, pool

    t0 = time.perf_counter()
    dataset = load_beir(scifact_dir())
    queries = {q.query_id: q.question for q in dataset.queries}
    docs = {d.doc_id: doc_text(d) for d in dataset.corpus or []}
    human_all = {q.query_id: q.judgments() for q in dataset.queries}
    index_dir = REPO / ".ragmeter" / "bench-indexes"
    systems: dict[str, Any] = {}
    notes: list[str] = []
    for name in args.variants.split(","):
        try:
            systems[name] = build_system("builtin", dataset=dataset, index_dir=index_dir, **VARIANTS[name])
        except Exception as exc:  # a missing extra (dense): run the rest, say so
            notes.append(f"variant {name} skipped: {exc}")
    print(
        f"loaded SciFact ({len(queries)} test queries, {len(docs)} docs) in {time.perf_counter() - t0:.1f} s"
    )
    llm = from_spec(args.judge, cache=args.cache, concurrency=2, timeout=300, seed=0)
    results: dict[str, Any] = {"args": vars(args), "notes": notes}

    async def run() -> None:
        async with llm:
            for prompt in ("ours", "umbrela") if args.prompt == "both" else (args.prompt,):
                print(f"--- prompt {prompt}")
                results[prompt] = {}
                await one_prompt(prompt, results[prompt])

    async def one_prompt(prompt: str, results: dict[str, Any]) -> None:
        # 1. per-label agreement on relevant pairs + BM25 hard negatives
        sample = label_sample(
            dataset,
            systems.get("bm25")
            or build_system("builtin", dataset=dataset, index_dir=index_dir, mode="fulltext"),
            args.pairs,
            args.seed,
        )
        t = time.perf_counter()
        labels = await grade([(q, d) for q, d, _ in sample], queries, docs, llm, prompt)
        ok = [(h, lab.grade) for (_, _, h), lab in zip(sample, labels, strict=True) if lab.grade is not None]
        human = [h for h, _ in ok]
        per_label: dict[str, Any] = {
            "n_pairs": len(sample),
            "n_failed": len(sample) - len(ok),
            "n_relevant": sum(h for _, _, h in sample),
            "seconds": round(time.perf_counter() - t, 1),
            "llm_grades": {str(g): sum(1 for _, x in ok if x == g) for g in range(4)},
        }
        for threshold in (2, 1):
            a = agreement(
                human,
                [int(g >= threshold) for _, g in ok],
                labels=[0, 1],
                n_resamples=args.n_boot,
                seed=args.seed,
            ).to_dict()
            per_label[f"relevant_at_{threshold}"] = {
                k: a[k] for k in ("kappa", "kappa_ci", "accuracy", "accuracy_ci", "confusion")
            }
        results["per_label"] = per_label
        print(json.dumps(per_label, indent=1))

        # 2. system rankings under human vs LLM qrels
        if args.rank_queries <= 0 or len(systems) < 2:
            return
        rng = random.Random(args.seed + 1)
        qids = sorted(q.query_id for q in dataset.queries if q.relevant_doc_ids)
        chosen = sorted(rng.sample(qids, min(args.rank_queries, len(qids))))
        runs: dict[str, Run] = {}
        for name, system in systems.items():
            hits = {q: {r.doc_id: float(r.score) for r in system.retrieve(queries[q], 10)} for q in chosen}
            runs[name] = Run.from_dict(hits, source=name)
        pooled = pool(list(runs.values()), args.depth)
        pairs = [(q, d) for q, ds in pooled.items() for d in ds]
        t = time.perf_counter()
        pool_labels = await grade(pairs, queries, docs, llm, prompt)
        llm_qrels = labels_to_qrels(pool_labels)
        human_qrels = Qrels.from_dict({q: human_all[q] for q in chosen})
        if llm_qrels is None:
            results["ranking"] = {"error": "the judge graded no pooled pair"}
            return
        meta = meta_evaluate(
            human_qrels,
            llm_qrels,
            runs,
            measure=f"ndcg@{args.depth}",
            n_resamples=args.n_boot,
            seed=args.seed,
        ).to_dict()
        meta.update(
            n_pooled_pairs=len(pairs),
            n_failed=sum(1 for lab in pool_labels if lab.grade is None),
            seconds=round(time.perf_counter() - t, 1),
            queries=len(chosen),
        )
        meta.pop("confusion", None)
        results["ranking"] = meta
        print(json.dumps(meta, indent=1))

    asyncio.run(run())
    usage = llm.usage.model_dump()
    results["usage"] = {k: usage.get(k) for k in ("calls", "cached_calls", "failed_calls", "latency_s_total")}
    results["seconds_total"] = round(time.perf_counter() - t0, 1)
    print(json.dumps({"usage": results["usage"], "seconds_total": results["seconds_total"], "notes": notes}))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
