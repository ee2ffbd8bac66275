"""TREC-scale (0-3) relevance labels of (query, passage) pairs, UMBRELA-style.

The prompt follows UMBRELA (Upadhyay et al., 2024, "UMBRELA: UMbrela is the (Open-Source Reproduction of
the) Bing RELevance Assessor"), itself Thomas et al.'s (2023) Bing prompt: the same four grade definitions,
the same "important instruction" and the same steps (intent, match M, trustworthiness T, final score O).
One change: the reply is reasoning-first JSON, `{"reasoning": ..., "grade": 0-3}`, instead of
`##final score: N`, because small local models grade far better when they reason first in JSON mode (see
docs/judges.md). A `##final score: N` reply is still accepted (read from free text and flagged).

`prompt="umbrela"` sends UMBRELA's published zero-shot prompt with its settings instead (castorini/umbrela,
`prompts/qrel_zeroshot_bing.txt` and `gpt_judge.py`): system message "You are a helpful assistant.", the reply
"##final score: N" without reasoning, no JSON mode, frequency penalty 0.5, at most 100 tokens, the passage as
given, and a reply with no usable grade scored 0 (flagged), as UMBRELA does, with no re-ask. docs/judges.md
lists every difference between the two.

Like every judge, `trec_relevance` never raises: a failure is value=None with the reason.
"""

from __future__ import annotations

import re
import time
from typing import Any, Literal

from ragmeter.judges.core import ask, guarded, usage_details
from ragmeter.judges.judge import log_judgment
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


# UMBRELA's prompt, verbatim (zero-shot "bing"; its template file is stripped of the final newline).
UMBRELA = Prompt(
    "trec_relevance_umbrela",
    1,
    "You are a helpful assistant.",
    "\n".join(
        (
            "Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with the "
            "following meanings:",
            "0 = represent that the passage has nothing to do with the query, ",
            "1 = represents that the passage seems related to the query but does not answer it, ",
            "2 = represents that the passage has some answer for the query, but the answer may be a bit unclear, "
            "or hidden amongst extraneous information and ",
            "3 = represents that the passage is dedicated to the query and contains the exact answer.",
            "",
            "Important Instruction: Assign category 1 if the passage is somewhat related to the topic but not "
            "completely, category 2 if passage presents something very important related to the entire topic but "
            "also has some extra information and category 3 if the passage only and entirely refers to the topic. "
            "If none of the above satisfies give it category 0.",
            "",
            "Query: {query}",
            "Passage: {passage}",
            "",
            "Split this problem into steps:",
            "Consider the underlying intent of the search.",
            "Measure how well the content matches a likely intent of the query (M).",
            "Measure how trustworthy the passage is (T).",
            "Consider the aspects above and the relative importance of each, and decide on a final score (O). "
            "Final score must be an integer value only.",
            "Do not provide any code in result. Provide each score in the format of: ##final score: score without "
            "providing any reasoning.",
        )
    ),
    max_tokens=100,
)
UMBRELA_FREQUENCY_PENALTY = 0.5
PromptName = Literal["ours", "umbrela"]
PROMPTS: dict[str, Prompt] = {"ours": TREC_RELEVANCE, "umbrela": UMBRELA}

# UMBRELA's reading of a reply, in its order: a named score ("final score: 2", "\"o\": 2", "score is 2"), then a
# "category N", then any digit 0-3; the last occurrence of the first kind found; none: 0, counted as invalid.
_UMBRELA_READINGS = (
    re.compile(r"final[ _]score\"?\s*(?:is\s*|[:=-]\s*)?([0-3])"),
    re.compile(r"(?:overall[ _]score|overall|o_score|score|\bo)\"?'?\s*(?:is\s*|[:=-]\s*)?([0-3])"),
    re.compile(r"category\s*(?:is\s*|would be\s*|[:=-]\s*)?([0-3])"),
    re.compile(r"([0-3])"),
)


def umbrela_grade(text: str) -> tuple[int, bool]:
    """(grade, usable) by UMBRELA's rule: an unusable reply is graded 0."""
    reply = text.strip().lower()
    for pattern in _UMBRELA_READINGS:
        found = pattern.findall(reply)
        if found:
            return int(found[-1]), True
    return 0, False


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
    prompt: PromptName = "ours",
) -> MetricResult:
    """The TREC grade (0 = irrelevant ... 3 = perfectly relevant) of `passage` for `query`.

    value is the grade as a float (None on failure, with `error`); details hold the reasoning, flags
    (clamped or rounded grades, free-text replies, UMBRELA's unusable replies scored 0) and token usage.
    """
    started = time.perf_counter()
    chosen = PROMPTS[prompt]

    async def body() -> MetricResult:
        if not passage or not str(passage).strip():
            return MetricResult(name=NAME, value=None, error="the passage is empty", version=chosen.version)
        if prompt == "umbrela":
            return await _umbrela(query, passage, llm, query_id, doc_id)
        flags: list[str] = []
        values = {"query": " ".join(query.split()), "passage": _cut(passage, flags)}
        reply = await ask(llm, chosen, values, _parse, query_id=query_id)
        grade, reasoning = reply.value
        details: dict[str, Any] = {
            "reasoning": reasoning,
            "grade": int(grade),
            "doc_id": doc_id,
            "flags": flags + reply.flags,
            **usage_details(reply),
        }
        return MetricResult(name=NAME, value=grade, details=details, version=chosen.version)

    result = await guarded(NAME, chosen, body)
    log_judgment(NAME, query_id, llm, result, time.perf_counter() - started)
    return result


async def _umbrela(
    query: str, passage: str, llm: LLMClient, query_id: str | None, doc_id: str | None
) -> MetricResult:
    resp = await llm.complete(
        UMBRELA.messages(query=query, passage=passage),
        json=False,
        metric=NAME,
        query_id=query_id,
        max_tokens=UMBRELA.max_tokens,
        frequency_penalty=UMBRELA_FREQUENCY_PENALTY,
    )
    grade, usable = umbrela_grade(resp.text)
    flags = [] if usable else ["unusable reply scored 0 (UMBRELA's rule)"]
    if resp.finish_reason == "length":
        flags.append(f"the reply hit the {UMBRELA.max_tokens}-token limit")
    details: dict[str, Any] = {
        "reasoning": "",
        "reply": resp.text[:500],
        "grade": grade,
        "doc_id": doc_id,
        "flags": flags,
        "attempts": 1,
        "cached": resp.cached,
        "tokens": {"prompt": resp.usage.prompt_tokens, "completion": resp.usage.completion_tokens},
        "latency_s": round(resp.latency_s, 6),
    }
    return MetricResult(name=NAME, value=float(grade), details=details, version=UMBRELA.version)


__all__ = ["GRADES", "NAME", "PROMPTS", "TREC_RELEVANCE", "UMBRELA", "trec_relevance", "umbrela_grade"]
