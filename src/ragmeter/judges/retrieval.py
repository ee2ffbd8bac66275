"""Retrieval grade: an LLM grade 1-10 of the retrieved chunks, weighted by where the relevant doc ranked.

total_score = grade x position_weight(rank); pass rates count a query as passed when its total
score reaches 8.0, 7.0 or 6.5, over ALL queries (a null grade does not pass).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ragmeter.judges.prompts as P
from ragmeter.judges.judge import Judge, JudgeInput, layout_values
from ragmeter.judges.scales import GRADE_1_10
from ragmeter.llm.base import LLMClient
from ragmeter.models import MetricResult

PASS_THRESHOLDS = {"pass_rate_8": 8.0, "pass_rate_7": 7.0, "pass_rate_6_5": 6.5}


def position_weight(rank: int | None) -> float:
    """1.0 at rank 1, 0.95 at ranks 2-3, 0.85 at 4-5, 0.6 deeper or not found (rank None)."""
    if rank is None or rank < 1:
        return 0.6
    if rank == 1:
        return 1.0
    if rank <= 3:
        return 0.95
    if rank <= 5:
        return 0.85
    return 0.6


def _known(inp: JudgeInput, grade: float | None) -> dict[str, Any]:
    """The rank-based details, known whether or not the model graded."""
    rank = inp.relevant_rank
    weight = position_weight(rank)
    return {
        "grade": grade,
        "total_score": None if grade is None else round(grade * weight, 6),
        "relevant_rank": rank,
        "position_weight": weight,
        "hit@1": 1.0 if rank is not None and rank == 1 else 0.0,
        "hit@5": 1.0 if rank is not None and 1 <= rank <= 5 else 0.0,
    }


def _nothing_retrieved(judge: Judge, inp: JudgeInput) -> MetricResult | None:
    """Nothing retrieved is, on the scale's own terms, "unrelated": grade 1 with no model call."""
    if inp.contexts:
        return None
    details = {
        "reasoning": "nothing was retrieved",
        **_known(inp, 1.0),
        "flags": ["no chunks retrieved: grade 1 without asking the model"],
    }
    return judge.result(1.0, details=details)


RETRIEVAL_GRADE = Judge(
    "retrieval_grade",
    P.RETRIEVAL_GRADE,
    GRADE_1_10,
    layout_values,
    needs=(),
    known=_known,
    shortcut=_nothing_retrieved,
    description="grade 1-10 of how well the retrieved chunks answer the question with the expected answer",
)


async def retrieval_grade(
    question: str,
    expected_answer: str | None,
    chunks: Sequence[str],
    *,
    llm: LLMClient,
    relevant_rank: int | None = None,
    query_id: str | None = None,
) -> MetricResult:
    """Grade 1-10 of how well `chunks` (texts in rank order) answer the question with the expected
    answer. `relevant_rank` (1-based) is where the first relevant doc was retrieved, None if not."""
    inp = JudgeInput(question, None, chunks, expected_answer, relevant_rank, query_id)
    return await RETRIEVAL_GRADE.run(inp, llm)


def summarize_retrieval_grades(results: Sequence[MetricResult]) -> dict[str, float | None]:
    """avg_llm_grade and avg_total_score over valid grades; pass rates in percent of ALL queries."""
    n = len(results)
    grades = [r.value for r in results if r.value is not None]
    totals = [
        float(r.details["total_score"])
        for r in results
        if r.value is not None and r.details.get("total_score") is not None
    ]
    out: dict[str, float | None] = {
        "n_queries": float(n),
        "n_graded": float(len(grades)),
        "avg_llm_grade": sum(grades) / len(grades) if grades else None,
        "avg_total_score": sum(totals) / len(totals) if totals else None,
    }
    for name, threshold in PASS_THRESHOLDS.items():
        passed = sum(1 for t in totals if t >= threshold - 1e-9)
        out[name] = 100.0 * passed / n if n else None
    return out
