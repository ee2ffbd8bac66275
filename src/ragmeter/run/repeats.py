"""Judge repeats (`run --repeat N`): each judged query is judged N times, so that a judge's agreement with
itself can be measured (ragmeter.score.stability) and each query's value is the mean over the repeats.

The query's outputs (retrieval, answer) are produced once; only the judge metrics are repeated. Repeat r
samples at the run's repeat temperature with seed `seed + r` (the run's seed); repeat 0 may be served from
the response cache like any judgment, the later repeats never are (a cached answer would repeat repeat 0).
The repeats of a query run at once, within the judge client's own concurrency limit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from ragmeter.llm.sampling import resampled
from ragmeter.models import EvalQuery, MetricResult, QueryEvalResult, mean_of_repeats
from ragmeter.records import RunRecord
from ragmeter.score.query import contexts_of, judge_scores, relevant_rank

# Temperature of the repeats when the run names none: judges run at 0, where a greedy judge (the local
# one) gives the same grade every time and repeats would measure nothing; 0.7 is the usual sampling
# temperature of self-consistency (Wang et al., 2023).
DEFAULT_TEMPERATURE = 0.7


def repeat_seeds(record: RunRecord) -> list[int]:
    """The seed of each repeat, by repeat index."""
    return [record.seed + r for r in range(record.repeat)]


def effective_sampling(judge: Any, temperature: float, seed: int) -> tuple[float | None, int | None]:
    """What a call of `judge` sends inside a `resampled` block (a backend that sends no temperature or seed
    keeps sending none); the requested values for a client without `sampling` (an in-process fake)."""
    with resampled(temperature, seed, cache=True):
        sampling = getattr(judge, "sampling", None)
    return sampling if isinstance(sampling, tuple) else (temperature, seed)


async def judge_repeats(
    names: Sequence[str], query: EvalQuery, result: QueryEvalResult, judge: Any, record: RunRecord
) -> tuple[dict[str, MetricResult], dict[str, list[MetricResult]]]:
    """({metric: mean over the repeats}, {metric: the value of each repeat}) for one answered query."""
    contexts = contexts_of(result, record.context_k)
    rank = relevant_rank(query, [d.doc_id for d in result.retrieved])
    temperature = record.repeat_temperature
    assert temperature is not None  # the record of a repeated run always names it (run.prepare)

    async def one(r: int, seed: int) -> dict[str, MetricResult]:
        sent = effective_sampling(judge, temperature, seed)
        with resampled(temperature, seed, cache=r == 0):
            values = await judge_scores(names, query, result.answer, contexts, rank, judge)
        sampling = {"repeat": r, "temperature": sent[0], "seed": sent[1], "cache": r == 0}
        return {
            n: v.model_copy(update={"details": {**v.details, "sampling": sampling}})
            for n, v in values.items()
        }

    runs = await asyncio.gather(*(one(r, s) for r, s in enumerate(repeat_seeds(record))))
    repeats = {
        n: [run.get(n) or MetricResult(name=n, value=None, error="not judged") for run in runs] for n in names
    }
    return {n: mean_of_repeats(n, values) for n, values in repeats.items()}, repeats
