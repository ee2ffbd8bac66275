"""evaluate(qrels, run) -> IREvaluation: every measure for every query in one native pass."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ragmeter.errors import InputError
from ragmeter.ir import _native, _reference
from ragmeter.ir.data import Qrels, Run
from ragmeter.ir.measures import AQWV, Measure, parse_measures

CONDENSED_NOTE = (
    "condensed lists: unjudged docs were removed from every ranking before scoring (Sakai 2007; trec_eval -J)"
)
MissingPolicy = Literal["zero", "ignore"]
NoRelevantPolicy = Literal["exclude", "zero"]


@dataclass(frozen=True)
class IREvaluation:
    """Per-query values (measures x queries) and the policies that decided what is averaged."""

    measures: list[Measure]
    query_ids: list[str]  # every query of the qrels, in qrels order
    values: npt.NDArray[np.float64]  # shape (n_measures, n_qrels_queries)
    num_rel: npt.NDArray[np.int64]
    num_ret: npt.NDArray[np.int64]
    in_run: npt.NDArray[np.bool_]
    averaged: npt.NDArray[np.bool_]  # queries that enter the means (and per_query)
    relevance_level: int
    missing: MissingPolicy
    no_relevant: NoRelevantPolicy
    n_run_only_queries: int
    condensed: bool = False  # unjudged docs removed from every ranking before scoring (trec_eval -J)

    @property
    def measure_names(self) -> list[str]:
        return [m.name for m in self.measures]

    @property
    def n_queries(self) -> int:
        """Queries the means are taken over."""
        return int(self.averaged.sum())

    @property
    def n_queries_without_relevant(self) -> int:
        """Queries of the qrels with no doc at or above the relevance level."""
        considered = self.in_run | (self.missing == "zero")
        return int(((self.num_rel == 0) & considered).sum())

    @property
    def n_queries_missing_from_run(self) -> int:
        return int((~self.in_run).sum())

    @property
    def aggregate(self) -> dict[str, float]:
        """Mean of each measure over the averaged queries (0.0 when no query is averaged)."""
        n = self.n_queries
        sums = self.values[:, self.averaged].sum(axis=1)
        means = sums / n if n else np.zeros(len(self.measures))
        return dict(zip(self.measure_names, means.tolist(), strict=True))

    @property
    def std(self) -> dict[str, float]:
        """Sample standard deviation (ddof=1) over the averaged queries (0.0 with fewer than two)."""
        sel = self.values[:, self.averaged]
        stds = sel.std(axis=1, ddof=1) if sel.shape[1] > 1 else np.zeros(len(self.measures))
        return dict(zip(self.measure_names, stds.tolist(), strict=True))

    @property
    def per_query(self) -> dict[str, dict[str, float]]:
        """query id -> measure -> value, for the averaged queries."""
        idx = np.flatnonzero(self.averaged)
        names = self.measure_names
        cols = self.values[:, idx].T.tolist()
        qids = self.query_ids
        return {
            qids[i]: dict(zip(names, row, strict=True)) for i, row in zip(idx.tolist(), cols, strict=True)
        }

    def policy_notes(self) -> list[str]:
        notes = [
            f"relevance level {self.relevance_level}: a doc is relevant for binary measures when its grade >= "
            f"{self.relevance_level}; nDCG uses every positive grade",
            (
                f"{self.n_queries_without_relevant} queries with no relevant doc are left out of the means"
                if self.no_relevant == "exclude"
                else f"{self.n_queries_without_relevant} queries with no relevant doc count as 0 in the means"
            ),
            (
                f"{self.n_queries_missing_from_run} judged queries missing from the run score 0 (trec_eval -c)"
                if self.missing == "zero"
                else f"{self.n_queries_missing_from_run} judged queries missing from the run are left out"
            ),
        ]
        if self.condensed:
            notes.append(CONDENSED_NOTE)
        if self.n_run_only_queries:
            notes.append(f"{self.n_run_only_queries} run queries without judgments are ignored")
        if any(m.code == AQWV for m in self.measures):
            aqwv = next(m for m in self.measures if m.code == AQWV)
            denom = (
                f"N - relevant with N = {int(aqwv.collection_size)} (MATERIAL)"
                if aqwv.collection_size
                else "docs in the top k"
            )
            notes.append(f"AQWV: beta = {aqwv.beta:g}, false-alarm rate over {denom}")
        return notes

    def to_dict(self, *, per_query: bool = False) -> dict[str, Any]:
        # std: the sample standard deviation over the averaged queries, as a run's JSON gives it
        out: dict[str, Any] = {"aggregate": self.aggregate, "std": self.std}
        if per_query:
            out["per_query"] = self.per_query
        out["n_queries"] = self.n_queries
        out["n_queries_without_relevant"] = self.n_queries_without_relevant
        if self.condensed:
            out["condensed"] = True
            out["notes"] = [CONDENSED_NOTE]
        return out

    def to_json(self, *, per_query: bool = False, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(per_query=per_query), indent=indent)

    def to_csv(self, *, per_query: bool = True, raw: bool = False) -> str:
        """One row per averaged query (when per_query), then a 'mean' and a 'std' row (sample standard
        deviation, n - 1, as the JSON's `std`); one column per measure.
        A query id a spreadsheet would run as a formula gets a `'` prefix unless `raw` (ragmeter.safety)."""
        from ragmeter.safety import csv_cell

        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        names = self.measure_names
        writer.writerow(["query_id (condensed lists)" if self.condensed else "query_id", *names])
        if per_query:
            for qid, row in self.per_query.items():
                writer.writerow([csv_cell(qid, raw=raw), *(repr(row[n]) for n in names)])
        agg, std = self.aggregate, self.std
        writer.writerow(["mean", *(repr(agg[n]) for n in names)])
        writer.writerow(["std", *(repr(std[n]) for n in names)])  # sample sd (n - 1), as in the JSON
        return buf.getvalue()


def evaluate(
    qrels: Qrels,
    run: Run,
    measures: list[str] | tuple[str, ...] | None = None,
    *,
    relevance_level: int = 1,
    missing: MissingPolicy = "zero",
    no_relevant: NoRelevantPolicy = "exclude",
    collection_size: int | None = None,
    condensed: bool = False,
    backend: Literal["native", "numpy"] = "native",
) -> IREvaluation:
    """Evaluate a run against qrels with trec_eval's semantics.

    ``missing="zero"`` scores judged queries absent from the run as 0 (trec_eval -c); ``"ignore"`` leaves
    them out. ``no_relevant="exclude"`` leaves queries without any relevant doc out of the means (they are
    counted in ``n_queries_without_relevant``); ``"zero"`` averages them in as 0, as trec_eval does.
    ``collection_size`` switches AQWV to the MATERIAL false-alarm denominator (N - relevant).
    ``condensed`` scores every measure on condensed lists: each ranking without its unjudged docs (not in
    the qrels, or a negative grade), as trec_eval -J; judged@k is then 1 wherever k docs remain.
    """
    if not isinstance(qrels, Qrels) or not isinstance(run, Run):
        raise TypeError("evaluate(qrels: Qrels, run: Run, ...)")
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, int) or relevance_level < 1:
        raise InputError(f"relevance level must be an integer >= 1, got {relevance_level!r}", source="-l")
    if missing not in ("zero", "ignore"):
        raise InputError(f"missing must be 'zero' or 'ignore', got {missing!r}", source="missing")
    if no_relevant not in ("exclude", "zero"):
        raise InputError(
            f"no_relevant must be 'exclude' or 'zero', got {no_relevant!r}", source="no_relevant"
        )
    parsed = parse_measures(measures, collection_size=collection_size)

    if qrels.query_ids == run.query_ids:  # the usual pair: the same queries in the same order
        qrels_to_run = np.arange(qrels.n_queries, dtype=np.int32)
    else:
        run_pos = run._qpos
        qrels_to_run = np.fromiter(
            (run_pos.get(q, -1) for q in qrels.query_ids), dtype=np.int32, count=qrels.n_queries
        )
    in_run = qrels_to_run >= 0
    run_to_qrels = np.full(run.n_queries, -1, dtype=np.int32)
    run_to_qrels[qrels_to_run[in_run]] = np.flatnonzero(in_run).astype(np.int32)

    codes = np.array([m.code for m in parsed], dtype=np.int32)
    ks = np.array([m.k for m in parsed], dtype=np.int64)
    betas = np.array([m.beta for m in parsed], dtype=np.float64)
    colls = np.array([m.collection_size for m in parsed], dtype=np.float64)
    kernels = _native if backend == "native" else _reference
    grades = kernels.judge(
        run.qoff,
        run.doc_blob,
        run.doc_off,
        run_to_qrels,
        qrels.qoff,
        qrels.doc_blob,
        qrels.doc_off,
        qrels.grades,
    )
    run_qoff = run.qoff
    if condensed:
        run_qoff, grades = condense(run_qoff, grades)
    values, num_rel, num_ret = kernels.measures(
        run_qoff, grades, qrels.qoff, qrels.grades, qrels_to_run, codes, ks, betas, colls, relevance_level
    )

    averaged = in_run.copy() if missing == "ignore" else np.ones(qrels.n_queries, dtype=np.bool_)
    if no_relevant == "exclude":
        averaged &= num_rel > 0
    return IREvaluation(
        measures=parsed,
        query_ids=qrels.query_ids,
        values=values,
        num_rel=num_rel,
        num_ret=num_ret,
        in_run=in_run,
        averaged=averaged,
        relevance_level=relevance_level,
        missing=missing,
        no_relevant=no_relevant,
        n_run_only_queries=int((run_to_qrels < 0).sum()),
        condensed=condensed,
    )


def condense(
    qoff: npt.NDArray[np.int64], grades: npt.NDArray[np.int32]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """Rankings without their unjudged rows (grade < 0), rank order kept: trec_eval's -J."""
    keep = grades >= 0
    kept_before = np.zeros(len(grades) + 1, dtype=np.int64)
    np.cumsum(keep, out=kept_before[1:])
    return np.ascontiguousarray(kept_before[qoff]), np.ascontiguousarray(grades[keep])
