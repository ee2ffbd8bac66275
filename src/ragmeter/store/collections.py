"""Collections, their documents and chunks, and test cases: the corpus side of the store (a mixin of
Store; runs live in api.py)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragmeter.errors import InputError
from ragmeter.models import Document, EvalDataset, EvalQuery
from ragmeter.store.liveness import aware as _aware
from ragmeter.store.liveness import utcnow

if TYPE_CHECKING:
    from sqlalchemy.orm import Session


@dataclass
class ChunkRecord:
    """A chunk of an ingested document, as the built-in pipeline cut it."""

    chunk_id: str
    text: str
    position: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)


class CollectionStore:
    """The collection and test-case methods of Store."""

    url: str

    def _session(self) -> Session:
        raise NotImplementedError

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
