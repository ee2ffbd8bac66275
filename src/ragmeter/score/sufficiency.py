"""The sufficiency x outcome table of a run: sufficient / insufficient (the context_sufficiency judge) crossed
with correct / abstained / wrong (ragmeter.score.outcome), each cell's count with its share of the table and
of its row, both with Wilson 95% intervals. Read from stored values only, so `runs show`, the report, the
viewer and the JSON writer build the same table from the same run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.models import EvalQuery, QueryEvalResult
from ragmeter.score.outcome import GROUNDEDNESS, GROUNDEDNESS_PASS, outcome, sufficiency

ROWS = ("sufficient", "insufficient")
COLUMNS = ("correct", "abstained", "wrong")


def _share(k: int, n: int) -> dict[str, Any]:
    from ragmeter.stats.intervals import wilson

    if n == 0:
        return {"share": None, "ci95": None}
    lo, hi = wilson(k, n)
    return {"share": k / n, "ci95": [lo, hi]}


def sufficiency_table(
    results: Sequence[QueryEvalResult],
    queries: Mapping[str, EvalQuery],
    *,
    correct_if: str | None = None,
) -> dict[str, Any] | None:
    """The table as plain data (None when no query has a context_sufficiency value). Cells count the
    successful queries with both a verdict and a known outcome; the others are counted apart, with why."""
    from ragmeter.score.classes import parse_rule

    rule = parse_rule(correct_if)
    counts = {row: dict.fromkeys(COLUMNS, 0) for row in ROWS}
    judged = unknown = 0
    for r in results:
        if r.status != "ok" or r.query_id not in queries:
            continue
        enough = sufficiency(r)
        if enough is None:
            continue
        judged += 1
        got = outcome(queries[r.query_id], r, rule)
        if got is None:
            unknown += 1
            continue
        counts[ROWS[0] if enough.value else ROWS[1]][got[0]] += 1
    if not judged:
        return None
    n = judged - unknown
    cells: dict[str, dict[str, Any]] = {}
    for row in ROWS:
        in_row = sum(counts[row].values())
        cells[row] = {
            col: {"n": k, **_share(k, n), "of_row": _share(k, in_row)} for col, k in counts[row].items()
        }
        cells[row]["total"] = {"n": in_row, **_share(in_row, n)}
    return {
        "n": n,
        "n_judged": judged,
        "n_without_outcome": unknown,
        "cells": cells,
        "ci_method": "wilson",
        "correct_means": f"the run's correctness rule where a query has a reference answer; without one, "
        f"{GROUNDEDNESS} >= {GROUNDEDNESS_PASS:g} (supported)",
        "abstained_means": "the abstained judge where it has a value, else the declared refusal phrases",
    }
