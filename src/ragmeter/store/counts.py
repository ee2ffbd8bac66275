"""How many query results a run has stored so far: what `runs list` shows for a run that never finished
(killed, failed, still running), whose row's own count is written only at its end."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.orm import Session


def stored_counts(session: Session, run_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
    """{run id: (stored results, failed ones)} for `run_ids` (runs without results are absent)."""
    if not run_ids:
        return {}
    from sqlalchemy import case, func, select

    from ragmeter.store.schema import QueryResultRow as Q

    failed = func.sum(case((Q.status == "failed", 1), else_=0))
    stmt = select(Q.run_id, func.count(), failed).where(Q.run_id.in_(run_ids)).group_by(Q.run_id)
    return {run_id: (int(n), int(f or 0)) for run_id, n, f in session.execute(stmt)}
