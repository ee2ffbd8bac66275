"""Per-response nugget scores, exactly castorini nuggetizer 0.0.5's `calculate_nugget_scores`, plus the TREC
2024 RAG track's weighted score.

nuggetizer (per response, over the assigned nuggets):
    strict_vital = vital nuggets with support / vital nuggets
    vital        = (vital with support + 0.5 x vital with partial_support) / vital nuggets
    strict_all, all: the same over every nugget
The weighted score (Pradeep et al., TREC 2024 RAG): sum(w_i x s_i) / sum(w_i), w = 1 for vital, 0.5 for okay;
s = 1 support, 0.5 partial_support (0 in the strict variant), 0 otherwise.

Where nuggetizer returns 0.0 because there is nothing to divide by (no vital nuggets for the vital scores, no
nuggets at all), ragmeter returns None with the reason: a query without vital nuggets has no vital score, and
averaging a 0 for it would lower a system's mean for a property of the nugget set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# metric name -> (nuggetizer's field, or "" for the track's weighted score; strict)
SCORES: dict[str, tuple[str, bool]] = {
    "nugget_vital": ("vital_score", False),
    "nugget_vital_strict": ("strict_vital_score", True),
    "nugget_all": ("all_score", False),
    "nugget_all_strict": ("strict_all_score", True),
    "nugget_weighted": ("", False),
    "nugget_weighted_strict": ("", True),
}
NO_VITAL = "the query has no vital nuggets (nuggetizer scores 0.0; ragmeter records no value)"
NO_NUGGETS = "the query has no nuggets (nuggetizer scores 0.0; ragmeter records no value)"


@dataclass(frozen=True)
class Score:
    value: float | None
    reason: str | None = None


def _credit(assignment: str, strict: bool) -> float:
    if assignment == "support":
        return 1.0
    if assignment == "partial_support" and not strict:
        return 0.5
    return 0.0


def nuggetizer_score(name: str, rows: Sequence[tuple[str, str]]) -> Score:
    """Score `name` (a key of SCORES) of one response from its (importance, assignment) rows."""
    field, strict = SCORES[name]
    if not field:
        weights = [1.0 if imp == "vital" else 0.5 for imp, _ in rows]
        if not rows:
            return Score(None, NO_NUGGETS)
        earned = sum(w * _credit(a, strict) for w, (_, a) in zip(weights, rows, strict=True))
        return Score(earned / sum(weights))
    chosen = (
        [a for imp, a in rows if imp == "vital"] if field.endswith("vital_score") else [a for _, a in rows]
    )
    if not chosen:
        return Score(None, NO_VITAL if field.endswith("vital_score") else NO_NUGGETS)
    # The sum in nuggetizer's order: full supports (an int), then 0.5 per partial support.
    supported: float = sum(1 for a in chosen if a == "support")
    if not strict:
        supported = supported + sum(0.5 for a in chosen if a == "partial_support")
    return Score(supported / len(chosen))


def all_scores(rows: Sequence[tuple[str, str]]) -> dict[str, Score]:
    return {name: nuggetizer_score(name, rows) for name in SCORES}
