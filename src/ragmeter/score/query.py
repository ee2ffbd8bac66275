"""Per-query scorers: lexical metrics, LLM judges and user metrics, from one query's stored outputs.

The run loop calls `score_query` as each query completes; `rescore` calls it again on stored outputs. Both
read only plain data (the query, its answer and retrieved texts), never the system.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ragmeter.models import EvalQuery, MetricResult, QueryEvalResult, RetrievedDoc
from ragmeter.score.plan import MetricPlan


def error_text(stage: str, exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
    return f"{stage} failed: {type(exc).__name__}: {reason}"[:2000]


def context_docs(result: QueryEvalResult, context_k: int) -> list[RetrievedDoc]:
    """What the generator was given: the stored contexts, else (older runs) the top `context_k` retrieved."""
    return list(result.contexts) if result.contexts is not None else list(result.retrieved[:context_k])


def contexts_of(result: QueryEvalResult, context_k: int) -> list[str]:
    """The texts a generator and the judges get, in the order given."""
    return [d.text for d in context_docs(result, context_k)]


def relevant_rank(query: EvalQuery, retrieved_ids: Sequence[str]) -> int | None:
    relevant = {d for d, g in query.judgments().items() if g >= 1}
    for rank, doc_id in enumerate(retrieved_ids, start=1):
        if doc_id in relevant:
            return rank
    return None


def lexical_scores(
    names: Sequence[str] | None, query: EvalQuery, answer: str | None, contexts: Sequence[str]
) -> dict[str, MetricResult]:
    if answer is None:
        return {}
    from ragmeter.text import lexical_metrics

    values = lexical_metrics(answer, query.gold_answers(), question=query.question, contexts=list(contexts))
    return values if names is None else {n: v for n, v in values.items() if n in names}


async def judge_scores(
    names: Sequence[str],
    query: EvalQuery,
    answer: str | None,
    contexts: Sequence[str],
    rank: int | None,
    llm: Any,
) -> dict[str, MetricResult]:
    from ragmeter.judges import run_judges
    from ragmeter.judges.cascade import Cascade

    # a cascade: a cheap judge that escalates to a strong one under its calibrated threshold
    judge_all: Callable[..., Awaitable[dict[str, MetricResult]]] = (
        llm.judge if isinstance(llm, Cascade) else run_judges
    )
    try:
        return await judge_all(
            list(names),
            question=query.question,
            answer=answer,
            contexts=list(contexts),
            ground_truth=query.ground_truth_answer,
            llm=llm,
            relevant_rank=rank,
            query_id=query.query_id,
        )
    except Exception as exc:  # a judge failure is a null metric, never a failed query
        from ragmeter.judges import prompt_versions

        versions = prompt_versions([n for n in names if n in prompt_versions()])
        return {
            n: MetricResult(name=n, value=None, error=error_text("judge", exc), version=versions.get(n))
            for n in names
        }


def custom_scores(
    names: Sequence[str], query: EvalQuery, result: QueryEvalResult, contexts: Sequence[str]
) -> dict[str, MetricResult]:
    """User metrics registered with `ragmeter.metrics.register`: `spec.compute(ScoreInput)`."""
    import ragmeter.metrics as rm
    from ragmeter.metrics.spec import ScoreInput

    inp = ScoreInput(
        query_id=query.query_id,
        question=query.question,
        answer=result.answer,
        gold_answers=query.gold_answers(),
        contexts=list(contexts),
        retrieved_ids=[d.doc_id for d in result.retrieved],
        qrels=query.judgments(),
    )
    out: dict[str, MetricResult] = {}
    for name in names:
        spec = rm.get(name)
        if spec.compute is None or ("answer" in spec.inputs and result.answer is None):
            continue
        try:
            value = spec.compute(inp)
            out[name] = _custom_value(name, value, spec.version)
        except Exception as exc:  # a user metric must not take the run down
            out[name] = MetricResult(name=name, value=None, error=error_text(name, exc), version=spec.version)
    return out


def _custom_value(name: str, value: Any, version: str) -> MetricResult:
    import math

    import ragmeter.metrics as rm

    if value is None:
        return MetricResult(name=name, value=None, error="undefined for this query", version=version)
    number = float(value)
    if not math.isfinite(number):
        return MetricResult(name=name, value=None, error=f"not a finite number: {value!r}", version=version)
    spec = rm.get(name)
    if not spec.in_range(number):
        return MetricResult(
            name=name,
            value=None,
            error=f"{number:g} is outside the declared range {spec.range}",
            version=version,
        )
    return MetricResult(name=name, value=number, version=version)


async def score_query(
    plan: MetricPlan,
    query: EvalQuery,
    result: QueryEvalResult,
    *,
    context_k: int,
    judge: Any = None,
    latency: dict[str, float] | None = None,
) -> dict[str, MetricResult]:
    """Every per-query metric of `plan` for one answered query (judges only with a `judge` client).
    Stage timings go into `latency` when given (lexical, judge)."""
    import time

    if result.status != "ok":
        return {}
    contexts = contexts_of(result, context_k)
    out: dict[str, MetricResult] = {}
    t = time.perf_counter()
    out.update(lexical_scores(plan.lexical, query, result.answer, contexts))
    out.update(custom_scores(plan.custom, query, result, contexts))
    if latency is not None and result.answer is not None:
        latency["lexical"] = (time.perf_counter() - t) * 1000
    if judge is not None and plan.judges:
        t = time.perf_counter()
        rank = relevant_rank(query, [d.doc_id for d in result.retrieved])
        nuggets = [n for n in plan.judges if n.startswith("nugget_")]
        others = [n for n in plan.judges if n not in nuggets]
        if others:
            out.update(await judge_scores(others, query, result.answer, contexts, rank, judge))
        if nuggets:
            out.update(await nugget_values(nuggets, plan.nuggets, query, result, contexts, judge))
        if latency is not None:
            latency["judge"] = (time.perf_counter() - t) * 1000
    return out


async def nugget_values(
    names: Sequence[str],
    nugget_plan: Any,
    query: EvalQuery,
    result: QueryEvalResult,
    contexts: Sequence[str],
    llm: Any,
) -> dict[str, MetricResult]:
    """The nugget metrics of one query against the run's nugget set (ragmeter.judges.nuggets)."""
    from ragmeter.judges.nuggets import NuggetQuery, nugget_scores

    if nugget_plan is None:
        return {n: MetricResult(name=n, value=None, error="the run has no nugget set") for n in names}
    inp = NuggetQuery(
        question=query.question,
        nuggets=nugget_plan.nuggets.get(query.query_id),
        answer=result.answer,
        contexts=list(contexts),
        retrieved=[d.text or "" for d in result.retrieved],
        query_id=query.query_id,
    )
    return await nugget_scores(names, inp, llm, style=nugget_plan.style, set_hash=nugget_plan.hash)


def merge_metrics(result: QueryEvalResult, *parts: Mapping[str, MetricResult]) -> QueryEvalResult:
    """A copy of `result` with the metrics of `parts` added (later parts win); the input is not changed."""
    metrics = dict(result.metrics)
    for part in parts:
        metrics.update(part)
    return result.model_copy(update={"metrics": metrics})
