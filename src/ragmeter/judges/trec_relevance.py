"""TREC-scale (0-3) relevance labels of (query, passage) pairs, UMBRELA-style.

The prompt follows UMBRELA (Upadhyay et al., 2024, "UMBRELA: UMbrela is the (Open-Source Reproduction of
the) Bing RELevance Assessor"), itself Thomas et al.'s (2023) Bing prompt: the same four grade definitions,
the same "important instruction" and the same steps (intent, match M, trustworthiness T, final score O).
One change: the reply is reasoning-first JSON, `{"reasoning": ..., "grade": 0-3}`, instead of
`##final score: N`, because small local models grade far better when they reason first in JSON mode (see
docs/judges.md). A `##final score: N` reply is still accepted (read from free text and flagged).

Like every judge, `trec_relevance` never raises: a failure is value=None with the reason.
"""

from __future__ import annotations

from typing import Any

from ragmeter.judges.core import ask, guarded, usage_details
from ragmeter.judges.parsing import read_score
from ragmeter.judges.prompts import Prompt
from ragmeter.llm.base import LLMClient
from ragmeter.models import MetricResult

NAME = "trec_relevance"
GRADES = (0, 1, 2, 3)
MAX_PASSAGE_CHARS = 4000

TREC_RELEVANCE = Prompt(
    NAME,
    1,
    "You are a search quality rater evaluating the relevance of passages. You reply in JSON.",
    """Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with the following meanings:
0 = represent that the passage has nothing to do with the query,
1 = represents that the passage seems related to the query but does not answer it,
2 = represents that the passage has some answer for the query, but the answer may be a bit unclear, or hidden amongst extraneous information and
3 = represents that the passage is dedicated to the query and contains the exact answer.

Important Instruction: Assign category 1 if the passage is somewhat related to the topic but not completely, category 2 if passage presents something very important related to the entire topic but also has some extra information and category 3 if the passage only and entirely refers to the topic. If none of the above satisfies give it category 0.

Query: {query}
Passage: {passage}

Split this problem into steps:
Consider the underlying intent of the search.
Measure how well the content matches a likely intent of the query (M).
Measure how trustworthy the passage is (T).
Consider the aspects above and the relative importance of each, and decide on a final score (O). Final score must be an integer value only.
First give your reasoning in two or three sentences, then the final score.
Reply with JSON only: {{"reasoning": "<two or three sentences>", "grade": <integer 0-3>}}""",
    max_tokens=400,
)


def _parse(text: str) -> tuple[tuple[float, str], list[str]]:
    grade, obj, flags = read_score(
        text, "grade", 0.0, 3.0, integer=True, aliases=("score", "final score", "final_score")
    )
    reasoning = obj.get("reasoning", "")
    return (grade, reasoning if isinstance(reasoning, str) else str(reasoning)), flags


def _cut(passage: str, flags: list[str]) -> str:
    text = " ".join(str(passage).split())
    if len(text) > MAX_PASSAGE_CHARS:
        flags.append(f"passage cut to {MAX_PASSAGE_CHARS} characters")
        text = text[:MAX_PASSAGE_CHARS] + " ..."
    return text


async def trec_relevance(
    query: str,
    passage: str,
    *,
    llm: LLMClient,
    query_id: str | None = None,
    doc_id: str | None = None,
) -> MetricResult:
    """The TREC grade (0 = irrelevant ... 3 = perfectly relevant) of `passage` for `query`.

    value is the grade as a float (None on failure, with `error`); details hold the reasoning, flags
    (clamped or rounded grades, free-text replies) and token usage.
    """
    prompt = TREC_RELEVANCE

    async def body() -> MetricResult:
        if not passage or not str(passage).strip():
            return MetricResult(name=NAME, value=None, error="the passage is empty", version=prompt.version)
        flags: list[str] = []
        values = {"query": " ".join(query.split()), "passage": _cut(passage, flags)}
        reply = await ask(llm, prompt, values, _parse, query_id=query_id)
        grade, reasoning = reply.value
        details: dict[str, Any] = {
            "reasoning": reasoning,
            "grade": int(grade),
            "doc_id": doc_id,
            "flags": flags + reply.flags,
            **usage_details(reply),
        }
        return MetricResult(name=NAME, value=grade, details=details, version=prompt.version)

    return await guarded(NAME, prompt, body)


__all__ = ["GRADES", "NAME", "TREC_RELEVANCE", "trec_relevance"]
