"""Scoring of stored outputs: per-query scorers, run-level metrics (IR engine, SBERT batch, total_score),
aggregates with in-range intervals, latency percentiles, usage, writers (JSON, CSV); `rescore` of a stored
run is ragmeter.run.rescore.rescore (it rebuilds judges from the run record)."""

from __future__ import annotations

from ragmeter._lazy import by_module, lazy_getattr

_LAZY = by_module(
    {
        "ragmeter.score.plan": ("MetricPlan", "plan_metrics"),
        "ragmeter.score.query": ("score_query",),
        "ragmeter.score.finish": ("score_run", "Scored"),
        "ragmeter.score.aggregate": ("aggregate_metrics",),
        "ragmeter.score.ppi": ("ppi_for_run", "run_ppi"),
        "ragmeter.score.usage": ("run_usage",),
        "ragmeter.score.writers": ("write_json", "write_csv", "read_run_json", "csv_path_for"),
    }
)

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
