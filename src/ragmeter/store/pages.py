"""Reading a store for people: opening it read-only (no migration, no stale-run sweep) and reading a run's
query results one page at a time, sorted and filtered in SQL, so that a 10,000-query run is never loaded
whole to show fifty rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter.errors import InputError
from ragmeter.models import QueryEvalResult

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

    from ragmeter.store.api import Store

# Columns of query_results a page may sort on (anything else names a metric).
SORT_COLUMNS = ("position", "query_id", "status", "latency_ms")


def schema_revisions(engine: Engine) -> tuple[str | None, str]:
    """(the store's Alembic revision or None when it has none, this ragmeter's newest revision)."""
    from alembic.script import ScriptDirectory
    from sqlalchemy import inspect, text

    from ragmeter.store.engine import alembic_config

    head = ScriptDirectory.from_config(alembic_config()).get_current_head() or ""
    with engine.connect() as conn:
        tables = set(inspect(conn).get_table_names())
        if "alembic_version" not in tables or "runs" not in tables:
            return None, head
        row = conn.execute(text("SELECT version_num FROM alembic_version")).first()
    return (str(row[0]) if row else None), head


def open_store_readonly(url: str | None = None) -> Store:
    """The store at url, opened as it is: never created, migrated or swept. A file that is not a ragmeter
    store, or a store of another schema revision, is refused with one line."""
    import os

    from sqlalchemy.exc import SQLAlchemyError

    from ragmeter.store.api import Store
    from ragmeter.store.engine import DEFAULT_PATH, create_engine, public_url

    raw = url or os.environ.get("RAGMETER_DB") or str(DEFAULT_PATH)
    if "://" not in raw or raw.startswith("sqlite:///"):
        path = Path(raw.removeprefix("sqlite:///")).expanduser()
        if not path.is_file():
            raise InputError(f"no store at {path}", source="--db")
        raw = f"sqlite:///{path}"
    elif raw.startswith(("postgresql://", "postgres://")):
        raw = "postgresql+psycopg://" + raw.split("://", 1)[1]
    engine = create_engine(raw)
    shown = public_url(raw)
    try:
        current, head = schema_revisions(engine)
    except SQLAlchemyError as exc:
        engine.dispose()
        orig = getattr(exc, "orig", None)
        first = (str(orig if orig is not None else exc).splitlines() or [""])[0]
        raise InputError(f"not a ragmeter store ({first})", source=shown) from None
    if current is None:
        engine.dispose()
        raise InputError("not a ragmeter store (no runs table or schema revision)", source=shown)
    if current != head:
        engine.dispose()
        raise InputError(
            f"the store's schema is revision {current}, this ragmeter reads {head}: any ragmeter command that "
            "writes (e.g. `ragmeter runs list`) migrates it",
            source=shown,
        )
    return Store(engine)


@dataclass
class QueryFilter:
    """What a page of queries shows: a sort key (a column of SORT_COLUMNS or a metric name), and filters on
    status, query id text, one metric's range, and that metric's null values with a reason."""

    sort: str = "position"
    descending: bool = False
    status: str | None = None
    text: str | None = None
    metric: str | None = None
    low: float | None = None
    high: float | None = None
    null_only: bool = False
    reason: str | None = None

    def plain(self) -> bool:
        """No filter: every query of the run is on some page."""
        return not (self.status or self.text or (self.metric and self.narrows_metric()))

    def narrows_metric(self) -> bool:
        return self.low is not None or self.high is not None or self.null_only or bool(self.reason)


@dataclass
class QueryPage:
    total: int  # queries matching the filter
    offset: int
    limit: int
    rows: list[QueryEvalResult] = field(default_factory=list)


def _has_repeats(conn: Connection, run_id: str) -> bool:
    """Whether the run judged in repeats (its record says so; runs from before records never did)."""
    from sqlalchemy import select

    from ragmeter.store.schema import RunRow

    record = conn.execute(select(RunRow.record).where(RunRow.id == run_id)).scalar_one_or_none()
    return int((record or {}).get("repeat") or 1) > 1


def _value_table(run_id: str, repeated: bool, name: str) -> Any:
    """metric_values as a table of one value per (run, query, metric) under alias `name`: the table itself,
    or for a run judged in repeats the mean over each metric's repeats with a value (SQL's AVG skips nulls,
    as mean_of_repeats does) and an error when none has one."""
    from sqlalchemy import func, select

    from ragmeter.store.schema import MetricValueRow

    mv = MetricValueRow.__table__
    if not repeated:
        return mv.alias(name)
    grouped = select(
        mv.c.run_id,
        mv.c.query_id,
        mv.c.name,
        func.avg(mv.c.value).label("value"),
        func.min(mv.c.error).label("error"),
    ).where(mv.c.run_id == run_id)
    return grouped.group_by(mv.c.run_id, mv.c.query_id, mv.c.name).subquery(name)


def _filtered(run_id: str, flt: QueryFilter, repeated: bool = False) -> Any:
    from sqlalchemy import and_, select

    from ragmeter.store.schema import QueryResultRow

    qr = QueryResultRow.__table__
    stmt = select(qr.c.id, qr.c.query_id, qr.c.position, qr.c.status, qr.c.latency_ms).where(
        qr.c.run_id == run_id
    )
    if flt.status:
        stmt = stmt.where(qr.c.status == flt.status)
    if flt.text:
        escaped = flt.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        stmt = stmt.where(qr.c.query_id.like(f"%{escaped}%", escape="\\"))
    if flt.metric and flt.narrows_metric():
        f = _value_table(run_id, repeated, "f")
        on = and_(f.c.run_id == qr.c.run_id, f.c.query_id == qr.c.query_id, f.c.name == flt.metric)
        stmt = stmt.join(f, on)
        if flt.null_only or flt.reason:
            stmt = stmt.where(f.c.value.is_(None))
        if flt.reason:
            escaped = flt.reason.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            stmt = stmt.where(f.c.error.like(f"%{escaped}%", escape="\\"))
        if flt.low is not None:
            stmt = stmt.where(f.c.value >= flt.low)
        if flt.high is not None:
            stmt = stmt.where(f.c.value <= flt.high)
    return stmt


def query_page(
    engine: Engine, run_id: str, flt: QueryFilter, *, offset: int = 0, limit: int = 50
) -> QueryPage:
    """One page of a run's query results (outputs and metric values), in SQL order and filter.

    Sorted by a metric, the queries with a value come first in value order (read from the index on
    (run, metric, value)), then those whose value is null or missing, in run order."""
    from sqlalchemy import and_, func, select

    from ragmeter.store.schema import MetricValueRow, QueryResultRow

    qr = QueryResultRow.__table__
    offset, limit = max(0, offset), max(1, limit)
    with engine.connect() as conn:
        repeated = _has_repeats(conn, run_id)
        stmt = _filtered(run_id, flt, repeated)
        total = int(conn.execute(select(func.count()).select_from(stmt.subquery())).scalar_one())
        if flt.sort in SORT_COLUMNS:
            col = qr.c[flt.sort]
            order = [col.is_(None), col.desc() if flt.descending else col.asc(), qr.c.position, qr.c.id]
            ids = [
                (r.id, r.query_id) for r in conn.execute(stmt.order_by(*order).offset(offset).limit(limit))
            ]
        else:
            s = _value_table(run_id, repeated, "s")
            on = and_(s.c.run_id == qr.c.run_id, s.c.query_id == qr.c.query_id, s.c.name == flt.sort)
            valued = stmt.join(s, on).where(s.c.value.is_not(None))
            by_value = s.c.value.desc() if flt.descending else s.c.value.asc()
            page = valued.order_by(by_value, qr.c.position, qr.c.id).offset(offset).limit(limit)
            ids = [(r.id, r.query_id) for r in conn.execute(page)]
            if len(ids) < limit:  # past the valued queries: the null or missing ones follow in run order
                if ids:
                    n_valued = offset + len(ids)
                elif flt.plain() and not repeated:  # counted on the (run, metric, value) index alone
                    mv = MetricValueRow.__table__
                    where = (mv.c.run_id == run_id, mv.c.name == flt.sort, mv.c.value.is_not(None))
                    n_valued = int(conn.execute(select(func.count()).where(*where)).scalar_one())
                else:
                    n_valued = int(
                        conn.execute(select(func.count()).select_from(valued.subquery())).scalar_one()
                    )
                rest = stmt.outerjoin(s, on).where(s.c.value.is_(None)).order_by(qr.c.position, qr.c.id)
                rest = rest.offset(max(0, offset - n_valued)).limit(limit - len(ids))
                ids += [(r.id, r.query_id) for r in conn.execute(rest)]
        rows = _results(conn, run_id, ids)
    return QueryPage(total=total, offset=offset, limit=limit, rows=rows)


def _results(conn: Connection, run_id: str, ids: list[tuple[int, str]]) -> list[QueryEvalResult]:
    from sqlalchemy import select

    from ragmeter.store.schema import MetricValueRow, QueryResultRow
    from ragmeter.store.values import by_query, query_metrics

    if not ids:
        return []
    outputs = {
        r.id: QueryEvalResult.model_validate(r.result)
        for r in conn.execute(
            select(QueryResultRow.id, QueryResultRow.result).where(QueryResultRow.id.in_([i for i, _ in ids]))
        )
    }
    mv = select(MetricValueRow).where(
        MetricValueRow.run_id == run_id, MetricValueRow.query_id.in_([q for _, q in ids])
    )
    # Rows written by the store itself: no validation needed to read them back.
    values = by_query(conn.execute(mv.order_by(MetricValueRow.id)), trusted=True)
    out = []
    for row_id, qid in ids:
        r = outputs[row_id]
        metrics, repeats = query_metrics(values.get(qid, {}))
        out.append(
            r.model_copy(update={"metrics": {**r.metrics, **metrics}, "repeats": {**r.repeats, **repeats}})
        )
    return out


def query_result(engine: Engine, run_id: str, query_id: str) -> QueryEvalResult | None:
    """One query of a run with its metric values, None when the run has no such query."""
    from sqlalchemy import select

    from ragmeter.store.schema import QueryResultRow

    with engine.connect() as conn:
        row = conn.execute(
            select(QueryResultRow.id).where(
                QueryResultRow.run_id == run_id, QueryResultRow.query_id == query_id
            )
        ).first()
        if row is None:
            return None
        return _results(conn, run_id, [(int(row[0]), query_id)])[0]


def run_metric_names(engine: Engine, run_id: str) -> list[str]:
    """The metrics with per-query values in a run."""
    from sqlalchemy import select

    from ragmeter.store.schema import MetricValueRow

    with engine.connect() as conn:
        stmt = select(MetricValueRow.name).where(MetricValueRow.run_id == run_id).distinct()
        return sorted(r[0] for r in conn.execute(stmt))


def latencies(engine: Engine, run_id: str) -> list[float]:
    """The total latency (ms) of each query of a run that has one, ascending."""
    from sqlalchemy import select

    from ragmeter.store.schema import QueryResultRow

    with engine.connect() as conn:
        stmt = select(QueryResultRow.latency_ms).where(
            QueryResultRow.run_id == run_id, QueryResultRow.latency_ms.is_not(None)
        )
        return sorted(float(r[0]) for r in conn.execute(stmt) if r[0] is not None)
