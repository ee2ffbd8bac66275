"""What the report puts in front of a reader: headline cut-offs, metrics without variation, the axis range
of a metric and the queries that changed most between two runs.

Ranges, directions and display order come from the metric registry (`ragmeter.metrics`); nothing here
keeps its own list of metric names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ragmeter import metrics as registry
from ragmeter.models import EvalRunResult

_AT_K = re.compile(r"^(?P<family>[A-Za-z_][\w.\-]*)@(?P<k>\d+)$")
HEADLINE_K = registry.HEADLINE_K  # the cut-off shown first when a run has it (the registry's rule)
_TIE = 1e-12


def short_label(label: str, limit: int = 32) -> str:
    """A run label cut to `limit` characters for legends and tick labels."""
    return label if len(label) <= limit else label[: limit - 1] + "…"


def split_at_k(name: str) -> tuple[str, int] | None:
    """("ndcg", 10) for "ndcg@10", None for a metric without a cut-off."""
    m = _AT_K.match(name)
    return (m["family"], int(m["k"])) if m else None


def display_order(names: Sequence[str]) -> list[str]:
    """Names in the registry's display order (retrieval by family then cut-off, lexical, ...)."""
    return sorted(dict.fromkeys(names), key=registry.sort_key)


def headline_metrics(names: Sequence[str]) -> list[str]:
    """One cut-off per family@k (the registry's headline_cutoff: k=10 where present, else the largest) plus
    every metric without a cut-off, in display order. The other cut-offs stay in the tables and in the
    metric@k plot."""
    cutoffs: dict[str, list[int]] = {}
    for name in names:
        parsed = split_at_k(name)
        if parsed:
            cutoffs.setdefault(parsed[0], []).append(parsed[1])
    keep = []
    for name in names:
        parsed = split_at_k(name)
        if parsed is None:
            keep.append(name)
            continue
        family, k = parsed
        if k == registry.headline_cutoff(cutoffs[family]):
            keep.append(name)
    return display_order(keep)


def axis_range(name: str) -> tuple[float, float] | None:
    """The metric's fixed range from the registry when bounded on both sides, else None (autoscale)."""
    spec = registry.lookup(name)
    if spec is None or not spec.bounded:
        return None
    lo, hi = spec.range
    assert lo is not None and hi is not None
    return float(lo), float(hi)


def padded(name: str, pad: float = 0.04) -> tuple[float, float] | None:
    """axis_range widened a little so that points on the bounds stay visible."""
    bounds = axis_range(name)
    if bounds is None:
        return None
    lo, hi = bounds
    margin = (hi - lo) * pad
    return lo - margin, hi + margin


def values_of(run: EvalRunResult, name: str) -> list[float]:
    """The non-null per-query values of one metric."""
    return [m.value for q in run.per_query if (m := q.metrics.get(name)) is not None and m.value is not None]


def no_variation(runs: Sequence[EvalRunResult], names: Sequence[str]) -> dict[str, str]:
    """{metric: "every query 1.0"} for each metric whose per-query values are one number across every
    query of every run (nulls aside, and counted). Such a metric is reported in one line, not plotted."""
    out: dict[str, str] = {}
    for name in names:
        values = [v for run in runs for v in values_of(run, name)]
        if not values or max(values) - min(values) > _TIE:
            continue
        n_null = sum(1 for run in runs for q in run.per_query if name in q.metrics) - len(values)
        value = values[0]
        text = f"every query {value:.1f}" if float(value).is_integer() else f"every query {value:.4g}"
        out[name] = text + (f" ({n_null} null)" if n_null else "")
    return out


def _scale(name: str, values: Sequence[float]) -> float:
    """What one unit of change means for ranking changes across metrics: the range's width when the
    registry bounds the metric, else the largest absolute value seen."""
    bounds = axis_range(name)
    if bounds is not None:
        return bounds[1] - bounds[0]
    return max((abs(v) for v in values), default=1.0) or 1.0


def change_rows(
    run_a: EvalRunResult, run_b: EvalRunResult, names: Sequence[str], *, top: int = 30
) -> tuple[list[dict[str, Any]], int]:
    """Per query (paired, successful in both runs), B - A for each metric in `names`, sorted by the largest
    change (as a fraction of each metric's range) first. Returns (the `top` rows, how many queries changed).

    Each row: query_id, question, size (the largest fraction), cells [{metric, a, b, delta, better}] where
    better is True/False/None in the metric's direction (None: unchanged or not paired).
    """
    from ragmeter.experiments.compare import query_values

    questions = {q.query_id: q.question for q in run_b.per_query}
    per_metric = {name: (query_values(run_a, name), query_values(run_b, name)) for name in names}
    scales = {name: _scale(name, [*va.values(), *vb.values()]) for name, (va, vb) in per_metric.items()}
    rows: list[dict[str, Any]] = []
    for qid in sorted({q for va, vb in per_metric.values() for q in va.keys() & vb.keys()}):
        cells: list[dict[str, Any]] = []
        size = 0.0
        for name, (va, vb) in per_metric.items():
            a, b = va.get(qid), vb.get(qid)
            if a is None or b is None:
                cells.append({"metric": name, "a": a, "b": b, "delta": None, "better": None})
                continue
            delta = b - a
            sign = 1.0 if registry.higher_is_better(name) else -1.0
            better = None if abs(delta) <= _TIE else sign * delta > 0
            cells.append({"metric": name, "a": a, "b": b, "delta": delta, "better": better})
            size = max(size, abs(delta) / scales[name])
        rows.append({"query_id": qid, "question": questions.get(qid, ""), "size": size, "cells": cells})
    changed = [r for r in rows if r["size"] > _TIE]
    changed.sort(key=lambda r: (-r["size"], r["query_id"]))
    return changed[:top], len(changed)


JUDGED_WARN_BELOW = 0.9


def judged_note(run: EvalRunResult, k: int = HEADLINE_K) -> str | None:
    """One quiet line beside nDCG@k when less than 90% of the top k has a judgment (judged@k < 0.9), else
    None. A note, not a warning: qrels that list only relevant docs (most do) leave every other doc
    unjudged, so a low judged@k is the usual case there; the line says what it measures and where to look."""
    ndcg, judged = run.aggregate.get(f"ndcg@{k}"), run.aggregate.get(f"judged@{k}")
    if ndcg is None or judged is None or ndcg.mean is None or judged.mean is None:
        return None
    if judged.mean >= JUDGED_WARN_BELOW:
        return None
    return (
        f"judged@{k} = {judged.mean:.4f} (ndcg@{k} = {ndcg.mean:.4f}): the share of the top {k} docs the qrels "
        f"judge; ndcg@{k} counts the others as non-relevant, as usual when qrels list only relevant docs. "
        "For a view that leaves unjudged docs out: bpref, or `ragmeter eval --condensed`"
    )
