"""Every judge against every fault of a scripted server over real HTTP: the result is correct or
null with a reason, never an exception or NaN, and a batch always finishes."""

from __future__ import annotations

import asyncio
import json
import math
import random
from collections.abc import Callable
from typing import Any

import pytest

from ragmeter.judges import JUDGES, PROMPTS, run_judges
from ragmeter.judges.prompts import layout_name, task_of
from ragmeter.llm import from_spec
from ragmeter.llm.base import LLMClient
from ragmeter.llm.scripted import ScriptedRequest, Step
from ragmeter.models import MetricResult

QUESTION = "What is the capital of France, and how many people live there?"
ANSWER = "Paris is the capital of France [1]. It has about 2.1 million residents [2]. It is a lovely city."
CONTEXTS = [
    "Paris is the capital and largest city of France.",
    "The City of Paris has an estimated population of 2,102,650 residents.",
]
GROUND_TRUTH = "Paris; about 2.1 million people live in the city proper."

# The claims the scripted model extracts, with the verdict it gives each (two ways of saying it).
CLAIMS = [
    ("Paris is the capital of France.", "SUPPORTED"),
    ("Paris has about 2.1 million residents.", "supported"),
    ("Paris is a lovely city.", "NOT SUPPORTED"),
]

# Short enough for the "hang" fault to time out quickly, long enough for a loaded machine to answer.
FAULT_TIMEOUT_S = 1.5

NUMERIC = {"groundedness", "relevance", "answer_correctness", "coherence", "completeness", "retrieval_grade"}
STRUCTURED = {"factuality", "citation_accuracy"}


def judge_of(req: ScriptedRequest) -> str:
    name = layout_name(req.user)
    if name is None:
        raise AssertionError(f"unknown prompt: {req.user[-200:]}")
    return name


def good_payload(name: str, req: ScriptedRequest | None = None) -> dict[str, Any]:
    if name == "retrieval_grade":
        return {
            "reasoning": "Chunk 1 states that Paris is the capital; chunk 2 gives the population.",
            "grade": 9,
        }
    if name == "factuality":
        return {"claims": [claim for claim, _ in CLAIMS]}
    if name == "factuality_verify":
        listed = task_of(req.user).split("Claims:\n", 1)[1].split("\n\n", 1)[0] if req else ""
        claims = [line.split("] ", 1)[1] for line in listed.splitlines()]
        return {
            "verdicts": [
                {"claim": i, "reasoning": "compared with source 1 and 2", "verdict": dict(CLAIMS)[c]}
                for i, c in enumerate(claims, 1)
            ]
        }
    if name == "citation_accuracy":
        return {
            "citations": [
                {"id": "C1", "reasoning": "source 1 says so", "supported": True},
                {"id": "C2", "reasoning": "source 2 says so", "supported": True},
            ],
            "uncited_claims": [],
        }
    payload: dict[str, Any] = {
        "reasoning": "The answer states the capital and the population clearly.",
        "score": 8,
    }
    if name == "answer_correctness":
        payload.update(disagreements=[], missing=["that it is the city proper"])
    if name == "completeness":
        payload.update(missing=[])
    return payload


EXPECTED = {
    "retrieval_grade": 9.0,
    "factuality": 2 / 3,
    "citation_accuracy": 1.0,
    **{n: 0.8 for n in ("groundedness", "relevance", "answer_correctness", "coherence", "completeness")},
}
CLAMPED = {"retrieval_grade": 10.0, **{n: 1.0 for n in NUMERIC - {"retrieval_grade"}}}
FROM_PROSE = {"retrieval_grade": 7.0, **{n: 0.7 for n in NUMERIC - {"retrieval_grade"}}}


def with_number(name: str, value: object, req: ScriptedRequest) -> dict[str, Any]:
    """The good payload with its number replaced (for structured judges: an out-of-schema field)."""
    payload = good_payload(name, req)
    if name == "retrieval_grade":
        payload["grade"] = value
    elif name == "factuality":
        payload["claims"][0] = {"text": value}  # not a string: out of schema
    elif name == "factuality_verify":
        payload["verdict"] = f"MAYBE {value}"
    elif name == "citation_accuracy":
        payload["citations"][0]["supported"] = f"perhaps {value}"
    else:
        payload["score"] = value
    return payload


def fault_step(fault: str, name: str, req: ScriptedRequest) -> Step:
    good = json.dumps(good_payload(name, req))
    if fault == "rate_limit":
        return Step(status=429, headers={"Retry-After": "1"})
    if fault == "server_error":
        return Step(status=500)
    if fault == "hang":
        return Step(text=good, delay=30)
    if fault == "truncated":
        return Step(text=good[: len(good) // 2])
    if fault == "fenced":
        return Step(text=f"Here is my assessment:\n```json\n{good}\n```\n")
    if fault == "prose":
        return Step(text="After reading everything carefully, I would give it a 7.")
    if fault == "grade_12":
        return Step(text=json.dumps(with_number(name, 12, req)))
    if fault == "grade_ten":
        return Step(text=json.dumps(with_number(name, "ten", req)))
    if fault == "empty":
        return Step(text="")
    raise AssertionError(fault)


FAULTS = [
    "rate_limit",
    "server_error",
    "hang",
    "truncated",
    "fenced",
    "prose",
    "grade_12",
    "grade_ten",
    "empty",
]


def responder(fault: str, always: bool) -> Callable[[ScriptedRequest], Step]:
    def respond(req: ScriptedRequest) -> Step:
        name = judge_of(req)
        first_try = req.seen == 0 and not req.is_reask
        if always or first_try:
            return fault_step(fault, name, req)
        return Step(text=json.dumps(good_payload(name, req)))

    return respond


def expected_outcome(fault: str, always: bool, name: str) -> float | None:
    """The value the judge must return, or None when it must fail with a reason."""
    if fault == "fenced":
        return EXPECTED[name]
    if fault == "prose" and name in NUMERIC:
        return FROM_PROSE[name]
    if fault == "grade_12" and name in NUMERIC:
        return CLAMPED[name]
    if not always:
        return EXPECTED[name]  # retried or re-asked, then answered well
    return None


ERROR_WORDS = {
    "rate_limit": "429",
    "server_error": "500",
    "hang": "timed out",
    "truncated": "unusable reply",
    "prose": "unusable reply",
    "grade_12": "schema",
    "grade_ten": "unusable reply",
    "empty": "empty reply",
}


async def all_judges(llm: LLMClient, query_id: str = "q1") -> dict[str, MetricResult]:
    return await run_judges(
        list(JUDGES),
        question=QUESTION,
        answer=ANSWER,
        contexts=CONTEXTS,
        ground_truth=GROUND_TRUTH,
        llm=llm,
        relevant_rank=1,
        query_id=query_id,
    )


def check_invariants(name: str, result: MetricResult) -> None:
    assert result.name == name
    assert result.version == PROMPTS[name].version
    if result.value is None:
        assert result.error, f"{name}: a null value needs a reason"
    else:
        assert math.isfinite(result.value)
        assert result.error is None


@pytest.mark.parametrize("always", [False, True], ids=["once", "always"])
@pytest.mark.parametrize("fault", FAULTS)
async def test_every_judge_every_fault(scripted, fault: str, always: bool) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(responder(fault, always))
    llm = from_spec(f"openai-compatible:scripted@{srv.url}", timeout=FAULT_TIMEOUT_S, max_retries=1)
    results = await all_judges(llm)
    await llm.aclose()
    assert set(results) == set(JUDGES)
    for name, result in results.items():
        check_invariants(name, result)
        want = expected_outcome(fault, always, name)
        if want is None:
            assert result.value is None, f"{name} under {fault}: expected null, got {result.value}"
            assert result.error is not None
            word = ERROR_WORDS[fault]
            if fault == "grade_12":
                word = "schema"
            elif fault == "grade_ten" and name in NUMERIC:
                assert "not a number" in result.error
            assert word in result.error, f"{name} under {fault}: {result.error}"
        else:
            assert result.value == pytest.approx(want), (
                f"{name} under {fault}: {result.error} {result.details}"
            )
    if fault in ("prose", "grade_12"):
        for name in NUMERIC:
            flags = results[name].details["flags"]
            assert any(("free text" in f) or ("clamped" in f) for f in flags), (name, flags)
    if fault == "grade_12":
        assert results["retrieval_grade"].details["total_score"] == pytest.approx(10.0)


async def test_a_mixed_batch_finishes(scripted) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(5)

    def respond(req: ScriptedRequest) -> Step:
        name = judge_of(req)
        roll = rng.random()
        if roll < 0.5:
            return fault_step(rng.choice(FAULTS), name, req)
        return Step(text=json.dumps(good_payload(name, req)))

    srv = await scripted(respond)
    llm = from_spec(
        f"openai-compatible:scripted@{srv.url}", timeout=FAULT_TIMEOUT_S, max_retries=1, concurrency=4
    )
    batch = await asyncio.gather(*(all_judges(llm, query_id=f"q{i}") for i in range(6)))
    await llm.aclose()
    assert len(batch) == 6
    values = []
    for results in batch:
        assert set(results) == set(JUDGES)
        for name, result in results.items():
            check_invariants(name, result)
            values.append(result.value)
    assert any(v is None for v in values) and any(v is not None for v in values)
    assert srv.max_in_flight <= 4
