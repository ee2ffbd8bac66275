"""Labels from people in the store: appended, never updated; an item's current label is its newest.

An item is a relevance judgment of (dataset hash, query id, doc id), or a label of one answer: (run id,
query id, metric, hash of the answer text); a label of an answer applies to that answer only. Each save
names the version it replaces, and (item, version) is unique in the table, so of two people saving over the
same version one wins and the other gets StaleLabel with the value that won: nothing is overwritten unseen.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ragmeter.errors import RagmeterError
from ragmeter.store.liveness import utcnow

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

KINDS = ("relevance", "answer", "assignment")
# an assignment label's value: how far the answer supports the nugget (the credit nuggetizer gives it)
ASSIGNMENT_VALUES = {"support": 1.0, "partial_support": 0.5, "not_support": 0.0}
SOURCES = ("queue", "browse", "import")


def answer_hash(answer: str | None) -> str:
    return hashlib.sha256((answer or "").encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class LabelItem:
    """What a label is about."""

    kind: str
    query_id: str
    dataset_hash: str | None = None
    doc_id: str | None = None
    run_id: str | None = None
    metric: str | None = None
    answer_hash: str | None = None
    nugget_id: str | None = None
    nugget_set: str | None = None

    @classmethod
    def relevance(cls, dataset_hash: str, query_id: str, doc_id: str) -> LabelItem:
        return cls("relevance", query_id, dataset_hash=dataset_hash, doc_id=doc_id)

    @classmethod
    def answer(cls, run_id: str, query_id: str, metric: str, answer: str | None) -> LabelItem:
        return cls("answer", query_id, run_id=run_id, metric=metric, answer_hash=answer_hash(answer))

    @classmethod
    def assignment(
        cls, run_id: str, query_id: str, answer: str | None, nugget_set: str, nugget_id: str
    ) -> LabelItem:
        """How far one answer supports one nugget of one set version (migration 0006)."""
        return cls(
            "assignment",
            query_id,
            run_id=run_id,
            answer_hash=answer_hash(answer),
            nugget_set=nugget_set,
            nugget_id=nugget_id,
        )

    @property
    def key(self) -> str:
        if self.kind == "relevance":
            ident: list[Any] = [self.kind, self.dataset_hash, self.query_id, self.doc_id]
        elif self.kind == "assignment":
            ident = [self.kind, self.run_id, self.query_id, self.answer_hash, self.nugget_set, self.nugget_id]
        else:
            ident = [self.kind, self.run_id, self.query_id, self.metric, self.answer_hash]
        return hashlib.sha256(json.dumps(ident).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Label:
    item: LabelItem
    value: float
    annotator: str
    source: str
    version: int
    created_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {**asdict(self.item), "value": self.value, "annotator": self.annotator, "source": self.source}
        if self.item.kind == "assignment":
            out["assignment"] = assignment_name(self.value)
        else:  # the nugget fields are an assignment's only
            del out["nugget_id"], out["nugget_set"]
        out["version"] = self.version
        out["created_at"] = self.created_at.isoformat() if self.created_at else None
        return out


def assignment_name(value: float) -> str:
    return next(name for name, v in ASSIGNMENT_VALUES.items() if v == value)


class StaleLabel(RagmeterError):
    """A label saved over a version that is no longer the newest: `current` is the label that won."""

    def __init__(self, current: Label | None, posted_version: int) -> None:
        self.current = current
        self.posted_version = posted_version
        now = current.version if current else 0
        super().__init__(f"the item changed (version {now}, you saved over {posted_version})")


# A label row holds its item field by field (`_row_values`), under the same names.
_ITEM_COLUMNS = tuple(f.name for f in fields(LabelItem))


def _row_label(row: Any) -> Label:
    item = LabelItem(**{name: getattr(row, name) for name in _ITEM_COLUMNS})
    return Label(item, float(row.value), row.annotator, row.source, int(row.version), row.created_at)


def current_labels(engine: Engine, items: Iterable[LabelItem]) -> dict[str, Label]:
    """{item key: its newest label} of the items that have one."""
    from sqlalchemy import select

    from ragmeter.store.schema import LabelRow

    keys = sorted({i.key for i in items})
    out: dict[str, Label] = {}
    with engine.connect() as conn:
        for start in range(0, len(keys), 500):
            stmt = select(LabelRow).where(LabelRow.item_key.in_(keys[start : start + 500]))
            for row in conn.execute(stmt.order_by(LabelRow.version)):
                out[row.item_key] = _row_label(row)
    return out


def save_label(
    engine: Engine, item: LabelItem, value: float, *, annotator: str, source: str, expected_version: int
) -> Label:
    """Append a label replacing `expected_version` (0: the item had none). StaleLabel when another label
    was saved since."""
    from sqlalchemy import exc, insert

    from ragmeter.store.schema import LabelRow

    if item.kind not in KINDS or source not in SOURCES:
        raise ValueError(f"kind {item.kind!r} / source {source!r}")
    current = current_labels(engine, [item]).get(item.key)
    if (current.version if current else 0) != expected_version:
        raise StaleLabel(current, expected_version)
    label = Label(item, float(value), annotator, source, expected_version + 1, utcnow())
    try:
        with engine.begin() as conn:
            conn.execute(insert(LabelRow).values(**_row_values(label)))
    except exc.IntegrityError:  # another save of the same version got in first
        raise StaleLabel(current_labels(engine, [item]).get(item.key), expected_version) from None
    return label


def _row_values(label: Label) -> dict[str, Any]:
    return {
        **asdict(label.item),
        "item_key": label.item.key,
        "version": label.version,
        "value": label.value,
        "annotator": label.annotator,
        "source": label.source,
        "created_at": label.created_at or utcnow(),
    }


def add_labels(engine: Engine, labels: Sequence[tuple[LabelItem, float, str, str]]) -> int:
    """Append (item, value, annotator, source) labels in one transaction, each after the item's newest
    (an import: all or nothing)."""
    from sqlalchemy import insert

    from ragmeter.store.schema import LabelRow

    current = current_labels(engine, [i for i, *_ in labels])
    versions = {k: v.version for k, v in current.items()}
    rows = []
    for item, value, annotator, source in labels:
        versions[item.key] = versions.get(item.key, 0) + 1
        rows.append(_row_values(Label(item, float(value), annotator, source, versions[item.key], utcnow())))
    if rows:
        with engine.begin() as conn:
            conn.execute(insert(LabelRow), rows)
    return len(rows)


def all_labels(
    engine: Engine, *, run_id: str | None = None, dataset_hash: str | None = None, history: bool = False
) -> list[Label]:
    """The current labels (or every label with `history`), of one run's answers and/or one dataset's
    relevance judgments when given, in the order they were given."""
    from sqlalchemy import or_, select

    from ragmeter.store.schema import LabelRow

    stmt = select(LabelRow).order_by(LabelRow.id)
    conds = []
    if run_id is not None:
        conds.append(LabelRow.run_id == run_id)
    if dataset_hash is not None:
        conds.append(LabelRow.dataset_hash == dataset_hash)
    if conds:
        stmt = stmt.where(or_(*conds))
    with engine.connect() as conn:
        rows = [_row_label(r) for r in conn.execute(stmt)]
    if history:
        return rows
    newest: dict[str, Label] = {}
    for label in rows:
        newest[label.item.key] = label
    return sorted(newest.values(), key=lambda lab: (lab.created_at or utcnow(), lab.item.key))


def labels_of_answers(
    engine: Engine, run_id: str | None, answers: Mapping[str, str | None], *, queue_only: bool = False
) -> list[Label]:
    """The newest label of each of the run's items whose answer is the query's answer now (`answers`: {query
    id: answer}); a label of another answer to the same query does not apply. With queue_only, only items
    labelled from the queue."""
    current = {qid: answer_hash(answer) for qid, answer in answers.items()}
    history = all_labels(engine, run_id=run_id, history=True)
    queued = {lab.item.key for lab in history if lab.source == "queue"}
    newest: dict[str, Label] = {}
    for lab in history:
        newest[lab.item.key] = lab
    return [
        lab
        for key, lab in newest.items()
        if current.get(lab.item.query_id) == lab.item.answer_hash and (not queue_only or key in queued)
    ]
