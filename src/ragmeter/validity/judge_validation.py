"""How far a judge agrees with people: run one judge over the items people labelled and compare.

The items are a dataset's queries with `human_labels[metric]`. What the judge sees:
- question: the query's question; ground truth: its `ground_truth_answer`;
- answer: `metadata["answer"]`, the answer people labelled (the answer judges need one);
- contexts: `metadata["contexts"]` (a list of texts) when given, else the corpus texts of `relevant_doc_ids`.

Judge values and human labels are put on one scale before accuracy, kappa and the confusion matrix
(`to_human_scale`); the rank correlations use the judge's raw values. A failed judgment stays in `items`
with `judge: null` and its reason, counts in `n_failed`, and is left out of the statistics.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ragmeter.errors import InputError
from ragmeter.llm.base import LLMClient
from ragmeter.models import EvalDataset, EvalQuery, MetricResult
from ragmeter.validity.agreement import (
    agreement,
    bootstrap_interval,
    kendall_tau,
    resample_count,
    spearman,
)

Kind = Literal["binary", "ordinal", "continuous"]


@dataclass(frozen=True)
class HumanScale:
    """The scale of the human labels of one metric: binary (bools or 0/1), ordinal (integers lo..hi) or
    continuous (any other numbers: no kappa, correlations only)."""

    kind: Kind
    lo: float
    hi: float

    @property
    def labels(self) -> list[int]:
        return list(range(int(self.lo), int(self.hi) + 1)) if self.kind != "continuous" else []


def infer_scale(values: Sequence[float | int | bool], given: tuple[float, float] | None = None) -> HumanScale:
    """binary: every label a bool or 0/1; ordinal: integers (scale lo..hi: `given`, else the labels' min
    and max); continuous otherwise."""
    if not values:
        raise InputError("no human labels to infer a scale from")
    nums = [float(v) for v in values]
    binary = all(isinstance(v, bool) for v in values) or set(nums) <= {0.0, 1.0}
    if binary and (given is None or tuple(given) == (0.0, 1.0)):
        return HumanScale("binary", 0.0, 1.0)
    if all(x == math.floor(x) for x in nums):
        lo, hi = given if given is not None else (min(nums), max(nums))
        if lo != math.floor(lo) or hi != math.floor(hi) or lo >= hi:
            raise InputError(f"an ordinal scale needs integer bounds lo < hi, got {lo:g}..{hi:g}")
        outside = [x for x in nums if not lo <= x <= hi]
        if outside:
            raise InputError(f"human label {outside[0]:g} is outside the scale {lo:g}..{hi:g}")
        return HumanScale("ordinal", float(lo), float(hi))
    lo, hi = given if given is not None else (min(nums), max(nums))
    return HumanScale("continuous", float(lo), float(hi))


def to_human_scale(value: float, judge_range: tuple[float, float], scale: HumanScale) -> float:
    """A judge value on the human scale: normalise it into [0, 1] with the judge's range, then
    binary -> 1 when >= 0.5 else 0; ordinal lo..hi -> lo + round-half-up(x * (hi - lo));
    continuous -> lo + x * (hi - lo)."""
    jlo, jhi = judge_range
    x = (value - jlo) / (jhi - jlo) if jhi > jlo else 0.0
    x = min(max(x, 0.0), 1.0)
    if scale.kind == "binary":
        return 1.0 if x >= 0.5 else 0.0
    if scale.kind == "ordinal":
        return scale.lo + math.floor(x * (scale.hi - scale.lo) + 0.5)
    return scale.lo + x * (scale.hi - scale.lo)


# The relevance judge behind `judge-qrels` (not a RAG metric, so not in the registry): grades 0-3 of one
# (query, passage) pair; the passage is the item's context (metadata.contexts, else its relevant docs' texts).
RELEVANCE_JUDGE = "trec_relevance"


def judge_range(metric: str) -> tuple[float, float]:
    """The judge's value range from the metric registry (0-1 when unknown or unbounded)."""
    if metric == RELEVANCE_JUDGE:
        return (0.0, 3.0)
    try:
        import ragmeter.metrics as rm

        lo, hi = rm.get(metric).range
    except Exception:  # the registry is optional here: an unregistered judge is on 0-1
        return (0.0, 1.0)
    return (float(lo), float(hi)) if lo is not None and hi is not None else (0.0, 1.0)


def labelled_queries(
    dataset: EvalDataset, metric: str, *, sample: int | None = None, seed: int = 42
) -> list[EvalQuery]:
    """The queries with a human label for `metric`, in dataset order (a seeded sample of `sample`)."""
    items = [q for q in dataset.queries if metric in q.human_labels]
    if not items:
        names = sorted({n for q in dataset.queries for n in q.human_labels})
        have = f"it has human labels for: {', '.join(names)}" if names else "it has no human labels"
        raise InputError(f"no query of dataset {dataset.name!r} has a human label for {metric!r}; {have}")
    if sample is not None and sample < len(items):
        if sample < 1:
            raise InputError(f"--sample must be >= 1, got {sample}", source="--sample")
        keep = set(random.Random(seed).sample(range(len(items)), sample))
        items = [q for i, q in enumerate(items) if i in keep]
    return items


def _contexts(query: EvalQuery, corpus: Mapping[str, str]) -> list[str]:
    given = query.metadata.get("contexts")
    if isinstance(given, list) and all(isinstance(c, str) for c in given):
        return list(given)
    return [corpus[d] for d in query.relevant_doc_ids if d in corpus]


@dataclass
class ValidationReport:
    metric: str
    judge: dict[str, Any]
    scale: HumanScale
    judge_range: tuple[float, float]
    n_items: int
    n_failed: int
    stats: dict[str, Any]
    items: list[dict[str, Any]]
    usage: dict[str, Any]
    seconds: float
    seed: int
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "judge": self.judge,
            "human_scale": {"kind": self.scale.kind, "lo": self.scale.lo, "hi": self.scale.hi},
            "judge_range": list(self.judge_range),
            "mapping": _MAPPING[self.scale.kind],
            "n_items": self.n_items,
            "n_failed": self.n_failed,
            **self.stats,
            "usage": {**self.usage, "seconds": round(self.seconds, 3)},
            "seed": self.seed,
            "notes": self.notes,
            "items": self.items,
        }


_MAPPING = {
    "binary": "judge value normalised to 0-1 by its range; >= 0.5 -> 1, else 0",
    "ordinal": "judge value normalised to 0-1 by its range, then lo + round-half-up(x * (hi - lo))",
    "continuous": "judge value rescaled linearly to the human scale; no kappa or accuracy",
}


async def judge_items(
    queries: Sequence[EvalQuery],
    metric: str,
    *,
    llm: LLMClient,
    corpus: Mapping[str, str],
    concurrency: int = 8,
) -> list[MetricResult]:
    """The judge's result on each query (same order), at most `concurrency` items in flight."""
    from ragmeter.judges import run_judges

    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(q: EvalQuery) -> MetricResult:
        answer = q.metadata.get("answer")
        if metric == RELEVANCE_JUDGE:
            from ragmeter.judges.trec_relevance import trec_relevance

            async with gate:
                passage = "\n".join(_contexts(q, corpus))
                return await trec_relevance(q.question, passage, llm=llm, query_id=q.query_id)
        async with gate:
            results = await run_judges(
                [metric],
                question=q.question,
                answer=answer if isinstance(answer, str) else None,
                contexts=_contexts(q, corpus),
                ground_truth=q.ground_truth_answer,
                llm=llm,
                query_id=q.query_id,
            )
        return results[metric]

    return list(await asyncio.gather(*(one(q) for q in queries)))


def build_report(
    queries: Sequence[EvalQuery],
    results: Sequence[MetricResult],
    metric: str,
    *,
    judge: Mapping[str, Any],
    usage: Mapping[str, Any],
    seconds: float,
    scale: tuple[float, float] | None = None,
    n_resamples: int = 1000,
    seed: int = 42,
) -> ValidationReport:
    """Compare the judge's results with the human labels (no model call here)."""
    human_raw = [q.human_labels[metric] for q in queries]
    hscale = infer_scale(human_raw, scale)
    jrange = judge_range(metric)
    items: list[dict[str, Any]] = []
    h_ok: list[float] = []
    j_ok: list[float] = []
    raw_ok: list[float] = []
    for q, r, h in zip(queries, results, human_raw, strict=True):
        human = float(h)
        if r.value is None:
            reason = r.error or "the judge gave no value"
            items.append({"id": q.query_id, "human": h, "judge": None, "judge_value": None, "reason": reason})
            continue
        mapped = to_human_scale(r.value, jrange, hscale)
        reasoning = r.details.get("reasoning", "")
        items.append(
            {
                "id": q.query_id,
                "human": h,
                "judge": int(mapped) if hscale.kind != "continuous" else mapped,
                "judge_value": r.value,
                "reason": reasoning if isinstance(reasoning, str) else str(reasoning),
            }
        )
        h_ok.append(human)
        j_ok.append(mapped)
        raw_ok.append(float(r.value))
    notes = []
    n_failed = len(queries) - len(h_ok)
    if n_failed:
        notes.append(
            f"{n_failed} of {len(queries)} judgments failed: kept in items, left out of the statistics"
        )
    if hscale.kind == "continuous":
        notes.append("continuous human labels: kappa, accuracy and the confusion matrix are not defined")
    if h_ok and hscale.kind != "continuous":
        stats = agreement(
            [int(x) for x in h_ok],
            [int(x) for x in j_ok],
            labels=hscale.labels,
            judge_scores=raw_ok,
            n_resamples=n_resamples,
            seed=seed,
        ).to_dict()
        notes.extend(stats.pop("notes"))
    elif h_ok:
        stats = _correlations_only(h_ok, raw_ok, n_resamples=n_resamples, seed=seed)
    else:
        stats = _empty_stats(0)
        notes.append("no judgment succeeded: nothing to compare")
    return ValidationReport(
        metric=metric,
        judge=dict(judge),
        scale=hscale,
        judge_range=jrange,
        n_items=len(queries),
        n_failed=n_failed,
        stats=stats,
        items=items,
        usage=dict(usage),
        seconds=seconds,
        seed=seed,
        notes=notes,
    )


def _empty_stats(n: int) -> dict[str, Any]:
    stats: dict[str, Any] = {"n": n, "confusion": None}
    for key in ("accuracy", "kappa", "weighted_kappa", "spearman", "kendall"):
        stats[key], stats[f"{key}_ci"] = None, [None, None]
    return stats


def _correlations_only(
    human: list[float], raw: list[float], *, n_resamples: int, seed: int
) -> dict[str, Any]:
    h = np.asarray(human)
    s = np.asarray(raw)
    stats = _empty_stats(len(human))
    stats["spearman"] = spearman(h, s)
    stats["kendall"] = kendall_tau(h, s)
    stats["spearman_ci"] = bootstrap_interval(
        lambda i: spearman(h[i], s[i]), len(human), n_resamples=n_resamples, seed=seed
    ).as_list()
    stats["kendall_ci"] = bootstrap_interval(
        lambda i: kendall_tau(h[i], s[i]), len(human), n_resamples=n_resamples, seed=seed
    ).as_list()
    return stats


async def validate_judge(
    dataset: EvalDataset,
    metric: str,
    *,
    llm: LLMClient,
    sample: int | None = None,
    seed: int = 42,
    concurrency: int = 8,
    scale: tuple[float, float] | None = None,
    n_resamples: int | None = None,
    n_boot: int | None = None,
) -> ValidationReport:
    """Run the judge `metric` on the dataset's items labelled for it and report the agreement (intervals:
    1,000 resamples of the items unless `n_resamples` says otherwise; `n_boot` is its deprecated old name)."""
    from ragmeter.judges import check_judge_names

    if metric != RELEVANCE_JUDGE:
        check_judge_names([metric])
    queries = labelled_queries(dataset, metric, sample=sample, seed=seed)
    corpus = {d.doc_id: (f"{d.title}\n{d.text}" if d.title else d.text) for d in dataset.corpus or []}
    started = time.perf_counter()
    results = await judge_items(queries, metric, llm=llm, corpus=corpus, concurrency=concurrency)
    seconds = time.perf_counter() - started
    return build_report(
        queries,
        results,
        metric,
        judge=llm.spec_public,
        usage=llm.usage.model_dump(),
        seconds=seconds,
        scale=scale,
        n_resamples=resample_count(n_resamples, n_boot),
        seed=seed,
    )
