"""Scoring of stored outputs: per-query scorers, run-level metrics (IR engine, SBERT batch, total_score),
aggregates with in-range intervals, latency percentiles, usage, writers (JSON, CSV); `rescore` of a stored
run is ragmeter.run.rescore.rescore (it rebuilds judges from the run record)."""

from __future__ import annotations

from ragmeter._lazy import lazy_getattr

_LAZY = {
    "MetricPlan": "ragmeter.score.plan",
    "plan_metrics": "ragmeter.score.plan",
    "score_query": "ragmeter.score.query",
    "score_run": "ragmeter.score.finish",
    "Scored": "ragmeter.score.finish",
    "aggregate_metrics": "ragmeter.score.aggregate",
    "ppi_for_run": "ragmeter.score.ppi",
    "run_ppi": "ragmeter.score.ppi",
    "run_usage": "ragmeter.score.usage",
    "write_json": "ragmeter.score.writers",
    "write_csv": "ragmeter.score.writers",
    "read_run_json": "ragmeter.score.writers",
    "csv_path_for": "ragmeter.score.writers",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
