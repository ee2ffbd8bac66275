"""Reading and writing runs, per-query results, collections and test cases."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ragmeter.errors import InputError, RagmeterError
from ragmeter.models import (
    Document,
    EvalConfig,
    EvalDataset,
    EvalQuery,
    EvalRunResult,
    MetricSummary,
    QueryEvalResult,
)
from ragmeter.store import liveness
from ragmeter.store.engine import create_engine, public_url, resolve_url, upgrade

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine
    from sqlalchemy.orm import Session

# A running run owned by another host is declared dead when its heartbeat is older than this.
STALE_AFTER = timedelta(minutes=10)
# The owner refreshes its heartbeat at most this often while it writes results.
HEARTBEAT_EVERY = timedelta(seconds=15)


class DuplicateQueryError(RagmeterError):
    """A query of a run was written twice (the store refuses it: each query is evaluated once)."""


def utcnow() -> datetime:
    return datetime.now(UTC)


def _aware(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def new_run_id() -> str:
    return f"{utcnow():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


@dataclass
class ChunkRecord:
    """A chunk of an ingested document, as the built-in pipeline cut it."""

    chunk_id: str
    text: str
    position: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)


class Store:
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
            **_owner(),
        )
        with self._session() as session, session.begin():
            session.add(row)
        self._last_beat[row.id] = now
        return self._to_result(row, [])

    def claim_run(self, run_id: str) -> EvalRunResult:
        """Take over a run to resume it: refuses one that a live process still runs."""
        from ragmeter.store.schema import RunRow

        run_id = self.resolve_run_id(run_id)
        with self._session() as session, session.begin():
            row = session.get(RunRow, run_id, with_for_update=True)
            assert row is not None
            if row.status == "running" and _owner_alive(row) and row.pid != os.getpid():
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
        """Write one query's result the moment it is known (its own transaction)."""
        from sqlalchemy import exc, insert

        from ragmeter.store.schema import QueryResultRow

        latency = result.latency_ms.get("total")
        values = {
            "run_id": run_id,
            "query_id": result.query_id,
            "position": position,
            "status": result.status,
            "error": result.error,
            "latency_ms": latency,
            "result": result.model_dump(mode="json"),
            "completed_at": utcnow(),
        }
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(QueryResultRow).values(**values))
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
        from sqlalchemy import delete

        from ragmeter.store.schema import QueryResultRow

        with self.engine.begin() as conn:
            res = conn.execute(
                delete(QueryResultRow).where(
                    QueryResultRow.run_id == run_id, QueryResultRow.status == "failed"
                )
            )
            return int(res.rowcount or 0)

    def query_results(self, run_id: str) -> list[QueryEvalResult]:
        from sqlalchemy import select

        from ragmeter.store.schema import QueryResultRow

        with self.engine.connect() as conn:
            rows = conn.execute(
                select(QueryResultRow.result)
                .where(QueryResultRow.run_id == run_id)
                .order_by(QueryResultRow.position, QueryResultRow.id)
            )
            return [QueryEvalResult.model_validate(r[0]) for r in rows]

    def update_query_results(self, run_id: str, results: Iterable[QueryEvalResult]) -> None:
        """Rewrite stored results after run-level metrics (retrieval, semantic) were added to them."""
        from sqlalchemy import bindparam, update

        from ragmeter.store.schema import QueryResultRow

        params = [
            {"b_run": run_id, "b_qid": r.query_id, "b_result": r.model_dump(mode="json")} for r in results
        ]
        if not params:
            return
        stmt = (
            update(QueryResultRow)
            .where(QueryResultRow.run_id == bindparam("b_run"), QueryResultRow.query_id == bindparam("b_qid"))
            .values(result=bindparam("b_result"))
        )
        with self.engine.begin() as conn:
            conn.execute(stmt, params)

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
        return self._to_result(row, per_query)

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
        return [self._to_result(r, []) for r in rows]

    def delete_run(self, run_id: str, *, force: bool = False) -> str:
        """Delete a run and its results. A run that a live process still runs is refused unless `force`
        (deleting it under the process would kill that run with a misleading error)."""
        from sqlalchemy import delete

        from ragmeter.store.schema import QueryResultRow, RunRow

        run_id = self.resolve_run_id(run_id)
        if not force:
            with self._session() as session:
                row = session.get(RunRow, run_id)
                live = row is not None and row.status == "running" and _owner_alive(row)
                if live and row is not None and row.pid != os.getpid():
                    raise InputError(
                        f"run {run_id} is still running (pid {row.pid} on {row.host}): stop it first, "
                        "or delete it anyway with --force",
                        source="runs delete",
                    )
        with self.engine.begin() as conn:
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

    def _to_result(self, row: Any, per_query: list[QueryEvalResult]) -> EvalRunResult:
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
        )

    # ------------------------------------------------------- collections

    def _collection(self, session: Session, name: str, *, create: bool = False) -> Any:
        from sqlalchemy import select

        from ragmeter.store.schema import Collection

        row = session.scalars(select(Collection).where(Collection.name == name)).first()
        if row is None:
            if not create:
                raise InputError(f"no collection {name!r} in {self.url}", source="--collection")
            row = Collection(name=name, created_at=utcnow(), meta={})
            session.add(row)
            session.flush()
        return row

    def add_documents(
        self,
        collection: str,
        documents: Sequence[tuple[Document, Sequence[ChunkRecord]]],
        *,
        source: str | None = None,
        replace: bool = True,
    ) -> tuple[int, int]:
        """Store documents with their chunks in a collection (created if new).

        A document id already in the collection is replaced (with its chunks) when replace is true,
        else it is an input error. Returns (documents, chunks) written.
        """
        from sqlalchemy import select

        from ragmeter.store.schema import Chunk
        from ragmeter.store.schema import Document as DocumentRow

        n_docs = n_chunks = 0
        with self._session() as session, session.begin():
            coll = self._collection(session, collection, create=True)
            ids = [d.doc_id for d, _ in documents]
            existing = {
                r.doc_id: r
                for r in session.scalars(
                    select(DocumentRow).where(
                        DocumentRow.collection_id == coll.id, DocumentRow.doc_id.in_(ids)
                    )
                )
            }
            if existing and not replace:
                raise InputError(f"documents already in {collection!r}: {', '.join(sorted(existing)[:5])}")
            for row in existing.values():
                session.delete(row)
            session.flush()
            for doc, chunks in documents:
                drow = DocumentRow(
                    collection_id=coll.id,
                    doc_id=doc.doc_id,
                    title=doc.title,
                    text=doc.text,
                    source=source,
                    meta=dict(doc.metadata),
                )
                session.add(drow)
                session.flush()
                n_docs += 1
                for chunk in chunks:
                    session.add(
                        Chunk(
                            collection_id=coll.id,
                            document_id=drow.id,
                            chunk_id=chunk.chunk_id,
                            position=chunk.position,
                            text=chunk.text,
                            meta=dict(chunk.metadata),
                        )
                    )
                    n_chunks += 1
        return n_docs, n_chunks

    def list_collections(self) -> list[dict[str, Any]]:
        from sqlalchemy import func, select

        from ragmeter.store.schema import Chunk, Collection, TestCase
        from ragmeter.store.schema import Document as DocumentRow

        out = []
        with self._session() as session:
            for coll in session.scalars(select(Collection).order_by(Collection.name)):
                counts = {}
                for label, model in (("documents", DocumentRow), ("chunks", Chunk), ("test_cases", TestCase)):
                    counts[label] = session.scalar(
                        select(func.count()).select_from(model).where(model.collection_id == coll.id)
                    )
                out.append({"name": coll.name, "created_at": _aware(coll.created_at), **counts})
        return out

    def chunks(self, collection: str) -> list[Document]:
        """The chunks of a collection as Documents (doc_id = chunk id, metadata.document = source doc)."""
        from sqlalchemy import select

        from ragmeter.store.schema import Chunk
        from ragmeter.store.schema import Document as DocumentRow

        with self._session() as session:
            coll = self._collection(session, collection)
            rows = session.execute(
                select(Chunk, DocumentRow.doc_id, DocumentRow.title)
                .join(DocumentRow, Chunk.document_id == DocumentRow.id)
                .where(Chunk.collection_id == coll.id)
                .order_by(Chunk.id)
            )
            return [
                Document(doc_id=c.chunk_id, text=c.text, title=title, metadata={**c.meta, "document": doc_id})
                for c, doc_id, title in rows
            ]

    # -------------------------------------------------------- test cases

    def add_test_case(
        self,
        collection: str,
        question: str,
        *,
        case_id: str | None = None,
        ground_truth_answer: str | None = None,
        relevant_chunks: Sequence[str] = (),
        source: str = "manual",
        metadata: dict[str, Any] | None = None,
    ) -> str:
        from ragmeter.store.schema import TestCase

        if source not in ("manual", "synthetic"):
            raise InputError(f"test case source must be manual or synthetic, not {source!r}", source="source")
        if not question.strip():
            raise InputError("a test case needs a non-empty question", source="question")
        with self._session() as session, session.begin():
            coll = self._collection(session, collection)
            case = TestCase(
                collection_id=coll.id,
                case_id=case_id or f"tc-{uuid.uuid4().hex[:8]}",
                question=question,
                source=source,
                ground_truth_answer=ground_truth_answer,
                meta=dict(metadata or {}),
                created_at=utcnow(),
            )
            case.relevant_chunks = self._chunk_rows(session, coll.id, collection, relevant_chunks)
            session.add(case)
            try:
                session.flush()
            except Exception as exc:
                from sqlalchemy import exc as sa_exc

                if isinstance(exc, sa_exc.IntegrityError):
                    raise InputError(
                        f"test case {case.case_id!r} already exists in {collection!r}", source="--id"
                    ) from exc
                raise
            return case.case_id

    def _chunk_rows(self, session: Session, coll_id: int, collection: str, ids: Sequence[str]) -> list[Any]:
        from sqlalchemy import select

        from ragmeter.store.schema import Chunk

        if not ids:
            return []
        rows = {
            c.chunk_id: c
            for c in session.scalars(
                select(Chunk).where(Chunk.collection_id == coll_id, Chunk.chunk_id.in_(list(ids)))
            )
        }
        missing = [i for i in ids if i not in rows]
        if missing:
            raise InputError(f"no chunk {missing[0]!r} in collection {collection!r}", source="--chunk")
        return [rows[i] for i in dict.fromkeys(ids)]

    def set_ground_truth(
        self,
        collection: str,
        case_id: str,
        *,
        answer: str | None = None,
        relevant_chunks: Sequence[str] | None = None,
        add_chunks: Sequence[str] = (),
    ) -> EvalQuery:
        """Set a test case's ground-truth answer and/or relevant chunks (replace, or add to them)."""
        from sqlalchemy import select

        from ragmeter.store.schema import TestCase

        with self._session() as session, session.begin():
            coll = self._collection(session, collection)
            case = session.scalars(
                select(TestCase).where(TestCase.collection_id == coll.id, TestCase.case_id == case_id)
            ).first()
            if case is None:
                raise InputError(f"no test case {case_id!r} in collection {collection!r}", source="test case")
            if answer is not None:
                case.ground_truth_answer = answer
            if relevant_chunks is not None:
                case.relevant_chunks = self._chunk_rows(session, coll.id, collection, relevant_chunks)
            if add_chunks:
                have = {c.chunk_id for c in case.relevant_chunks}
                extra = [c for c in add_chunks if c not in have]
                case.relevant_chunks = [
                    *case.relevant_chunks,
                    *self._chunk_rows(session, coll.id, collection, extra),
                ]
            session.flush()
            return _case_to_query(case)

    def test_cases(self, collection: str) -> list[EvalQuery]:
        from sqlalchemy import select
        from sqlalchemy.orm import selectinload

        from ragmeter.store.schema import TestCase

        with self._session() as session:
            coll = self._collection(session, collection)
            cases = session.scalars(
                select(TestCase)
                .where(TestCase.collection_id == coll.id)
                .options(selectinload(TestCase.relevant_chunks))
                .order_by(TestCase.id)
            )
            return [_case_to_query(c) for c in cases]

    def dataset(self, collection: str) -> EvalDataset:
        """A collection's test cases with its chunks as the corpus: something `ragmeter run` can evaluate."""
        queries = self.test_cases(collection)
        if not queries:
            raise InputError(
                f"collection {collection!r} has no test cases; add some with `ragmeter testcases add`",
                source="--dataset",
            )
        return EvalDataset(
            name=f"store:{collection}",
            queries=queries,
            corpus=self.chunks(collection),
            metadata={"store": self.url, "collection": collection},
        )


def _case_to_query(case: Any) -> EvalQuery:
    return EvalQuery(
        query_id=case.case_id,
        question=case.question,
        ground_truth_answer=case.ground_truth_answer,
        relevant_doc_ids=[c.chunk_id for c in sorted(case.relevant_chunks, key=lambda c: c.id)],
        metadata={**case.meta, "source": case.source},
    )


def _owner() -> dict[str, Any]:
    pid = os.getpid()
    return {"host": liveness.hostname(), "pid": pid, "pid_token": liveness.pid_token(pid)}


def _owner_alive(row: Any) -> bool:
    if row.host == liveness.hostname():
        return liveness.process_alive(row.pid, row.pid_token)
    beat = _aware(row.heartbeat_at)
    return beat is not None and utcnow() - beat <= STALE_AFTER


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
