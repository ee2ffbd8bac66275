"""A stored run row read back as the EvalRunResult it records (used by api.Store)."""

from __future__ import annotations

from typing import Any

from ragmeter.models import EvalConfig, EvalRunResult, MetricSummary, QueryEvalResult
from ragmeter.store.liveness import aware as _aware


def run_result(row: Any, per_query: list[QueryEvalResult]) -> EvalRunResult:
    """The EvalRunResult that a stored run row (with its per-query results, if loaded) stands for."""
    summary = dict(row.summary or {})
    return EvalRunResult(
        run_id=row.id,
        name=row.name,
        status=row.status,
        config=EvalConfig.model_validate(row.config),
        dataset_hash=row.dataset_hash,
        versions=dict(row.versions or {}),
        started_at=_aware(row.started_at),
        completed_at=_aware(row.completed_at),
        aggregate={k: MetricSummary.model_validate(v) for k, v in (row.aggregate or {}).items()},
        per_query=per_query,
        n_queries=row.n_queries or len(per_query),
        n_failed=row.n_failed,
        n_queries_without_relevant=int(summary.get("n_queries_without_relevant", 0)),
        error=row.error,
        notes=list(summary.get("notes", [])),
        usage=summary.get("usage"),
        record=row.record,
        ppi=summary.get("ppi") or {},
        sequential=summary.get("sequential"),
        stability=summary.get("stability") or {},
        gates_across_repeats=summary.get("gates_across_repeats") or {},
        sufficiency=summary.get("sufficiency"),
        risk_coverage=summary.get("risk_coverage"),
    )
