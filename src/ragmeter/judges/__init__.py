"""LLM-as-judge metrics. Every judge is an async function that returns a MetricResult and never
raises: a failure is value=None with the reason in `error`; the prompt version is in `version`.

    result = await factuality(question, answer, contexts, llm=client)
    results = await run_judges(["factuality", "retrieval_grade"], question=..., answer=...,
                               contexts=..., ground_truth=..., llm=client)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from ragmeter.errors import InputError
from ragmeter.judges.metrics import (
    answer_correctness,
    citation_accuracy,
    coherence,
    completeness,
    factuality,
    groundedness,
    relevance,
)
from ragmeter.judges.prompts import ALL as PROMPTS
from ragmeter.judges.retrieval import position_weight, retrieval_grade, summarize_retrieval_grades
from ragmeter.llm.base import LLMClient
from ragmeter.models import MetricResult

JUDGES: dict[str, Callable[..., Any]] = {
    "factuality": factuality,
    "groundedness": groundedness,
    "relevance": relevance,
    "answer_correctness": answer_correctness,
    "coherence": coherence,
    "completeness": completeness,
    "citation_accuracy": citation_accuracy,
    "retrieval_grade": retrieval_grade,
}


def prompt_versions(names: Sequence[str] | None = None) -> dict[str, str]:
    """{judge name: prompt version}, to store with a run."""
    return {n: PROMPTS[n].version for n in (names if names is not None else JUDGES)}


def check_judge_names(names: Sequence[str]) -> None:
    """Raise InputError naming any unknown judge (call this before a run starts)."""
    unknown = [n for n in names if n not in JUDGES]
    if unknown:
        raise InputError(
            f"unknown judge(s) {', '.join(map(repr, unknown))}; known: {', '.join(sorted(JUDGES))}",
            source="judges",
        )


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
    Unknown names raise InputError before any call; judges themselves never raise.
    """
    check_judge_names(names)

    async def one(name: str) -> MetricResult:
        if name == "retrieval_grade":
            return await retrieval_grade(
                question, ground_truth, contexts, llm=llm, relevant_rank=relevant_rank, query_id=query_id
            )
        fn = JUDGES[name]
        result: MetricResult = await fn(
            question, answer or "", contexts, llm=llm, ground_truth=ground_truth, query_id=query_id
        )
        return result

    results = await asyncio.gather(*(one(n) for n in names))
    return dict(zip(names, results, strict=True))


__all__ = [
    "JUDGES",
    "PROMPTS",
    "answer_correctness",
    "check_judge_names",
    "citation_accuracy",
    "coherence",
    "completeness",
    "factuality",
    "groundedness",
    "position_weight",
    "prompt_versions",
    "relevance",
    "retrieval_grade",
    "run_judges",
    "summarize_retrieval_grades",
]
