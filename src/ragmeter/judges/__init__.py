"""LLM-as-judge metrics. Every judge is a declaration (`Judge`: name, prompt, reply schema, scale) run by
one shared body; calling it returns a MetricResult and never raises: a failure is value=None with the
reason in `error`; the prompt version is in `version`.

    result = await factuality(question, answer, contexts, llm=client)
    results = await run_judges(["factuality", "retrieval_grade"], question=..., answer=...,
                               contexts=..., ground_truth=..., llm=client)
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ragmeter.errors import InputError
from ragmeter.judges.answer import ANSWER_CORRECTNESS, COHERENCE, COMPLETENESS, GROUNDEDNESS, RELEVANCE
from ragmeter.judges.citation import CITATION_ACCURACY
from ragmeter.judges.core import one_query
from ragmeter.judges.factuality import FACTUALITY, batch_size
from ragmeter.judges.judge import Judge, JudgeInput
from ragmeter.judges.ragchecker import RC_JUDGES
from ragmeter.judges.retrieval import (
    RETRIEVAL_GRADE,
    position_weight,
    retrieval_grade,
    summarize_retrieval_grades,
)
from ragmeter.judges.scales import Scale
from ragmeter.judges.sufficiency import ABSTAINED, CONTEXT_SUFFICIENCY
from ragmeter.llm.base import LLMClient
from ragmeter.models import MetricResult

JUDGES: dict[str, Judge] = {
    j.name: j
    for j in (
        FACTUALITY,
        GROUNDEDNESS,
        RELEVANCE,
        ANSWER_CORRECTNESS,
        COHERENCE,
        COMPLETENESS,
        CITATION_ACCURACY,
        RETRIEVAL_GRADE,
    )
}
# Reference-free, opt-in: the sufficient-context autorater and the abstention judge (judges/sufficiency.py).
THIN_CONTEXT_JUDGES: dict[str, Judge] = {j.name: j for j in (CONTEXT_SUFFICIENCY, ABSTAINED)}
# Every judge a run may name: the default ones above and the opt-in rc_* claim judges (RAGChecker's metrics).
ALL_JUDGES: dict[str, Judge] = {**JUDGES, **RC_JUDGES, **THIN_CONTEXT_JUDGES}

PROMPTS = {name: judge.prompt for name, judge in JUDGES.items()}

# The judges as functions: `await groundedness(question, answer, contexts, llm=client)`.
factuality = FACTUALITY
groundedness = GROUNDEDNESS
relevance = RELEVANCE
answer_correctness = ANSWER_CORRECTNESS
coherence = COHERENCE
completeness = COMPLETENESS
citation_accuracy = CITATION_ACCURACY
context_sufficiency = CONTEXT_SUFFICIENCY
abstained = ABSTAINED


def prompt_versions(names: Sequence[str] | None = None) -> dict[str, str]:
    """{judge name: prompt version}, to store with a run."""
    if names is None:
        return {n: j.version for n, j in JUDGES.items()}
    from ragmeter.judges.nugget_prompts import ASSIGN_NUGGETIZER

    # a nugget metric's values carry their exact version (prompt style and the set's hash; judges/nuggets.py)
    return {n: ASSIGN_NUGGETIZER.version if n.startswith("nugget_") else ALL_JUDGES[n].version for n in names}


def judge_scales(names: Sequence[str] | None = None) -> dict[str, dict[str, object]]:
    """{judge name: the scale it asks the model for and the range of the value it stores}."""
    return {n: ALL_JUDGES[n].scale.describe() for n in (names if names is not None else JUDGES)}


def check_judge_names(names: Sequence[str]) -> None:
    """Raise InputError naming any unknown judge (call this before a run starts)."""
    unknown = [n for n in names if n not in ALL_JUDGES]
    if unknown:
        raise InputError(
            f"unknown judge(s) {', '.join(map(repr, unknown))}; known: {', '.join(sorted(ALL_JUDGES))}",
            source="judges",
        )
    if "factuality" in names:
        batch_size()  # a bad RAGMETER_FACTUALITY_BATCH is an InputError before any call


async def run_judges(
    names: Sequence[str],
    *,
    question: str,
    answer: str | None,
    contexts: Sequence[str],
    ground_truth: str | None,
    llm: LLMClient,
    relevant_rank: int | None = None,
    query_id: str | None = None,
) -> dict[str, MetricResult]:
    """Run the named judges on one query concurrently (bounded by the client's concurrency).

    `contexts` are the retrieved texts in rank order (they are retrieval_grade's chunks).
    Unknown names raise InputError before any call; judges themselves never raise. The query's first
    judge call completes before the others start (`one_query`): they then find its prompt prefix cached.
    """
    check_judge_names(names)
    inp = JudgeInput(question, answer, contexts, ground_truth, relevant_rank, query_id)
    with one_query():
        results = await asyncio.gather(*(ALL_JUDGES[n].run(inp, llm) for n in names))
    return dict(zip(names, results, strict=True))


__all__ = [
    "ALL_JUDGES",
    "JUDGES",
    "PROMPTS",
    "Judge",
    "JudgeInput",
    "Scale",
    "abstained",
    "answer_correctness",
    "check_judge_names",
    "citation_accuracy",
    "coherence",
    "completeness",
    "context_sufficiency",
    "factuality",
    "groundedness",
    "judge_scales",
    "position_weight",
    "prompt_versions",
    "relevance",
    "retrieval_grade",
    "run_judges",
    "summarize_retrieval_grades",
]
