"""From stored outputs to a scored run: run-level metrics, aggregates, notes, the grade summary, usage.

`score_run` reads the per-query results (outputs plus the per-query metrics computed as each query
completed) and returns what the end of a run adds, without changing its inputs: the run-level values to
store once as their own rows, and the merged per-query results with their aggregates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.models import EvalQuery, MetricSummary, PPIEstimate, QueryEvalResult
from ragmeter.score.idcheck import foreign_ids_note
from ragmeter.score.plan import MetricPlan
from ragmeter.score.query import merge_metrics
from ragmeter.score.runlevel import (
    RunLevel,
    Values,
    grades_of,
    retrieval_scores,
    semantic_scores,
    total_scores,
)


@dataclass
class Scored:
    per_query: list[QueryEvalResult]
    run_level: Values  # {query id: {metric: value}} computed now: stored once, as their own rows
    aggregate: dict[str, MetricSummary]
    notes: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, Any] | None = None
    n_failed: int = 0
    n_without_relevant: int = 0
    ppi: dict[str, PPIEstimate] = field(default_factory=dict)  # judge means corrected with human labels


async def score_run(
    plan: MetricPlan,
    queries: Sequence[EvalQuery],
    results: Sequence[QueryEvalResult],
    *,
    relevance_level: int = 1,
    seed: int = 0,
    evaluate_generation: bool = True,
    models: Mapping[str, str | None] | None = None,
    context_k: int = 5,
    correct_if: str | None = None,
    gates: Mapping[str, float] | None = None,
) -> Scored:
    """Run-level metrics of `results` (in the order of `queries`), then aggregates and notes; the failure
    classes last, as they read the other metrics (`correct_if`: ragmeter.score.classes.parse_rule). `gates`
    ({metric: threshold}) are the pass lines of a repeated judge's all-k pass (ragmeter.score.flaky)."""
    from ragmeter.score.aggregate import aggregate_metrics
    from ragmeter.score.ppi import run_ppi
    from ragmeter.score.usage import run_usage

    by_id = {q.query_id: q for q in queries}
    level = RunLevel()
    retrieval_scores(results, by_id, plan.retrieval, relevance_level=relevance_level, out=level)
    if plan.total_score:
        total_scores(results, grades_of(results), out=level)
    if plan.semantic:
        await asyncio.to_thread(semantic_scores, results, by_id, out=level)
    if any(r.repeats for r in results):  # judged in repeats: each query's all-k pass beside its mean
        from ragmeter.score.flaky import pass_all_values

        for query_id, passes in pass_all_values(results, gates).items():
            level.values.setdefault(query_id, {}).update(passes)
    per_query = [merge_metrics(r, level.values.get(r.query_id, {})) for r in results]
    if plan.diagnosis:
        from ragmeter.score.abstention import abstention_values
        from ragmeter.score.classes import class_values, parse_rule

        rates = abstention_values(per_query, by_id, parse_rule(correct_if))
        for query_id, values in rates.items():
            level.values.setdefault(query_id, {}).update(values)
        per_query = [merge_metrics(r, rates.get(r.query_id, {})) for r in per_query]
        classes = class_values(
            per_query, by_id, context_k=context_k, relevance_level=relevance_level, correct_if=correct_if
        )
        for query_id, values in classes.items():
            level.values.setdefault(query_id, {}).update(values)
        per_query = [merge_metrics(r, classes.get(r.query_id, {})) for r in per_query]
    table = curve = None
    if plan.diagnosis:
        from ragmeter.score.selective import risk_coverage
        from ragmeter.score.sufficiency import sufficiency_table

        table = sufficiency_table(per_query, by_id, correct_if=correct_if)
        curve = risk_coverage(per_query, by_id, correct_if=correct_if)
    n_failed = sum(r.status == "failed" for r in per_query)
    notes = list(level.notes)
    foreign = foreign_ids_note(by_id, per_query)
    if foreign is not None:
        notes.append(foreign)
    answered = [r for r in per_query if r.status == "ok"]
    if evaluate_generation and answered and all(r.answer is None for r in answered):
        notes.append(
            "the system returned no answers, so no answer metrics: give the built-in pipeline an LLM "
            "with --generator MODEL, or run with --no-generation"
        )
    ppi, ppi_notes = run_ppi(queries, per_query)
    notes.extend(ppi_notes)
    if n_failed:
        notes.append(f"{n_failed} of {len(per_query)} queries failed; they are left out of every average")
    summary: dict[str, Any] = {"n_queries_without_relevant": level.n_without_relevant, "notes": notes}
    summary["ppi"] = {name: e.model_dump(mode="json") for name, e in ppi.items()}
    if level.grades:
        summary["retrieval_grades"] = level.grades
    if plan.diagnosis:
        summary["sufficiency"] = table  # None replaces a stale table on rescore
        summary["risk_coverage"] = curve
    usage = run_usage(per_query, dict(models or {}))
    if usage is not None:
        summary["usage"] = usage
    return Scored(
        per_query=per_query,
        run_level=level.values,
        aggregate={**aggregate_metrics(per_query, seed=seed), **summary_values(level.grades)},
        notes=notes,
        summary=summary,
        usage=usage,
        n_failed=n_failed,
        n_without_relevant=level.n_without_relevant,
        ppi=ppi,
    )


def summary_values(grades: Mapping[str, float | None]) -> dict[str, MetricSummary]:
    """The run's summary-stage metrics (pass rates, grade averages) as aggregates like any other metric,
    so that they are stored with the run, shown, compared and gated (`--fail-under pass_rate_8=...`).
    Pass rates are over ALL graded queries (a null grade does not pass); averages over the valid grades."""
    import ragmeter.metrics as rm

    if not grades:
        return {}
    n = int(grades.get("n_queries") or 0)
    n_graded = int(grades.get("n_graded") or 0)
    out: dict[str, MetricSummary] = {}
    for spec in rm.specs():
        if spec.stage != "summary" or spec.name not in grades:
            continue
        over_all = spec.unit == "%"
        out[spec.name] = MetricSummary(
            mean=grades[spec.name],
            std=None,
            n=n if over_all else n_graded,
            n_null=0 if over_all else n - n_graded,
        )
    return out
