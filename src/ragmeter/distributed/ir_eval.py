"""`ragmeter eval --executor ray`: the IR engine over query partitions on Ray workers.

Each query's values depend on that query's judgments and retrieved list only, so a partition by query gives
per-query values identical to one local pass; the driver reassembles the IREvaluation in qrels order and
takes the means with the same code as the local engine (identical means, bit for bit).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any, TypeVar

import numpy as np

from ragmeter.distributed.cluster import ensure_ray
from ragmeter.ir.data import Qrels, Run, _Table
from ragmeter.ir.evaluate import IREvaluation, evaluate

T = TypeVar("T", bound=_Table)


def _slice(table: T, start: int, stop: int) -> T:
    """Queries [start, stop) of a columnar table, as a table of its own (rows and doc bytes copied)."""
    r0, r1 = int(table.qoff[start]), int(table.qoff[stop])
    b0, b1 = int(table.doc_off[r0]), int(table.doc_off[r1])
    return type(table)(
        table.query_ids[start:stop],
        table.qoff[start : stop + 1] - r0,
        table.doc_blob[b0:b1],
        table.doc_off[r0 : r1 + 1] - b0,
        table.values[r0:r1].copy(),
    )


def _concat(tables: list[T]) -> T:
    qids: list[str] = []
    qoffs, blobs, doffs, vals = [np.zeros(1, dtype=np.int64)], [], [np.zeros(1, dtype=np.int64)], []
    rows = bytes_ = 0
    for t in tables:
        qids += t.query_ids
        qoffs.append(t.qoff[1:] + rows)
        doffs.append(t.doc_off[1:] + bytes_)
        blobs.append(t.doc_blob)
        vals.append(t.values)
        rows += int(t.qoff[-1])
        bytes_ += len(t.doc_blob)
    cls = type(tables[0])
    values = np.concatenate(vals) if vals else np.zeros(0)
    return cls(qids, np.concatenate(qoffs), b"".join(blobs), np.concatenate(doffs), values)


def _run_for(run: Run, query_ids: list[str]) -> Run:
    """The run's lists of `query_ids` (those it has), as one table."""
    pos = [p for p in (run.position(q) for q in query_ids) if p is not None]
    if not pos:
        return _slice(run, 0, 0)
    return _concat([_slice(run, p, p + 1) for p in pos])


def partition_bounds(n: int, parts: int) -> list[tuple[int, int]]:
    parts = max(1, min(parts, n)) if n else 1
    edges = np.linspace(0, n, parts + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in pairwise(edges)]


def evaluate_ray(
    qrels: Qrels,
    run: Run,
    measures: list[str] | None = None,
    *,
    partitions: int | None = None,
    address: str | None = None,
    **kwargs: Any,
) -> IREvaluation:
    """evaluate() with the queries split over Ray tasks; same result as the local engine."""
    ray = ensure_ray(address)
    n_parts = partitions or max(1, int(ray.cluster_resources().get("CPU", 1)) * 2)

    def _one(q: Qrels, r: Run) -> tuple[Any, ...]:
        ev = evaluate(q, r, measures, **kwargs)
        return (ev.values, ev.num_rel, ev.num_ret, ev.in_run, ev.averaged)

    one = ray.remote(max_retries=3)(_one)

    refs = []
    for a, b in partition_bounds(qrels.n_queries, n_parts):
        part = _slice(qrels, a, b)
        refs.append(one.remote(part, _run_for(run, part.query_ids)))
    parts = ray.get(refs)
    # the policies and measure list are checked once, locally, on an empty slice (fast, same errors)
    probe = evaluate(_slice(qrels, 0, 0), _slice(run, 0, 0), measures, **kwargs)
    qpos = set(qrels.query_ids)
    n_run_only = sum(1 for q in run.query_ids if q not in qpos)
    return IREvaluation(
        measures=probe.measures,
        query_ids=list(qrels.query_ids),
        values=np.concatenate([p[0] for p in parts], axis=1),
        num_rel=np.concatenate([p[1] for p in parts]),
        num_ret=np.concatenate([p[2] for p in parts]),
        in_run=np.concatenate([p[3] for p in parts]),
        averaged=np.concatenate([p[4] for p in parts]),
        relevance_level=probe.relevance_level,
        missing=probe.missing,
        no_relevant=probe.no_relevant,
        n_run_only_queries=n_run_only,
        condensed=probe.condensed,
    )
