"""Versions of nugget sets people edited (migration 0006): appended, never updated.

A set is named by the absolute path of the file a run was scored against. Version 1 is that file as it was
when first edited; each save appends the next version with the whole set (ragmeter JSONL, as plain text: the
store knows no nugget model), its hash, its author and what changed. A save names the version it replaces,
and (name, version) is unique: of two people saving over the same version one wins, the other gets
StaleVersion with the version that won.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ragmeter.errors import RagmeterError
from ragmeter.store.liveness import utcnow

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


@dataclass(frozen=True)
class SetVersion:
    name: str
    version: int
    set_hash: str
    parent_hash: str | None
    author: str
    body: str
    changes: list[Any] = field(default_factory=list)
    created_at: datetime | None = None

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "hash": self.set_hash,
            "parent": self.parent_hash,
            "author": self.author,
            "changes": list(self.changes),
            "created_at": self.created_at.isoformat() if self.created_at else None,
        }


class StaleVersion(RagmeterError):
    """A save over a version that is no longer the newest: `current` is the version that won."""

    def __init__(self, current: SetVersion | None, posted: int) -> None:
        self.current = current
        self.posted = posted
        now = current.version if current else 0
        super().__init__(f"the nugget set changed (version {now}, you saved over {posted})")


def _row(row: Any) -> SetVersion:
    return SetVersion(
        row.name,
        int(row.version),
        row.set_hash,
        row.parent_hash,
        row.author,
        row.body,
        list(row.changes or []),
        row.created_at,
    )


def versions(engine: Engine, name: str) -> list[SetVersion]:
    """Every version of set `name`, oldest first (its history)."""
    from sqlalchemy import select

    from ragmeter.store.schema import NuggetSetVersionRow as R

    with engine.connect() as conn:
        rows = conn.execute(select(R).where(R.name == name).order_by(R.version))
        return [_row(r) for r in rows]


def latest(engine: Engine, name: str) -> SetVersion | None:
    found = versions(engine, name)
    return found[-1] if found else None


def by_hash(engine: Engine, set_hash: str) -> SetVersion | None:
    """The newest stored version whose set has this hash (any name)."""
    from sqlalchemy import select

    from ragmeter.store.schema import NuggetSetVersionRow as R

    with engine.connect() as conn:
        row = conn.execute(select(R).where(R.set_hash == set_hash).order_by(R.id.desc())).first()
    return _row(row) if row is not None else None


def save_version(
    engine: Engine,
    name: str,
    *,
    body: str,
    set_hash: str,
    author: str,
    changes: list[Any],
    expected_version: int,
) -> SetVersion:
    """Append version expected_version + 1 of `name`; StaleVersion when another save came first."""
    from sqlalchemy import exc, insert

    from ragmeter.store.schema import NuggetSetVersionRow as R

    current = latest(engine, name)
    if (current.version if current else 0) != expected_version:
        raise StaleVersion(current, expected_version)
    saved = SetVersion(
        name,
        expected_version + 1,
        set_hash,
        current.set_hash if current else None,
        author,
        body,
        list(changes),
        utcnow(),
    )
    values = {
        "name": name,
        "version": saved.version,
        "set_hash": set_hash,
        "parent_hash": saved.parent_hash,
        "author": author,
        "changes": saved.changes,
        "body": body,
        "created_at": saved.created_at,
    }
    try:
        with engine.begin() as conn:
            conn.execute(insert(R).values(**values))
    except exc.IntegrityError:
        raise StaleVersion(latest(engine, name), expected_version) from None
    return saved
