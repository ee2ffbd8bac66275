"""The closed-book arm of `diagnose` (`--also closed-book`): the run's generator replayed with no context at
all, so that a run shows what its answers owe to retrieval. Needs no qrels (the oracle arms do).

Per query, `closed_book_correct` (1 / 0) by the run's correctness rule on the closed-book answer (a query
without a reference answer has none: closed-book answers cannot be grounded), stored on the parent run beside
its other values and summarised with Wilson intervals next to the run's own correct share. Named apart from
`rc_self_knowledge` (RAGChecker's claim-level share of correct claims no context entails).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragmeter.models import EvalQuery, EvalRunResult, MetricResult

CLOSED_BOOK = "closed-book"
METRIC = "closed_book_correct"
VERSION = "1"


def closed_book_values(
    run: EvalRunResult,
    replay: EvalRunResult,
    queries: Mapping[str, EvalQuery],
    correct_if: str | None,
) -> tuple[dict[str, dict[str, MetricResult]], dict[str, Any]]:
    """({query id: {closed_book_correct: 0/1}} for the parent run, the summary diagnose prints)."""
    from ragmeter.score.classes import parse_rule
    from ragmeter.score.outcome import correct_by
    from ragmeter.stats.intervals import wilson

    rule = parse_rule(correct_if)
    parent = {r.query_id: r for r in run.per_query if r.status == "ok"}
    values: dict[str, dict[str, MetricResult]] = {}
    both = closed = owed = 0
    for r in replay.per_query:
        query = queries.get(r.query_id)
        if r.status != "ok" or query is None or not query.gold_answers() or r.answer is None:
            continue
        got = correct_by(r.metrics, rule)
        if got is None:
            continue
        details = {"reason": f"closed-book answer: {got[1]}", "replay": replay.run_id}
        values[r.query_id] = {
            METRIC: MetricResult(name=METRIC, value=float(got[0]), details=details, version=VERSION)
        }
        mine = correct_by(parent[r.query_id].metrics, rule) if r.query_id in parent else None
        closed += got[0]
        if mine is not None:
            both += 1
            owed += mine[0] and not got[0]
    n = len(values)
    summary: dict[str, Any] = {"replay": replay.run_id, "n": n, METRIC: None, "ci95": None}
    if n:
        lo, hi = wilson(closed, n)
        summary.update({METRIC: closed / n, "ci95": [lo, hi], "ci_method": "wilson"})
    summary["owed_to_retrieval"] = {
        "n": owed,
        "of": both,
        "what": "queries the run answered correctly with its contexts and the generator alone did not",
    }
    return values, summary


def store_closed_book(
    store: Any, run: EvalRunResult, replay: EvalRunResult, queries: Mapping[str, EvalQuery]
) -> dict[str, Any]:
    """Store `closed_book_correct` on the parent run, per query and in its aggregate and versions (the
    stored metrics stay as they were); returns the summary diagnose prints."""
    from ragmeter.score.aggregate import aggregate_metrics

    run_id = run.run_id or ""
    values, summary = closed_book_values(run, replay, queries, run.config.correct_if)
    store.put_metric_values(run_id, values)
    fresh = store.get_run(run_id)
    summaries = aggregate_metrics(fresh.per_query, seed=fresh.config.seed)
    aggregate = dict(fresh.aggregate)
    if METRIC in summaries:
        aggregate[METRIC] = summaries[METRIC]
    store.update_scores(
        run_id,
        aggregate=aggregate,
        summary=store.run_summary(run_id),
        versions={**fresh.versions, METRIC: VERSION},
    )
    return summary
