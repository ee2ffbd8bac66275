"""Aggregates of a run: every metric through the registry's `summarize` (intervals inside the metric's
range, the method named), and latency per stage as p50 / p95 / max (`latency_<stage>_ms`, lower is better)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from ragmeter.models import MetricSummary, QueryEvalResult


def aggregate_metrics(per_query: Sequence[QueryEvalResult], *, seed: int = 0) -> dict[str, MetricSummary]:
    """Mean, sample std, valid and null counts and the declared 95% interval of each metric over the
    successful queries that carry it; then latency percentiles per stage. In the registry's display order."""
    import ragmeter.metrics as rm
    from ragmeter.metrics.aggregate import summarize

    values: dict[str, list[float | None]] = {}
    for r in per_query:
        if r.status != "ok":
            continue
        for name, metric in r.metrics.items():
            values.setdefault(name, []).append(metric.value)
    out = {name: summarize(name, values[name], seed=seed) for name in sorted(values, key=rm.sort_key)}
    out.update(latency_summaries(per_query))
    return out


def latency_summaries(per_query: Sequence[QueryEvalResult]) -> dict[str, MetricSummary]:
    """`latency_<stage>_ms` of every stage any query timed (failed queries included: their time was spent)."""
    from ragmeter.metrics.aggregate import percentiles

    stages: dict[str, list[float]] = {}
    for r in per_query:
        for stage, value in r.latency_ms.items():
            stages.setdefault(stage, []).append(float(value))
    out: dict[str, MetricSummary] = {}
    for stage, times in stages.items():
        p = percentiles(times)
        std = statistics.stdev(times) if len(times) > 1 else 0.0
        out[f"latency_{stage}_ms"] = MetricSummary(
            mean=p["mean"], std=std, n=len(times), p50=p["p50"], p95=p["p95"], max=p["max"]
        )
    return out
