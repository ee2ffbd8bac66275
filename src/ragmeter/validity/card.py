"""A judge card: how far one judge (spec + metric + prompt version) can be trusted on a set of items.

It holds agreement with people where the items carry human labels (the numbers of `judges validate`:
`ragmeter.validity.judge_validation.build_report` on the same items), self-consistency over repeats,
the bias battery (`ragmeter.validity.perturb`), a self-judging flag and the drift anchors (the items' ids,
a fingerprint of their inputs and the judge's verdicts on them). Building it calls the judge; everything
else here is plain data.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np

from ragmeter.errors import InputError
from ragmeter.llm.base import LLMClient
from ragmeter.models import EvalDataset, EvalQuery, MetricResult
from ragmeter.stats.intervals import wilson
from ragmeter.stats.krippendorff import repeat_stability
from ragmeter.stats.sign import net_shift
from ragmeter.validity import perturb as P
from ragmeter.validity.drift import check_anchors, drift
from ragmeter.validity.judge_validation import (
    RELEVANCE_JUDGE,
    build_report,
    judge_items,
    judge_range,
)
from ragmeter.validity.models import Anchors, Consistency, JudgeCard, Shift

__all__ = ["DEFAULT_TOLERANCE", "PASSAGE_JUDGES", "JudgeCard", "build_card", "card_items", "fingerprint"]
DEFAULT_TOLERANCE = 0.05
# Judges that grade passages (the perturbation goes into every passage), not an answer.
PASSAGE_JUDGES = frozenset({"retrieval_grade", RELEVANCE_JUDGE})


def _graded_text(query: EvalQuery, metric: str) -> str:
    answer = query.metadata.get("answer")
    return answer if isinstance(answer, str) else ""


def card_items(
    dataset: EvalDataset, metric: str, *, sample: int | None = None, seed: int = 42
) -> list[EvalQuery]:
    """The dataset's queries the judge can grade (an answer in metadata["answer"], or passages for a
    passage judge), their contexts resolved into metadata["contexts"]; a seeded sample of `sample`."""
    from ragmeter.validity.judge_validation import _contexts

    corpus = {d.doc_id: (f"{d.title}\n{d.text}" if d.title else d.text) for d in dataset.corpus or []}
    out = []
    for q in dataset.queries:
        contexts = _contexts(q, corpus)
        if metric in PASSAGE_JUDGES and not contexts:
            continue
        if metric not in PASSAGE_JUDGES and not isinstance(q.metadata.get("answer"), str):
            continue
        out.append(q.model_copy(update={"metadata": {**q.metadata, "contexts": contexts}}))
    if not out:
        what = "passages (metadata.contexts or relevant docs)" if metric in PASSAGE_JUDGES else "answer"
        raise InputError(f"no query of dataset {dataset.name!r} has an {what} for {metric!r} to judge")
    if sample is not None and sample < len(out):
        if sample < 1:
            raise InputError(f"--sample must be >= 1, got {sample}", source="--sample")
        keep = set(random.Random(seed).sample(range(len(out)), sample))
        out = [q for i, q in enumerate(out) if i in keep]
    return out


def fingerprint(items: Sequence[EvalQuery]) -> str:
    """sha256 of every anchor's inputs (id, question, answer, contexts, ground truth), in order."""
    rows = [
        [q.query_id, q.question, q.metadata.get("answer"), q.metadata.get("contexts"), q.ground_truth_answer]
        for q in items
    ]
    return hashlib.sha256(json.dumps(rows, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _with_text(q: EvalQuery, metric: str, change: P.TextChange, index: int) -> tuple[EvalQuery, EvalQuery]:
    meta = dict(q.metadata)
    if metric in PASSAGE_JUDGES:
        variants = [change(c, q.question, index) for c in meta["contexts"]]
        pert = {**meta, "contexts": [v.perturbed for v in variants]}
        base = {**meta, "contexts": [v.baseline for v in variants]}
    else:
        v = change(_graded_text(q, metric), q.question, index)
        pert, base = {**meta, "answer": v.perturbed}, {**meta, "answer": v.baseline}
    return q.model_copy(update={"metadata": pert}), q.model_copy(update={"metadata": base})


def _signs(perturbed: Sequence[MetricResult], baseline: Sequence[MetricResult]) -> tuple[list[int], int]:
    signs, failed = [], 0
    for p, b in zip(perturbed, baseline, strict=True):
        if p.value is None or b.value is None:
            failed += 1
            continue
        signs.append(int(np.sign(p.value - b.value)))
    return signs, failed


def _shift(name: str, baseline: str, signs: list[int], failed: int, tolerance: float, seed: int) -> Shift:
    s = net_shift(signs, seed=seed)
    side = s.beyond(tolerance)
    return Shift(
        perturbation=name,
        baseline=baseline,
        n=s.n,
        n_failed=failed,
        favour=s.favour,
        against=s.against,
        ties=s.ties,
        net_shift=s.shift,
        ci95=s.interval,
        p_value=s.p_value,
        flagged=side != 0,
        direction={1: "in favour", -1: "against", 0: ""}[side],
    )


def _consistency(runs: Sequence[Sequence[MetricResult]], metric: str, seed: int) -> Consistency:
    grades = np.array(
        [[np.nan if r.value is None else r.value for r in row] for row in zip(*runs, strict=True)]
    )
    lo, hi = judge_range(metric)
    stab = repeat_stability(grades, level="interval", threshold=(lo + hi) / 2, seed=seed)
    valid = np.isfinite(grades).sum(axis=1) >= 2
    n = int(valid.sum())
    flips = round((stab.flip_share or 0.0) * n)
    return Consistency(
        repeats=len(runs),
        n=n,
        flips=flips,
        flip_share=stab.flip_share,
        flip_share_ci95=wilson(flips, n) if n else None,
        alpha=stab.alpha,
        alpha_ci95=stab.interval,
    )


def _same_model(judge: str, generator: str | None) -> bool:
    if not generator:
        return False

    def model(spec: str) -> str:
        return spec.split("@", 1)[0].strip().lower()

    return judge.strip() == generator.strip() or model(judge) == model(generator)


async def build_card(
    dataset: EvalDataset,
    metric: str,
    *,
    llm: LLMClient,
    judge_spec: str,
    sample: int | None = None,
    repeats: int = 2,
    perturbations: Sequence[str] = P.ALL_PERTURBATIONS,
    tolerance: float = DEFAULT_TOLERANCE,
    generator: str | None = None,
    seed: int = 42,
    concurrency: int = 8,
    scale: tuple[float, float] | None = None,
    against: JudgeCard | None = None,
) -> JudgeCard:
    """Judge the items, their repeats and every perturbation, and build the card (no store here).

    With `against`, the items must be that card's anchors (checked before any call) and the card reports
    the label drift from it."""
    from ragmeter.judges import ALL_JUDGES, check_judge_names

    if metric != RELEVANCE_JUDGE:
        check_judge_names([metric])
    unknown = [p for p in perturbations if p not in P.ALL_PERTURBATIONS]
    if unknown:
        raise InputError(
            f"unknown perturbation {unknown[0]!r}; known: {', '.join(P.ALL_PERTURBATIONS)}",
            source="--perturbations",
        )
    if repeats < 1:
        raise InputError(f"--repeats must be >= 1, got {repeats}", source="--repeats")
    if not 0 <= tolerance < 1:
        raise InputError(f"--tolerance must be in [0, 1), got {tolerance}", source="--tolerance")
    items = card_items(dataset, metric, sample=sample, seed=seed)
    if against is not None:
        check_anchors(metric, [q.query_id for q in items], fingerprint(items), against)
    started = time.perf_counter()

    async def judge(qs: Sequence[EvalQuery]) -> list[MetricResult]:
        return await judge_items(qs, metric, llm=llm, corpus={}, concurrency=concurrency)

    runs = [await judge(items) for _ in range(repeats)]
    original = runs[0]
    bias: list[Shift] = []
    for name in perturbations:
        if name == P.CONTEXTS_REVERSED:
            rev = [
                q.model_copy(
                    update={
                        "metadata": {**q.metadata, "contexts": P.reversed_contexts(q.metadata["contexts"])}
                    }
                )
                for q in items
            ]
            signs, failed = _signs(await judge(rev), original)
            bias.append(_shift(name, "original", signs, failed, tolerance, seed))
            continue
        change, baseline = P.TEXT_PERTURBATIONS[name]
        pairs = [_with_text(q, metric, change, i) for i, q in enumerate(items)]
        pert_results = await judge([p for p, _ in pairs])
        base_results = original if baseline == "original" else await judge([b for _, b in pairs])
        signs, failed = _signs(pert_results, base_results)
        bias.append(_shift(name, baseline, signs, failed, tolerance, seed))
    seconds = time.perf_counter() - started
    labelled = [(q, r) for q, r in zip(items, original, strict=True) if metric in q.human_labels]
    notes: list[str] = []
    agreement = None
    if labelled:
        report = build_report(
            [q for q, _ in labelled],
            [r for _, r in labelled],
            metric,
            judge=llm.spec_public,
            usage={},
            seconds=0.0,
            scale=scale,
            seed=seed,
        )
        agreement = {k: v for k, v in report.to_dict().items() if k not in ("items", "usage", "judge")}
    else:
        notes.append("no item has a human label for this metric: no agreement with people")
    if repeats < 2:
        notes.append("one judgment per item: no self-consistency (give --repeats 2 or more)")
    self_judging = {
        "generator": generator,
        "flagged": _same_model(judge_spec, generator),
        "rule": "flagged when the judge spec (or its model, without the URL) equals the generator's",
    }
    if generator is None:
        notes.append("no --generator given: self-judging not checked")
    judge_obj = ALL_JUDGES.get(metric)
    card = JudgeCard(
        judge_spec=judge_spec,
        judge=llm.spec_public,
        metric=metric,
        prompt_version=judge_obj.version if judge_obj is not None else None,
        dataset=dataset.name,
        n_items=len(items),
        seed=seed,
        tolerance=tolerance,
        master_keys={"version": P.MASTER_KEYS_VERSION, "keys": list(P.MASTER_KEYS)},
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        agreement=agreement,
        consistency=_consistency(runs, metric, seed) if repeats >= 2 else None,
        bias=bias,
        self_judging=self_judging,
        anchors=Anchors(
            ids=[q.query_id for q in items],
            fingerprint=fingerprint(items),
            values={q.query_id: r.value for q, r in zip(items, original, strict=True)},
        ),
        usage=llm.usage.model_dump(),
        seconds=round(seconds, 3),
        notes=notes,
    )
    if against is not None:
        card.drift = drift(card, against)
    return card
