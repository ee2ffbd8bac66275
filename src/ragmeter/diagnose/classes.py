"""Failure-class tables of a run and the transitions of queries between two runs' classes."""

from __future__ import annotations

from typing import Any

from ragmeter.metrics.diagnosis import FAILURE_CLASSES
from ragmeter.models import EvalRunResult
from ragmeter.score.classes import class_of


def class_counts(run: EvalRunResult) -> list[dict[str, Any]]:
    """One row per class, in assignment order: count, share of the classified queries, query ids.
    Empty when the run was not classified (an older run, or --metrics without the diagnosis family)."""
    by_class: dict[str, list[str]] = {name: [] for name in FAILURE_CLASSES}
    for r in run.per_query:
        name = class_of(r)
        if name is not None:
            by_class[name].append(r.query_id)
    total = sum(len(ids) for ids in by_class.values())
    if total == 0:
        return []
    return [
        {"class": name, "n": len(ids), "share": len(ids) / total, "queries": ids}
        for name, ids in by_class.items()
    ]


def transitions(a: EvalRunResult, b: EvalRunResult) -> dict[str, Any]:
    """How many queries (and which) moved from each class in `a` to each class in `b`, over the queries
    classified in both runs; `matrix[from][to]` counts, `moved` lists the changed cells with query ids."""
    before = {r.query_id: class_of(r) for r in a.per_query}
    after = {r.query_id: class_of(r) for r in b.per_query}
    shared = [q for q in before if q in after and before[q] is not None and after[q] is not None]
    matrix = {f: dict.fromkeys(FAILURE_CLASSES, 0) for f in FAILURE_CLASSES}
    cells: dict[tuple[str, str], list[str]] = {}
    for q in shared:
        f, t = before[q], after[q]
        assert f is not None and t is not None
        matrix[f][t] += 1
        if f != t:
            cells.setdefault((f, t), []).append(q)
    moved = [
        {"from": f, "to": t, "n": len(ids), "queries": ids}
        for (f, t), ids in sorted(cells.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ]
    return {
        "a": a.run_id,
        "b": b.run_id,
        "n_paired": len(shared),
        "n_moved": sum(m["n"] for m in moved),
        "matrix": matrix,
        "moved": moved,
    }
