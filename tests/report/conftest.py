from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from report_payloads import IMG_XSS, XSS

from ragmeter.models import (
    EvalConfig,
    EvalRunResult,
    MetricResult,
    MetricSummary,
    QueryEvalResult,
    RetrievedDoc,
)


def _summary(values: list[float | None]) -> MetricSummary:
    valid = [v for v in values if v is not None]
    mean = sum(valid) / len(valid) if valid else None
    std = None
    if mean is not None and len(valid) > 1:
        std = (sum((v - mean) ** 2 for v in valid) / (len(valid) - 1)) ** 0.5
    return MetricSummary(mean=mean, std=std, n=len(valid), n_null=len(values) - len(valid))


# The judge every fixture run records (the version guard compares it between runs).
JUDGE = '{"backend": "openai-compatible", "model": "fixture-judge", "params": {"temperature": 0.0}}'


def build_run(
    name: str, seed: int, n: int = 12, *, boost: float = 0.0, hostile: bool = False
) -> EvalRunResult:
    """A run built from the pydantic models: retrieval metrics at several k, an answer, judge grades."""
    rng = random.Random(seed)
    per_query = []
    for i in range(n):
        qid = f"q{i:03d}"
        metrics: dict[str, MetricResult] = {}
        for k in (1, 5, 10):
            v = min(1.0, rng.random() * (0.4 + 0.06 * k) + boost)
            metrics[f"recall@{k}"] = MetricResult(name=f"recall@{k}", value=round(v, 4), version="1")
            metrics[f"ndcg@{k}"] = MetricResult(name=f"ndcg@{k}", value=round(v * 0.9, 4), version="1")
        metrics["mrr"] = MetricResult(name="mrr", value=round(rng.random(), 4), version="1")
        if i == 3:
            metrics["retrieval_grade"] = MetricResult(
                name="retrieval_grade", value=None, error="judge timed out after 3 retries", version="v1"
            )
        else:
            metrics["retrieval_grade"] = MetricResult(
                name="retrieval_grade",
                value=float(rng.randint(3, 10)),
                details={"reasoning": f"Chunk 1 answers question {i} directly." + (XSS if hostile else "")},
                version="v1",
            )
        metrics["factuality"] = MetricResult(
            name="factuality",
            value=round(rng.random(), 3),
            details={"verdicts": [{"claim": "BM25 is lexical", "verdict": "SUPPORTED"}]},
            version="v2",
        )
        docs = [
            RetrievedDoc(
                doc_id=f"d{rng.randint(0, 99)}-{r}",
                score=round(10 - r + rng.random(), 3),
                rank=r + 1,
                text=(XSS if hostile and r == 0 else "")
                + f"Passage text {r} for {qid}. "
                + (IMG_XSS if hostile else ""),
            )
            for r in range(3)
        ]
        per_query.append(
            QueryEvalResult(
                query_id=qid,
                question=f"What is thing {i}?" + (XSS if hostile and i == 0 else ""),
                retrieved=docs,
                answer=f"Thing {i} is a thing." + (XSS if hostile else ""),
                ground_truth_answer=f"thing {i}",
                metrics=metrics,
                latency_ms={"retrieval": 12.5, "generation": 300.0},
            )
        )
    names = list(per_query[0].metrics)
    aggregate = {m: _summary([q.metrics[m].value for q in per_query]) for m in names}
    return EvalRunResult(
        run_id=f"run-{name}",
        name=name + (XSS if hostile else ""),
        config=EvalConfig(dataset="demo", seed=seed, mode=name),
        aggregate=aggregate,
        per_query=per_query,
        n_queries=n,
        versions={"ragmeter": "0.1.0", "judge": JUDGE},
        notes=["queries with no relevant docs are left out of retrieval averages"],
    )


@pytest.fixture
def make_run() -> Callable[..., EvalRunResult]:
    return build_run
