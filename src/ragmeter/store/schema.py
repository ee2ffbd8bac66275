"""SQLAlchemy 2 tables of the store. Changing them needs a new Alembic revision in migrations/versions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    pass


def _owned(back_populates: str) -> Any:
    """The rows that belong to this one and go with it (the database cascades the delete too)."""
    return relationship(back_populates=back_populates, cascade="all, delete-orphan", passive_deletes=True)


class _InCollection:
    """A row of one collection (a document, a chunk, a test case), deleted with it. Its columns lead the table."""

    id: Mapped[int] = mapped_column(Integer, primary_key=True, sort_order=-2)
    collection_id: Mapped[int] = mapped_column(
        ForeignKey("collections.id", ondelete="CASCADE"), index=True, sort_order=-1
    )


class Collection(Base):
    __tablename__ = "collections"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)

    documents: Mapped[list[Document]] = _owned(back_populates="collection")


class Document(_InCollection, Base):
    __tablename__ = "documents"
    __table_args__ = (UniqueConstraint("collection_id", "doc_id", name="uq_documents_collection_doc"),)

    doc_id: Mapped[str] = mapped_column(String(500))
    title: Mapped[str] = mapped_column(Text, default="")
    text: Mapped[str] = mapped_column(Text)
    source: Mapped[str | None] = mapped_column(Text, nullable=True)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)

    collection: Mapped[Collection] = relationship(back_populates="documents")
    chunks: Mapped[list[Chunk]] = _owned(back_populates="document")


class Chunk(_InCollection, Base):
    __tablename__ = "chunks"
    __table_args__ = (UniqueConstraint("collection_id", "chunk_id", name="uq_chunks_collection_chunk"),)

    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"), index=True)
    chunk_id: Mapped[str] = mapped_column(String(500))
    position: Mapped[int] = mapped_column(Integer, default=0)
    text: Mapped[str] = mapped_column(Text)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)

    document: Mapped[Document] = relationship(back_populates="chunks")


test_case_chunks = Table(
    "test_case_chunks",
    Base.metadata,
    Column("test_case_id", ForeignKey("test_cases.id", ondelete="CASCADE"), primary_key=True),
    Column("chunk_id", ForeignKey("chunks.id", ondelete="CASCADE"), primary_key=True),
    Column("grade", Integer, nullable=False, default=1),
)


class TestCase(_InCollection, Base):
    __tablename__ = "test_cases"
    __table_args__ = (UniqueConstraint("collection_id", "case_id", name="uq_test_cases_collection_case"),)

    case_id: Mapped[str] = mapped_column(String(200))
    question: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(String(20), default="manual")  # manual | synthetic
    ground_truth_answer: Mapped[str | None] = mapped_column(Text, nullable=True)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    relevant_chunks: Mapped[list[Chunk]] = relationship(secondary=test_case_chunks, order_by=Chunk.id)


class RunRow(Base):
    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    status: Mapped[str] = mapped_column(String(20), index=True)  # running | completed | failed
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    dataset_name: Mapped[str] = mapped_column(String(500), default="")
    dataset_hash: Mapped[str | None] = mapped_column(String(80), nullable=True)
    n_dataset_queries: Mapped[int] = mapped_column(Integer, default=0)
    versions: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    seed: Mapped[int] = mapped_column(Integer, default=0)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    completed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # Liveness of the process that owns a running run: host + pid + the pid's start token, and a heartbeat
    # for owners on other hosts. A run whose owner is gone is marked failed on the next open.
    host: Mapped[str] = mapped_column(String(255), default="")
    pid: Mapped[int] = mapped_column(Integer, default=0)
    pid_token: Mapped[str] = mapped_column(String(64), default="")
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    aggregate: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    summary: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    n_queries: Mapped[int] = mapped_column(Integer, default=0)
    n_failed: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # The run record (ragmeter.records.RunRecord): what rebuilds the run. None for runs stored before 0002.
    record: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)


class QueryResultRow(Base):
    __tablename__ = "query_results"
    # One row per (run, query): the database itself refuses a second evaluation of a query.
    __table_args__ = (
        UniqueConstraint("run_id", "query_id", name="uq_query_results_run_query"),
        Index("ix_query_results_run_position", "run_id", "position"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    query_id: Mapped[str] = mapped_column(String(500))
    position: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(20))  # ok | failed
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    latency_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    result: Mapped[dict[str, Any]] = mapped_column(JSON)
    completed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class MetricValueRow(Base):
    """One metric value of one query of a run, stored once (per-query metrics as the query completes,
    run-level ones when the run is scored; a rescore replaces the rows it recomputes). A judge metric of a
    run with repeats (`run --repeat N`) has one row per repeat, `repeat` 0 to N - 1; every other value is
    repeat 0 (migration 0005)."""

    __tablename__ = "metric_values"
    __table_args__ = (
        UniqueConstraint(
            "run_id", "query_id", "name", "repeat", name="uq_metric_values_run_query_name_repeat"
        ),
        Index("ix_metric_values_run_name", "run_id", "name"),
        # Values of one metric of a run in order, from the index alone (the viewer's sorted pages).
        Index("ix_metric_values_run_name_value", "run_id", "name", "value", "query_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    query_id: Mapped[str] = mapped_column(String(500))
    name: Mapped[str] = mapped_column(String(200))
    value: Mapped[float | None] = mapped_column(Float, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    version: Mapped[str | None] = mapped_column(String(200), nullable=True)
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    repeat: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class LabelRow(Base):
    """One label a person gave (appended; the newest of an item is its current value). See migration 0004."""

    __tablename__ = "labels"
    __table_args__ = (
        UniqueConstraint("item_key", "version", name="uq_labels_item_version"),
        Index("ix_labels_run", "run_id", "query_id"),
        Index("ix_labels_dataset", "dataset_hash", "query_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_key: Mapped[str] = mapped_column(String(64))
    version: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(20))  # relevance | answer
    dataset_hash: Mapped[str | None] = mapped_column(String(80), nullable=True)
    run_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    query_id: Mapped[str] = mapped_column(String(500))
    doc_id: Mapped[str | None] = mapped_column(String(500), nullable=True)
    metric: Mapped[str | None] = mapped_column(String(200), nullable=True)
    answer_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    value: Mapped[float] = mapped_column(Float)
    annotator: Mapped[str] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(20))  # queue | browse | import
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    nugget_id: Mapped[str | None] = mapped_column(String(200), nullable=True)  # migration 0006
    nugget_set: Mapped[str | None] = mapped_column(String(40), nullable=True)


class NuggetSetVersionRow(Base):
    """One saved version of a nugget set edited by people (appended). See migration 0006."""

    __tablename__ = "nugget_set_versions"
    __table_args__ = (UniqueConstraint("name", "version", name="uq_nugget_set_versions_name_version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(1000))
    version: Mapped[int] = mapped_column(Integer)
    set_hash: Mapped[str] = mapped_column(String(40))
    parent_hash: Mapped[str | None] = mapped_column(String(40), nullable=True)
    author: Mapped[str] = mapped_column(String(200))
    changes: Mapped[list[Any]] = mapped_column(JSON, default=list)
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
