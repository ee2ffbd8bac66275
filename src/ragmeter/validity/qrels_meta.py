"""Meta-evaluation of LLM qrels against human qrels (UMBRELA's protocol): per-label agreement on the pairs both
judge, and how well the system ranking under the LLM qrels matches the one under the human qrels.

Both sides are scored on one query set: the queries both qrels judge, that every run retrieved for, and that
have a relevant document under both (a query missing from one side's means but not the other's would make the
two means incomparable). That overrides trec_eval's -c default (a judged query a run did not retrieve for
scores 0) for this comparison only; the set's size is reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import numpy.typing as npt

from ragmeter.ir import Qrels, Run, evaluate, parse_measure
from ragmeter.validity.agreement import agreement, bootstrap_interval, kendall_tau, resample_count
from ragmeter.validity.qrels_provenance import judged_pairs, keep_pairs, restrict
from ragmeter.validity.tau_ap import tau_ap, tau_ap_variant

# When human qrels are binary (0/1) and LLM grades are 0-3, a grade >= this counts as relevant when the two
# are compared label by label (TREC DL's and UMBRELA's binarisation: 2 = "highly relevant" and up).
DEFAULT_LLM_RELEVANT_GRADE = 2
# Graded measures: every positive grade is gain and the ideal ranking uses them all whatever the relevance
# level, so both sides keep the human relevance level (the level only decides which queries are averaged).
GRADED_FAMILIES = ("ndcg", "ndcg_exp")


@dataclass
class MetaEvaluation:
    n_pairs: int
    labels: dict[str, Any]  # the label agreement (kappa, accuracy, confusion, ...): top-level keys in to_dict
    measure: str
    kendall_tau: float | None
    kendall_ci: list[float | None]
    tau_ap: float | None
    n_queries: int
    runs: list[dict[str, Any]]
    tau_ap_variant: str | None = None
    queries_left_out: dict[str, int] = field(default_factory=dict)
    n_excluded_human_copies: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        # each field under its own name (as its siblings JudgingReport and Agreement do), `labels` spread out
        out = {
            _RENAMED.get(f.name, f.name): getattr(self, f.name) for f in fields(self) if f.name != "labels"
        }
        return {**self.labels, **out, "n_runs": len(self.runs)}


_RENAMED = {"kendall_ci": "kendall_tau_ci"}


def _per_query_matrix(
    qrels: Qrels, runs: Sequence[Run], measure: str, query_ids: list[str], relevance_level: int
) -> npt.NDArray[np.float64]:
    """runs x queries values of `measure`; NaN where a query is not averaged (no relevant doc)."""
    col = {q: i for i, q in enumerate(query_ids)}
    out = np.full((len(runs), len(query_ids)), np.nan)
    for r, run in enumerate(runs):
        ev = evaluate(qrels, run, [measure], relevance_level=relevance_level, missing="ignore")
        name = ev.measure_names[0]
        for q, values in ev.per_query.items():
            if q in col:
                out[r, col[q]] = values[name]
    return out


def ranks_desc(scores: Sequence[float] | npt.NDArray[np.float64]) -> list[int]:
    """1 = best; tied scores share the best rank of their group (competition ranking: 1, 1, 3)."""
    arr = np.asarray(scores, dtype=np.float64)
    return [int((arr > s).sum()) + 1 for s in arr]


def _label_agreement(
    shared: list[tuple[str, str]], h_pairs: dict[Any, int], l_pairs: dict[Any, int], llm_level: int | None,
    n_boot: int, seed: int,
) -> dict[str, Any]:  # fmt: skip
    h_grades = [h_pairs[p] for p in shared]
    l_grades = [l_pairs[p] for p in shared]
    if llm_level is not None:
        l_grades = [int(g >= llm_level) for g in l_grades]
    top = max(max(h_grades), max(l_grades), 1)
    scale = list(range(min(min(h_grades), min(l_grades), 0), top + 1))
    agree = agreement(h_grades, l_grades, labels=scale, n_resamples=n_boot, seed=seed).to_dict()
    labels = {k: agree[k] for k in ("kappa", "kappa_ci", "weighted_kappa", "weighted_kappa_ci")}
    labels.update(accuracy=agree["accuracy"], confusion=agree["confusion"], label_notes=agree["notes"])
    return labels


def meta_evaluate(
    human: Qrels,
    llm: Qrels,
    runs: Mapping[str, Run],
    *,
    measure: str = "ndcg@10",
    relevance_level: int = 1,
    llm_relevant_grade: int | None = None,
    llm_pairs: set[tuple[str, str]] | frozenset[tuple[str, str]] | None = None,
    n_resamples: int | None = None,
    seed: int = 0,
    n_boot: int | None = None,
) -> MetaEvaluation:
    """Per-label agreement on the pairs both qrels judge, and the agreement of the system rankings.

    `llm_pairs` (from a provenance sidecar): the pairs of `llm` that the LLM graded; the others (human grades
    copied by a merge) are left out and counted. When the human qrels are binary and the LLM's graded, LLM grades
    are binarised at `llm_relevant_grade` (default 2) for the label agreement and for binary measures; graded
    measures (nDCG) keep every grade and the human relevance level. The Kendall tau interval resamples queries.
    Intervals: 1,000 resamples unless `n_resamples` says otherwise (`n_boot` is its deprecated old name).
    """
    n_boot = resample_count(n_resamples, n_boot)
    notes: list[str] = []
    excluded = 0
    if llm_pairs is not None:
        kept = keep_pairs(llm, set(llm_pairs))
        excluded = len(judged_pairs(llm)) - (len(judged_pairs(kept)) if kept is not None else 0)
        if kept is None:
            raise ValueError("the LLM qrels hold no LLM-graded pair (all are copies of human grades)")
        llm = kept
        if excluded:
            notes.append(f"{excluded} pairs of the LLM qrels are copies of human grades: left out")
    h_pairs, l_pairs = judged_pairs(human), judged_pairs(llm)
    shared = sorted(set(h_pairs) & set(l_pairs))
    human_binary = max(h_pairs.values(), default=0) <= 1
    llm_graded = max(l_pairs.values(), default=0) > 1
    binarise = human_binary and llm_graded
    llm_level = (llm_relevant_grade or DEFAULT_LLM_RELEVANT_GRADE) if binarise else llm_relevant_grade
    if binarise:
        notes.append(f"human qrels are binary: LLM grades >= {llm_level} count as relevant (1), lower as 0")
    if shared:
        labels = _label_agreement(shared, h_pairs, l_pairs, llm_level if binarise else None, n_boot, seed)
        notes.extend(labels.pop("label_notes"))
    else:
        labels = {
            "kappa": None,
            "kappa_ci": [None, None],
            "weighted_kappa": None,
            "weighted_kappa_ci": [None, None],
        }
        notes.append("the two qrels judge no pair in common: no label agreement")

    canonical = parse_measure(measure)
    names = list(runs)
    run_list = [runs[n] for n in names]
    judged_by_both = set(human.query_ids) & set(llm.query_ids)
    if not judged_by_both:
        raise ValueError("the two qrels share no query: the system rankings cannot be compared")
    retrieved = set.intersection(*(set(r.query_ids) for r in run_list)) if run_list else set()
    candidates = sorted(judged_by_both & retrieved)
    if not candidates:
        raise ValueError("no query is judged by both qrels and retrieved by every run")
    level = relevance_level if canonical.family in GRADED_FAMILIES else (llm_level or relevance_level)
    hm = _per_query_matrix(
        restrict(human, set(candidates)), run_list, canonical.name, candidates, relevance_level
    )
    lm = _per_query_matrix(restrict(llm, set(candidates)), run_list, canonical.name, candidates, level)
    both = np.asarray(~(np.isnan(hm).any(axis=0) | np.isnan(lm).any(axis=0)), dtype=np.bool_)
    query_ids = [q for q, ok in zip(candidates, both.tolist(), strict=True) if ok]
    left_out = {
        "judged_by_one_qrels_only": len(set(human.query_ids) ^ set(llm.query_ids)),
        "not_retrieved_by_every_run": len(judged_by_both - retrieved),
        "no_relevant_doc_on_one_side": int((~both).sum()),
    }
    if not query_ids:
        raise ValueError("no query has a relevant document under both qrels: the rankings cannot be compared")
    notes.append(
        f"both sides scored on the same {len(query_ids)} queries (judged by both qrels, retrieved by every run, "
        f"a relevant doc under both); left out: {left_out}"
    )
    hm, lm = hm[:, both], lm[:, both]
    h_scores, l_scores = hm.mean(axis=1), lm.mean(axis=1)
    tau = kendall_tau(h_scores, l_scores) if len(names) >= 2 else None
    tap = tau_ap(h_scores, l_scores) if len(names) >= 2 else None

    def boot_tau(idx: npt.NDArray[np.int64]) -> float | None:
        return kendall_tau(hm[:, idx].mean(axis=1), lm[:, idx].mean(axis=1))

    ci: list[float | None] = (
        bootstrap_interval(boot_tau, len(query_ids), n_resamples=n_boot, seed=seed).as_list()
        if len(names) >= 2
        else [None, None]
    )
    if len(names) < 3:
        notes.append("fewer than three runs: a ranking correlation says little")
    rows = [
        {"run": n, "human": float(h), "llm": float(lx), "rank_human": hr, "rank_llm": lr}
        for n, h, lx, hr, lr in zip(
            names, h_scores, l_scores, ranks_desc(h_scores), ranks_desc(l_scores), strict=True
        )
    ]
    variant = tau_ap_variant(h_scores, l_scores) if tap is not None else None
    return MetaEvaluation(
        n_pairs=len(shared), labels=labels, kendall_tau=tau, kendall_ci=ci, tau_ap=tap, measure=canonical.name,
        runs=rows, n_queries=len(query_ids), notes=notes, tau_ap_variant=variant,
        n_excluded_human_copies=excluded, queries_left_out=left_out,
    )  # fmt: skip
