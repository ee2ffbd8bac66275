"""`rescore`: recompute or add metrics on a stored run without calling its system (inspect_ai's `score`).

Everything is computed from the stored outputs (retrieved ids, ranks and texts, answers) and the dataset
(gold answers, qrels; its hash must match the run's). Non-LLM values equal the original run's; judge
metrics can be added to a run made without a judge. The recomputed values replace their rows; the
aggregates, notes and usage of the run are updated; the run's outputs are not touched.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ragmeter.errors import InputError
from ragmeter.models import EvalDataset, EvalQuery, EvalRunResult, MetricResult, QueryEvalResult
from ragmeter.result_models import as_json
from ragmeter.score.plan import MetricPlan, plan_metrics

if TYPE_CHECKING:
    from ragmeter.records import RunRecord
    from ragmeter.store import Store


def rescore(run_id: str, **kwargs: Any) -> EvalRunResult:
    """Sync wrapper of `arescore`."""
    return asyncio.run(arescore(run_id, **kwargs))


async def arescore(
    run_id: str,
    *,
    store: Store,
    metrics: Sequence[str] | None = None,
    judge: str | None = None,
    llm: Any = None,
    dataset: EvalDataset | None = None,
    nuggets: str | None = None,
    nuggets_prompt: str | None = None,
) -> EvalRunResult:
    """Recompute `metrics` (default: every non-LLM metric of the run, plus the judges when `judge` or
    `llm` is given or a judge value was made by another prompt than today's) on stored run `run_id`;
    returns the updated run."""
    from ragmeter.llm.meter import MeteredLLM
    from ragmeter.score import nugget_plan

    run = store.get_run(run_id)
    record = _record(run)
    data = _dataset(run, store, dataset)
    nugget_spec = _nugget_spec(run, nuggets, nuggets_prompt)
    if (
        nuggets is not None and not metrics
    ):  # the run's nugget metrics (else the defaults), against the new set
        present = sorted({n for q in run.per_query for n in q.metrics if nugget_plan.is_nugget(n)})
        metrics = present or nugget_plan.default_names(record.cutoffs)
    wants_judge = judge is not None or llm is not None or _names_judge(metrics)
    wants_judge = wants_judge or (not metrics and bool(stale_judges(run)))
    plan = plan_metrics(
        metrics or record.metrics,
        record.cutoffs,
        evaluate_generation=record.evaluate_generation,
        judged=wants_judge,
        semantic=run.config.semantic,
        strict=bool(metrics),
        source="--metrics",
    )
    plan, chosen = nugget_plan.attach(plan, nugget_spec if plan.judges else None, record.cutoffs)
    if not metrics and any("retrieval_grade" in r.metrics for r in run.per_query):
        plan = dataclasses.replace(plan, total_score=True)  # from the stored grades: no judge call
    client, owned = _judge_client(plan, record, judge, llm)
    try:
        metered = MeteredLLM(client, "judge") if client is not None else None
        by_id = {q.query_id: q for q in data.queries}
        missing = [r.query_id for r in run.per_query if r.query_id not in by_id]
        if missing:
            raise InputError(f"query {missing[0]!r} of the run is not in the dataset", source="--dataset")
        results = await _per_query(
            plan, run.per_query, by_id, record.context_k, metered, record.concurrency, record.factuality_batch
        )
    finally:
        if owned and client is not None:
            await client.aclose()
    return await _store(store, run, record, plan, results, data, judge_public=_public(client), nuggets=chosen)


def _record(run: EvalRunResult) -> RunRecord:
    from ragmeter.run.prepare import legacy_record

    return run.record if run.record else legacy_record(run)


def _nugget_spec(run: EvalRunResult, path: str | None, prompt: str | None) -> dict[str, Any] | None:
    """The nugget set to score against: a new file (`--nuggets`), else the one the run was last scored
    against (its versions' "nuggets", else its config's), whose hash must not have changed."""
    import json

    from ragmeter.score.nugget_plan import DEFAULT_STYLE, absolute

    last = json.loads(run.versions["nuggets"]) if run.versions.get("nuggets") else run.config.nuggets
    if path is not None:
        style = prompt or (last or {}).get("prompt") or DEFAULT_STYLE
        return {"path": absolute(path), "prompt": style}
    if prompt is not None:
        raise InputError("needs --nuggets FILE", source="--nuggets-prompt")
    return dict(last) if last else None


def _dataset(run: EvalRunResult, store: Store, dataset: EvalDataset | None) -> EvalDataset:
    from ragmeter.datasets.resolve import dataset_hash, resolve_dataset

    data = dataset or resolve_dataset(run.config.dataset, seed=run.config.seed, store=store)
    if run.dataset_hash and dataset_hash(data) != run.dataset_hash:
        raise InputError(
            f"the dataset {run.config.dataset!r} changed since run {run.run_id} was made: rescoring would mix "
            "two datasets",
            source="--dataset",
        )
    return data


def stale_judges(run: EvalRunResult) -> list[str]:
    """Judge metrics of the run with a value made by another prompt than today's (or by an unknown one):
    a plain `rescore RUN` judges them again, so that the run compares with runs made today."""
    from ragmeter.judges import prompt_versions

    today = prompt_versions()
    found = {n for q in run.per_query for n, m in q.metrics.items() if n in today and m.version != today[n]}
    return sorted(found)


def _names_judge(metrics: Sequence[str] | None) -> bool:
    import ragmeter.metrics as rm

    return any(rm.family_of(m) == "judge" and m != "total_score" for m in metrics or ())


def _judge_client(plan: MetricPlan, record: RunRecord, judge: str | None, llm: Any) -> tuple[Any, bool]:
    if not plan.judges:
        return None, False
    if llm is not None:
        return llm, False
    from ragmeter.records import LLMRef
    from ragmeter.run.rebuild import check_llm_spec, make_llm

    if judge is not None:
        check_llm_spec(judge, source="--judge")
        return make_llm(LLMRef(spec=judge), record), True
    if record.judge is None:
        raise InputError("judge metrics need a judge: give --judge MODEL", source="--judge")
    return make_llm(record.judge, record), True


def _public(client: Any) -> dict[str, Any] | None:
    public = getattr(client, "spec_public", None) if client is not None else None
    return dict(public) if isinstance(public, dict) else None


async def _per_query(
    plan: MetricPlan,
    stored: Sequence[QueryEvalResult],
    queries: dict[str, EvalQuery],
    context_k: int,
    judge: Any,
    concurrency: int,
    factuality_batch: int | None = None,
) -> list[QueryEvalResult]:
    """Each stored result with its per-query metrics of `plan` recomputed (judges concurrently)."""
    from ragmeter.judges.factuality import run_batch
    from ragmeter.llm.meter import query_usage
    from ragmeter.score.query import merge_metrics, score_query

    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(r: QueryEvalResult) -> QueryEvalResult:
        if r.status != "ok":
            return r
        async with gate:
            with query_usage() as usage, run_batch(factuality_batch):
                values = await score_query(plan, queries[r.query_id], r, context_k=context_k, judge=judge)
        merged = merge_metrics(r, values)
        if r.repeats:  # a value judged again (once) replaces its stored repeats
            merged = merged.model_copy(
                update={"repeats": {n: v for n, v in r.repeats.items() if n not in values}}
            )
        if usage:
            merged = merged.model_copy(update={"usage": {**r.usage, **_add_usage(r.usage, usage)}})
        return merged

    return list(await asyncio.gather(*(one(r) for r in stored)))


def _add_usage(
    old: dict[str, dict[str, dict[str, Any]]], new: dict[str, dict[str, dict[str, Any]]]
) -> dict[str, dict[str, dict[str, Any]]]:
    return {role: {**old.get(role, {}), **labels} for role, labels in new.items()}


async def _store(
    store: Store,
    run: EvalRunResult,
    record: RunRecord,
    plan: MetricPlan,
    results: list[QueryEvalResult],
    data: EvalDataset,
    *,
    judge_public: dict[str, Any] | None,
    nuggets: Any = None,
) -> EvalRunResult:
    from ragmeter.score.finish import score_run

    assert run.run_id is not None
    queries = [q for q in data.queries if q.query_id in {r.query_id for r in results}]
    scored = await score_run(
        plan,
        queries,
        results,
        relevance_level=record.relevance_level,
        seed=record.seed,
        evaluate_generation=record.evaluate_generation,
        models={"judge": (judge_public or {}).get("model")},
        context_k=record.context_k,
        correct_if=run.config.correct_if,
    )
    recomputed = _recomputed(plan, scored.per_query, run.per_query, scored.run_level)
    store.put_metric_values(run.run_id, recomputed)
    summary = {**store.run_summary(run.run_id), **scored.summary}
    new_usage = any(r.usage != s.usage for r, s in zip(scored.per_query, run.per_query, strict=True))
    if not new_usage:
        summary.pop("usage", None)
        if run.usage is not None:
            summary["usage"] = as_json(run.usage)
    summary["rescored"] = {
        "at": datetime.now(UTC).isoformat(),
        "metrics": sorted({n for values in recomputed.values() for n in values}),
    }
    if plan.judges and summary.get("stability"):  # judged once now: their repeats, and stability, are gone
        summary["stability"] = {n: s for n, s in summary["stability"].items() if n not in plan.judges}
    versions = dict(run.versions)
    if plan.judges:
        from ragmeter.judges import prompt_versions

        versions.update({f"prompt.{n}": v for n, v in prompt_versions(list(plan.judges)).items()})
        if judge_public is not None:
            import json

            versions["judge"] = json.dumps(judge_public, sort_keys=True)
    if nuggets is not None:
        import json

        versions["nuggets"] = json.dumps(nuggets.extra(), sort_keys=True)
    store.update_scores(run.run_id, aggregate=scored.aggregate, summary=summary, versions=versions)
    updated = store.get_run(run.run_id)
    return updated.model_copy(update={"per_query": scored.per_query})


def _recomputed(
    plan: MetricPlan,
    now: Sequence[QueryEvalResult],
    before: Sequence[QueryEvalResult],
    run_level: dict[str, dict[str, MetricResult]],
) -> dict[str, dict[str, MetricResult]]:
    """The values that changed or were added (per query and run level), to store as rows."""
    out: dict[str, dict[str, MetricResult]] = {}
    for r, old in zip(now, before, strict=True):
        fresh = {
            n: m
            for n, m in r.metrics.items()
            if old.metrics.get(n) != m or n in run_level.get(r.query_id, {})
        }
        if fresh:
            out[r.query_id] = fresh
    return out
