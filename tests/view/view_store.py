"""A real SQLite store with runs written through the store API: retrieval metrics, judge grades with reasons,
claims and one null with its reason, usage and cost, latency per stage; optionally hostile text everywhere."""

from __future__ import annotations

import random
from pathlib import Path

from report_payloads import IMG_XSS, XSS

from ragmeter.models import EvalConfig, MetricResult, MetricSummary, QueryEvalResult, RetrievedDoc
from ragmeter.store import Store, open_store


def _summary(values: list[float | None]) -> MetricSummary:
    valid = [v for v in values if v is not None]
    mean = sum(valid) / len(valid) if valid else None
    return MetricSummary(
        mean=mean,
        std=None,
        n=len(valid),
        n_null=len(values) - len(valid),
        ci95=None if mean is None else (max(0.0, mean - 0.1), min(1.0, mean + 0.1)),
        ci_method="bootstrap",
    )


def query(
    i: int, rng: random.Random, *, hostile: bool, boost: float = 0.0, n_docs: int = 3
) -> QueryEvalResult:
    qid = f"q{i:05d}"
    metrics: dict[str, MetricResult] = {}
    for k in (1, 5, 10):
        v = round(min(1.0, rng.random() * 0.8 + boost), 4)
        metrics[f"recall@{k}"] = MetricResult(name=f"recall@{k}", value=v)
        metrics[f"ndcg@{k}"] = MetricResult(name=f"ndcg@{k}", value=round(v * 0.9, 4))
    metrics["mrr"] = MetricResult(name="mrr", value=round(rng.random(), 4))
    if i % 7 == 3:
        metrics["factuality"] = MetricResult(
            name="factuality", value=None, error="judge timed out after 3 retries", version="v1"
        )
    else:
        metrics["factuality"] = MetricResult(
            name="factuality",
            value=round(rng.random(), 3),
            details={
                "reasoning": f"Claim support for {qid}." + (XSS if hostile else ""),
                "verdicts": [
                    {"claim": "BM25 is lexical" + (IMG_XSS if hostile else ""), "verdict": "SUPPORTED"}
                ],
            },
            version="v1",
        )
    docs = [
        RetrievedDoc(
            doc_id=f"d{(i * 3 + r + int(boost * 10)) % 50}",
            score=round(10 - r + rng.random(), 3),
            rank=r + 1,
            text=(XSS if hostile and r == 0 else "")
            + f"Passage {r} for {qid}."
            + (IMG_XSS if hostile else ""),
        )
        for r in range(n_docs)
    ]
    return QueryEvalResult(
        query_id=qid,
        question=f"What is thing {i}?" + (XSS if hostile else ""),
        retrieved=docs,
        answer=f"Thing {i} is a thing." + (XSS if hostile else ""),
        ground_truth_answer=f"thing {i}" + (IMG_XSS if hostile else ""),
        metrics=metrics,
        latency_ms={"retrieval": 10.0 + i % 5, "generation": 200.0 + i % 11, "total": 210.0 + i % 13},
        usage={
            "generator": {
                "answer": {"calls": 1, "input_tokens": 120, "output_tokens": 30, "cost_usd": 0.0002}
            }
        },
    )


def add_run(
    store: Store,
    name: str,
    n: int,
    *,
    seed: int = 1,
    hostile: bool = False,
    boost: float = 0.0,
    dataset: str = "fixture",
    system: str = "builtin",
) -> str:
    rng = random.Random(seed)
    run = store.create_run(
        EvalConfig(dataset=dataset, seed=seed, mode="hybrid", system=system),
        name=name,
        dataset_name=dataset,
        dataset_hash=f"sha256-of-{dataset}",
    )
    assert run.run_id is not None
    results = [query(i, rng, hostile=hostile, boost=boost) for i in range(n)]
    for pos, q in enumerate(results):
        store.add_query_result(run.run_id, q, position=pos)
    names = list(results[0].metrics)
    aggregate = {m: _summary([q.metrics[m].value for q in results]) for m in names}
    usage = {"total": {"calls": n, "input_tokens": 120 * n, "output_tokens": 30 * n, "cost_usd": 0.0002 * n}}
    store.finish_run(
        run.run_id, status="completed", aggregate=aggregate, n_queries=n, summary={"usage": usage}
    )
    return run.run_id


def make_store(path: Path, *, hostile: bool = True) -> tuple[str, dict[str, str]]:
    """A store file with three runs: a hostile one, and two comparable ones. Returns (path, {name: id})."""
    url = str(path)
    with open_store(url) as store:
        ids = {
            "hostile": add_run(store, "bm25" + (XSS if hostile else ""), 12, seed=1, hostile=hostile),
            "base": add_run(store, "base", 20, seed=2),
            "better": add_run(store, "better", 20, seed=3, boost=0.2),
        }
    return url, ids
