"""Reading and writing runs: the run row with its record, per-query outputs, and metric values (per query,
each stored once as its own row). Collections and test cases are in collections.py."""

from __future__ import annotations

import os
import uuid
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ragmeter.errors import InputError, RagmeterError
from ragmeter.models import EvalConfig, EvalRunResult, MetricSummary, QueryEvalResult
from ragmeter.store import liveness
from ragmeter.store.collections import ChunkRecord as ChunkRecord
from ragmeter.store.collections import CollectionStore
from ragmeter.store.counts import stored_counts
from ragmeter.store.engine import create_engine, public_url, resolve_url, upgrade
from ragmeter.store.liveness import STALE_AFTER, owner_alive, utcnow
from ragmeter.store.liveness import aware as _aware
from ragmeter.store.liveness import owner as _owner
from ragmeter.store.runrows import run_result
from ragmeter.store.values import MetricValueStore, metric_rows, metric_values

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine
    from sqlalchemy.orm import Session

# A running run owned by another host is declared dead when its heartbeat is older than this.
# The owner refreshes its heartbeat at most this often while it writes results.
HEARTBEAT_EVERY = timedelta(seconds=15)


class DuplicateQueryError(RagmeterError):
    """A query of a run was written twice (the store refuses it: each query is evaluated once)."""


def new_run_id() -> str:
    return f"{utcnow():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


class Store(CollectionStore, MetricValueStore):
    """One database (SQLite file or PostgreSQL). Open it with open_store()."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.url = public_url(engine.url.render_as_string(hide_password=False))
        self._last_beat: dict[str, datetime] = {}

    @property
    def dialect(self) -> str:
        return str(self.engine.dialect.name)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _session(self) -> Session:
        from sqlalchemy.orm import Session

        return Session(self.engine, expire_on_commit=False)

    # ---------------------------------------------------------------- runs

    def create_run(
        self,
        config: EvalConfig,
        *,
        name: str = "",
        dataset_name: str = "",
        dataset_hash: str | None = None,
        n_dataset_queries: int = 0,
        versions: dict[str, str] | None = None,
        run_id: str | None = None,
        record: dict[str, Any] | None = None,
    ) -> EvalRunResult:
        from ragmeter.store.schema import RunRow

        now = utcnow()
        row = RunRow(
            id=run_id or new_run_id(),
            name=name,
            status="running",
            config=config.model_dump(mode="json"),
            dataset_name=dataset_name,
            dataset_hash=dataset_hash,
            n_dataset_queries=n_dataset_queries,
            versions=dict(versions or {}),
            seed=config.seed,
            started_at=now,
            heartbeat_at=now,
            aggregate={},
            summary={},
            n_queries=0,
            n_failed=0,
            record=record,
            **_owner(),
        )
        with self._session() as session, session.begin():
            session.add(row)
        self._last_beat[row.id] = now
        return run_result(row, [])

    def claim_run(self, run_id: str) -> EvalRunResult:
        """Take over a run to resume it: refuses one that a live process still runs."""
        from ragmeter.store.schema import RunRow

        run_id = self.resolve_run_id(run_id)
        with self._session() as session, session.begin():
            row = session.get(RunRow, run_id, with_for_update=True)
            assert row is not None
            if row.status == "running" and owner_alive(row) and row.pid != os.getpid():
                raise InputError(
                    f"run {run_id} is still running (pid {row.pid} on {row.host}); "
                    "stop it first or wait for it to finish",
                    source="--resume",
                )
            row.status = "running"
            row.error = None
            row.completed_at = None
            row.heartbeat_at = utcnow()
            for key, value in _owner().items():
                setattr(row, key, value)
        return self.get_run(run_id, with_queries=False)

    def heartbeat(self, run_id: str, *, force: bool = False) -> None:
        from sqlalchemy import update

        from ragmeter.store.schema import RunRow

        now = utcnow()
        last = self._last_beat.get(run_id)
        if not force and last is not None and now - last < HEARTBEAT_EVERY:
            return
        with self.engine.begin() as conn:
            conn.execute(update(RunRow).where(RunRow.id == run_id).values(heartbeat_at=now))
        self._last_beat[run_id] = now

    def add_query_result(self, run_id: str, result: QueryEvalResult, *, position: int = 0) -> None:
        """Write one query's outputs and its per-query metric values the moment they are known (one
        transaction: a query's repeats are stored together or not at all). The outputs row holds no metric:
        each value (each repeat of a repeated judge metric) is its own row, written once."""
        from sqlalchemy import exc, insert

        from ragmeter.store.schema import MetricValueRow, QueryResultRow

        values = {
            "run_id": run_id,
            "query_id": result.query_id,
            "position": position,
            "status": result.status,
            "error": result.error,
            "latency_ms": result.latency_ms.get("total"),
            "result": result.model_copy(update={"metrics": {}, "repeats": {}}).model_dump(mode="json"),
            "completed_at": utcnow(),
        }
        rows = metric_rows(run_id, {result.query_id: result.metrics}, {result.query_id: result.repeats})
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(QueryResultRow).values(**values))
                if rows:
                    conn.execute(insert(MetricValueRow), rows)
        except exc.IntegrityError as err:
            raise DuplicateQueryError(
                f"query {result.query_id!r} of run {run_id} is already stored (or the run is gone)"
            ) from err
        self.heartbeat(run_id)

    def finished_query_ids(self, run_id: str) -> set[str]:
        from sqlalchemy import select

        from ragmeter.store.schema import QueryResultRow

        with self.engine.connect() as conn:
            rows = conn.execute(select(QueryResultRow.query_id).where(QueryResultRow.run_id == run_id))
            return {r[0] for r in rows}

    def delete_failed_results(self, run_id: str) -> int:
        """Forget the failed queries of a run so that a resume evaluates them again."""
        from sqlalchemy import delete, select

        from ragmeter.store.schema import MetricValueRow, QueryResultRow

        failed = select(QueryResultRow.query_id).where(
            QueryResultRow.run_id == run_id, QueryResultRow.status == "failed"
        )
        with self.engine.begin() as conn:
            conn.execute(
                delete(MetricValueRow).where(
                    MetricValueRow.run_id == run_id, MetricValueRow.query_id.in_(failed.scalar_subquery())
                )
            )
            res = conn.execute(
                delete(QueryResultRow).where(
                    QueryResultRow.run_id == run_id, QueryResultRow.status == "failed"
                )
            )
            return int(res.rowcount or 0)

    def query_results(self, run_id: str) -> list[QueryEvalResult]:
        """Outputs with their metric values (rows of metric_values; a run stored before them kept its
        values inside the outputs row, which are read as they are)."""
        from sqlalchemy import select

        from ragmeter.store.schema import QueryResultRow

        with self.engine.connect() as conn:
            rows = conn.execute(
                select(QueryResultRow.result)
                .where(QueryResultRow.run_id == run_id)
                .order_by(QueryResultRow.position, QueryResultRow.id)
            )
            results = [QueryEvalResult.model_validate(r[0]) for r in rows]
            metrics = metric_values(conn, run_id)
        return [
            r.model_copy(
                update={
                    "metrics": {**r.metrics, **metrics[r.query_id][0]},
                    "repeats": {**r.repeats, **metrics[r.query_id][1]},
                }
            )
            if r.query_id in metrics
            else r
            for r in results
        ]

    def finish_run(
        self,
        run_id: str,
        *,
        status: str,
        aggregate: dict[str, MetricSummary] | None = None,
        n_queries: int | None = None,
        n_failed: int | None = None,
        summary: dict[str, Any] | None = None,
        error: str | None = None,
        versions: dict[str, str] | None = None,
    ) -> None:
        from ragmeter.store.schema import RunRow

        with self._session() as session, session.begin():
            row = session.get(RunRow, run_id)
            if row is None:
                raise InputError(f"no run {run_id!r} in {self.url}")
            row.status = status
            row.completed_at = utcnow()
            row.heartbeat_at = row.completed_at
            row.error = error
            if aggregate is not None:
                row.aggregate = {k: v.model_dump(mode="json") for k, v in aggregate.items()}
            if n_queries is not None:
                row.n_queries = n_queries
            if n_failed is not None:
                row.n_failed = n_failed
            if summary is not None:
                row.summary = summary
            if versions is not None:
                row.versions = dict(versions)

    def fail_run(self, run_id: str, error: str) -> None:
        self.finish_run(run_id, status="failed", error=error)

    def resolve_run_id(self, run_id: str) -> str:
        """An exact run id, or a unique prefix of one."""
        from sqlalchemy import select

        from ragmeter.store.schema import RunRow

        with self.engine.connect() as conn:
            if conn.execute(select(RunRow.id).where(RunRow.id == run_id)).first() is not None:
                return run_id
            escaped = run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            matches = [
                r[0]
                for r in conn.execute(select(RunRow.id).where(RunRow.id.like(escaped + "%", escape="\\")))
            ]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise InputError(f"no run {run_id!r} in {self.url}", source="run id")
        raise InputError(f"run id {run_id!r} is ambiguous: {', '.join(sorted(matches)[:5])}", source="run id")

    def get_run(self, run_id: str, *, with_queries: bool = True) -> EvalRunResult:
        from ragmeter.store.schema import RunRow

        run_id = self.resolve_run_id(run_id)
        with self._session() as session:
            row = session.get(RunRow, run_id)
            assert row is not None
        per_query = self.query_results(run_id) if with_queries else []
        return run_result(row, per_query)

    def list_runs(self, *, limit: int | None = None, status: str | None = None) -> list[EvalRunResult]:
        from sqlalchemy import select

        from ragmeter.store.schema import RunRow

        stmt = select(RunRow).order_by(RunRow.started_at.desc(), RunRow.id.desc())
        if status:
            stmt = stmt.where(RunRow.status == status)
        if limit:
            stmt = stmt.limit(limit)
        with self._session() as session:
            rows = list(session.scalars(stmt))
            counts = stored_counts(session, [r.id for r in rows if r.status != "completed"])
        out = [run_result(r, []) for r in rows]
        for r in out:  # an unfinished run's row holds no count yet: its stored results do
            if r.run_id in counts:
                r.n_queries, r.n_failed = counts[r.run_id]
        return out

    def delete_run(self, run_id: str, *, force: bool = False) -> str:
        """Delete a run and its results. A run that a live process still runs is refused unless `force`
        (deleting it under the process would kill that run with a misleading error)."""
        from sqlalchemy import delete

        from ragmeter.store.schema import MetricValueRow, QueryResultRow, RunRow

        run_id = self.resolve_run_id(run_id)
        if not force:
            with self._session() as session:
                row = session.get(RunRow, run_id)
                live = row is not None and row.status == "running" and owner_alive(row)
                if live and row is not None and row.pid != os.getpid():
                    raise InputError(
                        f"run {run_id} is still running (pid {row.pid} on {row.host}): stop it first, "
                        "or delete it anyway with --force",
                        source="runs delete",
                    )
        with self.engine.begin() as conn:
            conn.execute(delete(MetricValueRow).where(MetricValueRow.run_id == run_id))
            conn.execute(delete(QueryResultRow).where(QueryResultRow.run_id == run_id))
            conn.execute(delete(RunRow).where(RunRow.id == run_id))
        return run_id

    def sweep_stale_runs(self, *, now: datetime | None = None) -> list[str]:
        """Mark failed every "running" run whose owning process is gone. Returns their ids."""
        from sqlalchemy import select

        from ragmeter.store.schema import RunRow

        now = now or utcnow()
        host = liveness.hostname()
        swept: list[str] = []
        with self._session() as session, session.begin():
            for row in session.scalars(select(RunRow).where(RunRow.status == "running")):
                if row.host == host:
                    dead = not liveness.process_alive(row.pid, row.pid_token)
                    why = f"the process that ran it (pid {row.pid} on {row.host}) is gone"
                else:
                    beat = _aware(row.heartbeat_at) or _aware(row.started_at)
                    dead = beat is None or now - beat > STALE_AFTER
                    why = f"no heartbeat from {row.host} (pid {row.pid}) since {beat:%Y-%m-%d %H:%M:%S} UTC"
                if dead:
                    row.status = "failed"
                    row.completed_at = now
                    row.error = f"interrupted: {why}; resume it with `ragmeter run --resume {row.id}`"
                    swept.append(row.id)
        return swept


def open_store(url: str | None = None, *, sweep: bool = True) -> Store:
    """Open (creating and migrating as needed) the store at url / $RAGMETER_DB / .ragmeter/ragmeter.db.

    With sweep, runs left "running" by a process that is gone are marked failed (resumable).
    """
    engine = create_engine(resolve_url(url))
    try:
        upgrade(engine)
    except Exception as exc:
        from sqlalchemy.exc import SQLAlchemyError

        engine.dispose()
        if isinstance(exc, SQLAlchemyError):
            raise InputError(
                f"cannot open the store: {exc.__class__.__name__}: {str(exc).splitlines()[0]}",
                source=public_url(resolve_url(url)),
            ) from exc
        raise
    store = Store(engine)
    if sweep:
        store.sweep_stale_runs()
    return store
