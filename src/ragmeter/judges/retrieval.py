"""Retrieval grade: an LLM grade 1-10 of the retrieved chunks, weighted by where the relevant doc ranked.

total_score = grade x position_weight(rank); pass rates count a query as passed when its total
score reaches 8.0, 7.0 or 6.5, over ALL queries (a null grade does not pass).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragmeter.judges import prompts as P
from ragmeter.judges.core import ask, guarded, numbered, usage_details
from ragmeter.judges.parsing import read_score
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


def _rank_details(rank: int | None) -> dict[str, Any]:
    return {
        "relevant_rank": rank,
        "position_weight": position_weight(rank),
        "hit@1": 1.0 if rank is not None and rank == 1 else 0.0,
        "hit@5": 1.0 if rank is not None and 1 <= rank <= 5 else 0.0,
    }


def _grade_parser(text: str) -> tuple[tuple[float, str], list[str]]:
    grade, obj, flags = read_score(text, "grade", 1.0, 10.0, integer=True, aliases=("score", "rating"))
    reasoning = obj.get("reasoning", "")
    return (grade, reasoning if isinstance(reasoning, str) else str(reasoning)), flags


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
    prompt = P.RETRIEVAL_GRADE

    async def body() -> MetricResult:
        base = _rank_details(relevant_rank)
        if not chunks:
            # Nothing retrieved is, on the scale's own terms, "unrelated": no model call needed.
            details = {
                "reasoning": "nothing was retrieved",
                "grade": 1.0,
                "total_score": 1.0 * base["position_weight"],
                **base,
                "flags": ["no chunks retrieved: grade 1 without asking the model"],
            }
            return MetricResult(name=prompt.name, value=1.0, details=details, version=prompt.version)
        flags: list[str] = []
        values = {
            "question": question,
            "expected_answer": expected_answer or "(not given: judge by the question alone)",
            "chunks": numbered(chunks, flags, what="chunk"),
        }
        reply = await ask(llm, prompt, values, _grade_parser, query_id=query_id)
        grade, reasoning = reply.value
        details = {
            "reasoning": reasoning,
            "grade": grade,
            "total_score": round(grade * base["position_weight"], 6),
            **base,
            "flags": flags + reply.flags,
            **usage_details(reply),
        }
        return MetricResult(name=prompt.name, value=grade, details=details, version=prompt.version)

    result = await guarded(prompt.name, prompt, body)
    if result.value is None:
        # The rank-based parts are still known when the grade is not.
        result.details = {
            **_rank_details(relevant_rank),
            "grade": None,
            "total_score": None,
            **result.details,
        }
    return result


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
