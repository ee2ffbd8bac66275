"""Metric values: one row per (run, query, metric, repeat), written once; a rescore replaces the rows it
recomputes and the run's aggregates and summary. A judge metric of a run with repeats has a row per repeat
and its value is their mean (ragmeter.models.mean_of_repeats), computed when read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragmeter.errors import InputError
from ragmeter.models import MetricResult, MetricSummary, mean_of_repeats

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine
    from sqlalchemy.orm import Session


class MetricValueStore:
    """The metric-value and score methods of Store."""

    engine: Engine
    url: str

    def _session(self) -> Session:
        raise NotImplementedError

    def put_metric_values(self, run_id: str, values: Mapping[str, Mapping[str, MetricResult]]) -> int:
        """Store metric values {query id: {name: value}} as rows, replacing those of the same (query,
        metric) (a rescore, or a resumed run scored again). Returns the rows written."""
        from sqlalchemy import delete, insert, tuple_

        from ragmeter.store.schema import MetricValueRow

        rows = metric_rows(run_id, values)
        if not rows:
            return 0
        keys = [(r["query_id"], r["name"]) for r in rows]
        with self.engine.begin() as conn:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                conn.execute(
                    delete(MetricValueRow).where(
                        MetricValueRow.run_id == run_id,
                        tuple_(MetricValueRow.query_id, MetricValueRow.name).in_(chunk),
                    )
                )
            conn.execute(insert(MetricValueRow), rows)
        return len(rows)

    def delete_metric_values(self, run_id: str, names: list[str]) -> int:
        from sqlalchemy import delete

        from ragmeter.store.schema import MetricValueRow

        with self.engine.begin() as conn:
            res = conn.execute(
                delete(MetricValueRow).where(MetricValueRow.run_id == run_id, MetricValueRow.name.in_(names))
            )
            return int(res.rowcount or 0)

    def update_scores(
        self,
        run_id: str,
        *,
        aggregate: dict[str, MetricSummary],
        summary: dict[str, Any],
        versions: dict[str, str],
    ) -> None:
        """New aggregates, summary and versions of a rescored run (its status and times stay)."""
        from ragmeter.store.schema import RunRow

        with self._session() as session, session.begin():
            row = session.get(RunRow, run_id)
            if row is None:
                raise InputError(f"no run {run_id!r} in {self.url}")
            row.aggregate = {k: v.model_dump(mode="json") for k, v in aggregate.items()}
            row.summary = summary
            row.versions = dict(versions)

    def run_summary(self, run_id: str) -> dict[str, Any]:
        from ragmeter.store.schema import RunRow

        with self._session() as session:
            row = session.get(RunRow, run_id)
            return dict(row.summary or {}) if row is not None else {}


def metric_rows(
    run_id: str,
    values: Mapping[str, Mapping[str, MetricResult]],
    repeats: Mapping[str, Mapping[str, Sequence[MetricResult]]] | None = None,
) -> list[dict[str, Any]]:
    """Rows of {query id: {name: value}}; a metric with repeats ({query id: {name: [value of each repeat]}})
    is stored as its repeats (their mean is computed again when read: `by_query`)."""
    repeats = repeats or {}
    rows = []
    for qid, by_name in values.items():
        for name, m in by_name.items():
            each = repeats.get(qid, {}).get(name) or [m]
            rows += [
                {
                    "run_id": run_id,
                    "query_id": qid,
                    "name": name,
                    "repeat": r,
                    "value": v.value,
                    "error": v.error,
                    "version": v.version,
                    "details": v.details,
                }
                for r, v in enumerate(each)
            ]
    return rows


def by_query(rows: Iterable[Any], *, trusted: bool = False) -> dict[str, dict[str, list[MetricResult]]]:
    """{query id: {metric: [value of each repeat]}} of metric_values rows, metrics in the order first seen.
    `trusted`: rows the store wrote itself, read back without validation (the viewer's pages)."""
    make = MetricResult.model_construct if trusted else MetricResult
    found: dict[str, dict[str, dict[int, MetricResult]]] = {}
    for m in rows:
        value = make(name=m.name, value=m.value, error=m.error, version=m.version, details=m.details or {})
        found.setdefault(m.query_id, {}).setdefault(m.name, {})[int(getattr(m, "repeat", 0) or 0)] = value
    return {
        q: {n: [each[r] for r in sorted(each)] for n, each in names.items()} for q, names in found.items()
    }


def query_metrics(
    values: Mapping[str, list[MetricResult]],
) -> tuple[dict[str, MetricResult], dict[str, list[MetricResult]]]:
    """(value of each metric, repeats of the metrics stored in repeats) of one query's rows."""
    metrics = {n: each[0] if len(each) == 1 else mean_of_repeats(n, each) for n, each in values.items()}
    return metrics, {n: each for n, each in values.items() if len(each) > 1}


def metric_values(
    conn: Connection, run_id: str
) -> dict[str, tuple[dict[str, MetricResult], dict[str, list[MetricResult]]]]:
    """{query id: ({metric: value}, {metric: value of each repeat})} of a run."""
    from sqlalchemy import select

    from ragmeter.store.schema import MetricValueRow as M

    rows = conn.execute(select(M).where(M.run_id == run_id).order_by(M.id))
    return {qid: query_metrics(values) for qid, values in by_query(rows).items()}
