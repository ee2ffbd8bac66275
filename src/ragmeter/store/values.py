"""Metric values: one row per (run, query, metric), written once; a rescore replaces the rows it recomputes
and the run's aggregates and summary."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ragmeter.errors import InputError
from ragmeter.models import MetricResult, MetricSummary

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


def metric_rows(run_id: str, values: Mapping[str, Mapping[str, MetricResult]]) -> list[dict[str, Any]]:
    return [
        {
            "run_id": run_id,
            "query_id": qid,
            "name": name,
            "value": m.value,
            "error": m.error,
            "version": m.version,
            "details": m.details,
        }
        for qid, by_name in values.items()
        for name, m in by_name.items()
    ]


def metric_values(conn: Connection, run_id: str) -> dict[str, dict[str, MetricResult]]:
    """{query id: {metric: value}} of a run."""
    from sqlalchemy import select

    from ragmeter.store.schema import MetricValueRow

    out: dict[str, dict[str, MetricResult]] = {}
    for m in conn.execute(
        select(MetricValueRow).where(MetricValueRow.run_id == run_id).order_by(MetricValueRow.id)
    ):
        out.setdefault(m.query_id, {})[m.name] = MetricResult(
            name=m.name, value=m.value, error=m.error, version=m.version, details=m.details or {}
        )
    return out
