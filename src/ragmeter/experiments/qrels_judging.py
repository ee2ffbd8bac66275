"""LLM relevance labels for pooled (query, doc) pairs, and how far they can stand in for human qrels.

1. `pool(runs, depth)`: the top `depth` docs of every run, per query (TREC pooling).
2. `pairs_to_label(pool, human)`: the pooled pairs the human qrels do not judge (or all of them).
3. `label_pairs(...)`: the UMBRELA-style judge (`ragmeter.judges.trec_relevance`) grades each pair 0-3 with
   bounded concurrency; a failed pair is left unjudged and counted, never guessed.
4. `merge_qrels(human, llm)`: one qrels in which a human grade always wins.
5. `meta_evaluate(human, llm, runs, measure)`: per-label agreement on the pairs both judge (Cohen's kappa,
   quadratic-weighted kappa, bootstrap intervals) and how well the system ranking under the LLM qrels matches
   the one under the human qrels (Kendall's tau-b and tau_AP over the runs, as UMBRELA reports).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ragmeter.experiments.agreement import agreement, bootstrap_interval, kendall_tau, tau_ap
from ragmeter.ir import Qrels, Run, evaluate, parse_measure
from ragmeter.llm.base import LLMClient

# When human qrels are binary (0/1) and LLM grades are 0-3, a grade >= this counts as relevant when the two
# are compared label by label (TREC DL's and UMBRELA's binarisation: 2 = "highly relevant" and up).
DEFAULT_LLM_RELEVANT_GRADE = 2


@dataclass(frozen=True)
class PairLabel:
    query_id: str
    doc_id: str
    grade: int | None  # None: the judge failed
    reason: str  # the judge's reasoning, or why it failed
    flags: tuple[str, ...] = ()


def pool(runs: Sequence[Run], depth: int, *, query_ids: Sequence[str] | None = None) -> dict[str, list[str]]:
    """query id -> the docs any run ranks in its top `depth` (first-seen order, runs in the given order)."""
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    wanted = set(query_ids) if query_ids is not None else None
    out: dict[str, dict[str, None]] = {}
    for run in runs:
        for qid in run.query_ids:
            if wanted is not None and qid not in wanted:
                continue
            docs = out.setdefault(qid, {})
            for doc, _score in run.query(qid)[:depth]:
                docs.setdefault(doc, None)
    return {q: list(d) for q, d in out.items()}


def judged_pairs(qrels: Qrels) -> dict[tuple[str, str], int]:
    """(query, doc) -> grade for every judged pair (negative grades mean unjudged and are left out)."""
    return {(q, d): int(g) for q, docs in qrels.to_dict().items() for d, g in docs.items() if g >= 0}


def pairs_to_label(
    pooled: Mapping[str, Sequence[str]], human: Qrels | None = None, *, all_pairs: bool = False
) -> list[tuple[str, str]]:
    """Pooled pairs to send to the judge: those the human qrels leave unjudged, or every one."""
    known = judged_pairs(human) if human is not None and not all_pairs else {}
    return [(q, d) for q, docs in pooled.items() for d in docs if (q, d) not in known]


async def label_pairs(
    pairs: Sequence[tuple[str, str]],
    *,
    queries: Mapping[str, str],
    docs: Mapping[str, str],
    llm: LLMClient,
    concurrency: int = 8,
) -> list[PairLabel]:
    """Grade each pair 0-3 (in the order given). A pair whose query or doc text is unknown fails with
    that reason; so does a judge failure. Never raises for one pair."""
    from ragmeter.judges.trec_relevance import trec_relevance

    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(qid: str, did: str) -> PairLabel:
        if qid not in queries:
            return PairLabel(qid, did, None, "query text not found in the dataset")
        if did not in docs:
            return PairLabel(qid, did, None, "document text not found in the corpus")
        async with gate:
            result = await trec_relevance(queries[qid], docs[did], llm=llm, query_id=qid, doc_id=did)
        if result.value is None:
            return PairLabel(qid, did, None, result.error or "the judge gave no grade")
        flags = tuple(str(f) for f in result.details.get("flags", []))
        return PairLabel(qid, did, int(result.value), str(result.details.get("reasoning", "")), flags)

    return list(await asyncio.gather(*(one(q, d) for q, d in pairs)))


def labels_to_qrels(labels: Sequence[PairLabel], *, source: str = "<llm labels>") -> Qrels | None:
    """The graded pairs as Qrels (failed pairs left out); None when no pair was graded."""
    ok = [lab for lab in labels if lab.grade is not None]
    if not ok:
        return None
    return Qrels.from_columns(
        [lab.query_id for lab in ok],
        [lab.doc_id for lab in ok],
        [float(lab.grade or 0) for lab in ok],
        source=source,
    )


def merge_qrels(human: Qrels | None, llm: Qrels | None) -> Qrels:
    """Every pair of both; where both judge a pair, the human grade wins (an unjudged human entry,
    a negative grade, does not win)."""
    merged: dict[str, dict[str, float]] = {}
    for table, wins in ((llm, False), (human, True)):
        if table is None:
            continue
        for q, docs in table.to_dict().items():
            slot = merged.setdefault(q, {})
            for d, g in docs.items():
                if wins and g < 0 and d in slot:
                    continue
                slot[d] = g
    if not any(merged.values()):
        raise ValueError("nothing to merge: both qrels are empty")
    return Qrels.from_dict(merged, source="<merged qrels>")


def restrict(qrels: Qrels, query_ids: set[str]) -> Qrels:
    return Qrels.from_dict({q: d for q, d in qrels.to_dict().items() if q in query_ids}, source="<qrels>")


# --- meta-evaluation ------------------------------------------------------------------------------


@dataclass
class MetaEvaluation:
    n_pairs: int
    labels: dict[str, Any]
    kendall_tau: float | None
    kendall_ci: list[float | None]
    tau_ap: float | None
    measure: str
    runs: list[dict[str, Any]]
    n_queries: int
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_pairs": self.n_pairs,
            **self.labels,
            "measure": self.measure,
            "kendall_tau": self.kendall_tau,
            "kendall_tau_ci": self.kendall_ci,
            "tau_ap": self.tau_ap,
            "n_runs": len(self.runs),
            "n_queries": self.n_queries,
            "runs": self.runs,
            "notes": self.notes,
        }


def _per_query_matrix(
    qrels: Qrels, runs: Sequence[Run], measure: str, query_ids: list[str], relevance_level: int
) -> npt.NDArray[np.float64]:
    """runs x queries values of `measure`; NaN where a query is not averaged (no relevant doc)."""
    col = {q: i for i, q in enumerate(query_ids)}
    out = np.full((len(runs), len(query_ids)), np.nan)
    for r, run in enumerate(runs):
        ev = evaluate(qrels, run, [measure], relevance_level=relevance_level)
        name = ev.measure_names[0]
        for q, values in ev.per_query.items():
            if q in col:
                out[r, col[q]] = values[name]
    return out


def _means(matrix: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    counts = np.sum(~np.isnan(matrix), axis=1)
    sums = np.nansum(matrix, axis=1)
    out: npt.NDArray[np.float64] = np.divide(sums, counts, out=np.zeros(len(matrix)), where=counts > 0)
    return out


def meta_evaluate(
    human: Qrels,
    llm: Qrels,
    runs: Mapping[str, Run],
    *,
    measure: str = "ndcg@10",
    relevance_level: int = 1,
    llm_relevant_grade: int | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> MetaEvaluation:
    """Per-label agreement on the pairs both qrels judge, and the agreement of the system rankings.

    Runs are scored on the queries both qrels judge. When the human qrels are binary and the LLM's graded,
    LLM grades are binarised at `llm_relevant_grade` (default 2) for the label agreement and for binary
    measures; nDCG keeps every grade. The Kendall tau interval resamples queries (seeded).
    """
    notes: list[str] = []
    h_pairs = judged_pairs(human)
    l_pairs = judged_pairs(llm)
    shared = sorted(set(h_pairs) & set(l_pairs))
    h_grades = [h_pairs[p] for p in shared]
    l_grades = [l_pairs[p] for p in shared]
    human_binary = max(h_pairs.values(), default=0) <= 1
    llm_graded = max(l_pairs.values(), default=0) > 1
    llm_level = relevance_level
    if human_binary and llm_graded:
        llm_level = llm_relevant_grade or DEFAULT_LLM_RELEVANT_GRADE
        l_grades = [int(g >= llm_level) for g in l_grades]
        notes.append(f"human qrels are binary: LLM grades >= {llm_level} count as relevant (1), lower as 0")
    elif llm_relevant_grade is not None:
        llm_level = llm_relevant_grade
    if shared:
        top = max(max(h_grades), max(l_grades), 1)
        scale = list(range(min(min(h_grades), min(l_grades), 0), top + 1))
        agree = agreement(h_grades, l_grades, labels=scale, n_boot=n_boot, seed=seed).to_dict()
        labels = {k: agree[k] for k in ("kappa", "kappa_ci", "weighted_kappa", "weighted_kappa_ci")}
        labels.update(accuracy=agree["accuracy"], confusion=agree["confusion"])
    else:
        labels = {
            "kappa": None,
            "kappa_ci": [None, None],
            "weighted_kappa": None,
            "weighted_kappa_ci": [None, None],
        }
        notes.append("the two qrels judge no pair in common: no label agreement")

    names = list(runs)
    run_list = [runs[n] for n in names]
    common = set(human.query_ids) & set(llm.query_ids)
    query_ids = sorted(common)
    if not query_ids:
        raise ValueError("the two qrels share no query: the system rankings cannot be compared")
    if len(common) < max(len(human.query_ids), len(llm.query_ids)):
        notes.append(f"runs are scored on the {len(common)} queries both qrels judge")
    canonical = parse_measure(measure).name
    hm = _per_query_matrix(restrict(human, common), run_list, canonical, query_ids, relevance_level)
    lm = _per_query_matrix(restrict(llm, common), run_list, canonical, query_ids, llm_level)
    h_scores, l_scores = _means(hm), _means(lm)
    tau = kendall_tau(h_scores, l_scores) if len(names) >= 2 else None
    tap = tau_ap(h_scores, l_scores) if len(names) >= 2 else None

    def boot_tau(idx: npt.NDArray[np.int64]) -> float | None:
        return kendall_tau(_means(hm[:, idx]), _means(lm[:, idx]))

    ci: list[float | None] = (
        bootstrap_interval(boot_tau, len(query_ids), n_boot=n_boot, seed=seed).as_list()
        if len(names) >= 2
        else [None, None]
    )
    if len(names) < 3:
        notes.append("fewer than three runs: a ranking correlation says little")
    h_rank = _ranks_desc(h_scores)
    l_rank = _ranks_desc(l_scores)
    rows = [
        {"run": n, "human": float(h), "llm": float(lx), "rank_human": int(hr), "rank_llm": int(lr)}
        for n, h, lx, hr, lr in zip(names, h_scores, l_scores, h_rank, l_rank, strict=True)
    ]
    return MetaEvaluation(
        n_pairs=len(shared),
        labels=labels,
        kendall_tau=tau,
        kendall_ci=ci,
        tau_ap=tap,
        measure=canonical,
        runs=rows,
        n_queries=len(query_ids),
        notes=notes,
    )


def _ranks_desc(scores: npt.NDArray[np.float64]) -> list[int]:
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[order] = np.arange(1, len(scores) + 1)
    return [int(r) for r in ranks]


@dataclass
class JudgingReport:
    n_pooled: int
    n_human_judged: int
    n_sent: int
    n_labelled: int
    n_failed: int
    grades: dict[int, int]
    failures: list[dict[str, str]]
    usage: dict[str, Any]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_pooled": self.n_pooled,
            "n_human_judged": self.n_human_judged,
            "n_sent_to_judge": self.n_sent,
            "n_labelled": self.n_labelled,
            "n_failed": self.n_failed,
            "grades": {str(k): v for k, v in sorted(self.grades.items())},
            "failures": self.failures,
            "usage": self.usage,
            "seconds": round(self.seconds, 3),
        }


async def judge_pool(
    runs: Sequence[Run],
    *,
    depth: int,
    queries: Mapping[str, str],
    docs: Mapping[str, str],
    llm: LLMClient,
    human: Qrels | None = None,
    all_pairs: bool = False,
    concurrency: int = 8,
) -> tuple[Qrels | None, list[PairLabel], JudgingReport]:
    """Pool, label and merge: (qrels to write, the LLM labels, a report). The qrels are the merge with
    the human qrels (human wins) when given, else the LLM labels alone; None when nothing was graded."""
    started = time.perf_counter()
    pooled = pool(runs, depth)
    todo = pairs_to_label(pooled, human, all_pairs=all_pairs)
    labels = await label_pairs(todo, queries=queries, docs=docs, llm=llm, concurrency=concurrency)
    llm_qrels = labels_to_qrels(labels)
    out = merge_qrels(human, llm_qrels) if human is not None else llm_qrels
    n_pooled = sum(len(d) for d in pooled.values())
    known = judged_pairs(human) if human is not None else {}
    n_human = sum(1 for q, ds in pooled.items() for d in ds if (q, d) in known)
    grades: dict[int, int] = {}
    for lab in labels:
        if lab.grade is not None:
            grades[lab.grade] = grades.get(lab.grade, 0) + 1
    failures = [
        {"query_id": lab.query_id, "doc_id": lab.doc_id, "reason": lab.reason}
        for lab in labels
        if lab.grade is None
    ]
    report = JudgingReport(
        n_pooled=n_pooled,
        n_human_judged=n_human,
        n_sent=len(todo),
        n_labelled=len(labels) - len(failures),
        n_failed=len(failures),
        grades=grades,
        failures=failures,
        usage=llm.usage.model_dump(),
        seconds=time.perf_counter() - started,
    )
    return out, labels, report
