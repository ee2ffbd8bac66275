"""The calibration items of an escalating judge: run the cheap judge over the items people labelled and keep,
for each, its confidence and whether its verdict agrees with the person's label.

Confidence is measured one of two ways (ragmeter.judges.confidence):
- "logprob": one judgment per item, its verdict tokens' probability (the client asks for log-probabilities);
  an item whose server sent none gets confidence 0 (answered only by a threshold of 0; at run time too);
- "repeats": k judgments per item (repeat r at the given temperature with seed + r, repeat 0 from the cache
  like `run --repeat`); the verdict is the majority of the valid ones, the confidence their share.
Verdicts are put on the human scale (binary or ordinal) as `judges validate` does; agreement is equality.
A failed judgment (every repeat failed) is left out and counted.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ragmeter.errors import InputError
from ragmeter.judges.confidence import repeat_confidence
from ragmeter.llm.base import LLMClient
from ragmeter.llm.sampling import resampled
from ragmeter.models import EvalDataset, MetricResult
from ragmeter.validity.judge_validation import (
    infer_scale,
    judge_items,
    judge_range,
    labelled_queries,
    to_human_scale,
)


@dataclass(frozen=True)
class CalibrationItems:
    query_ids: list[str]
    confidences: list[float]
    agreements: list[bool]
    n_failed: int
    prompt_version: str | None


async def calibration_items(
    dataset: EvalDataset,
    metric: str,
    *,
    llm: LLMClient,
    confidence: str = "logprob",
    repeats: int = 5,
    temperature: float = 0.7,
    seed: int = 42,
    concurrency: int = 8,
    scale: tuple[float, float] | None = None,
) -> CalibrationItems:
    from ragmeter.judges import check_judge_names

    check_judge_names([metric])
    queries = labelled_queries(dataset, metric)
    human_scale = infer_scale([q.human_labels[metric] for q in queries], scale)
    if human_scale.kind == "continuous":
        raise InputError(
            f"the human labels of {metric!r} are continuous: escalation needs binary or integer labels",
            source="--labels",
        )
    corpus = {d.doc_id: (f"{d.title}\n{d.text}" if d.title else d.text) for d in dataset.corpus or []}
    jrange = judge_range(metric)
    if confidence == "logprob":
        llm.logprobs = True
        results = await judge_items(queries, metric, llm=llm, corpus=corpus, concurrency=concurrency)
        per_item = [[r] for r in results]
    elif confidence == "repeats":
        if repeats < 2:
            raise InputError(f"--repeats must be >= 2, got {repeats}", source="--repeats")

        async def one(r: int) -> list[MetricResult]:
            with resampled(temperature, seed + r, cache=r == 0):
                return await judge_items(queries, metric, llm=llm, corpus=corpus, concurrency=concurrency)

        runs = await asyncio.gather(*(one(r) for r in range(repeats)))
        per_item = [list(each) for each in zip(*runs, strict=True)]
    else:
        raise InputError(f"unknown confidence {confidence!r}: logprob or repeats", source="--confidence")
    ids: list[str] = []
    confs: list[float] = []
    agrees: list[bool] = []
    failed = 0
    version = None
    for q, results in zip(queries, per_item, strict=True):
        version = version or next((r.version for r in results if r.version), None)
        valid = [r for r in results if r.value is not None]
        if not valid:
            failed += 1
            continue
        verdicts = [to_human_scale(float(r.value), jrange, human_scale) for r in valid]  # type: ignore[arg-type]
        if confidence == "repeats":
            majority = repeat_confidence(verdicts)
            assert majority is not None
            verdict, conf = majority
        else:
            verdict, conf = verdicts[0], _logprob_confidence(valid[0])
        ids.append(q.query_id)
        confs.append(conf)
        agrees.append(verdict == float(q.human_labels[metric]))
    return CalibrationItems(ids, confs, agrees, failed, version)


def _logprob_confidence(result: MetricResult) -> float:
    value = result.details.get("confidence")
    return float(value) if isinstance(value, int | float) else 0.0
