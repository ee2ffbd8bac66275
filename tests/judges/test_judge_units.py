"""Parsing, position weights, pass rates and the judges' no-call paths."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter.errors import InputError
from ragmeter.judges import (
    PROMPTS,
    answer_correctness,
    citation_accuracy,
    position_weight,
    prompt_versions,
    retrieval_grade,
    run_judges,
    summarize_retrieval_grades,
)
from ragmeter.judges.citation import split_cited_sentences
from ragmeter.judges.parsing import ParseFailure, extract_json, find_number, read_score
from ragmeter.llm import from_spec
from ragmeter.llm.scripted import ScriptedRequest, Step
from ragmeter.models import MetricResult

# --- lenient extraction ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"grade": 7, "reasoning": "ok"}',
        '```json\n{"grade": 7, "reasoning": "ok"}\n```',
        'Sure! Here it is: {"grade": 7, "reasoning": "ok"} Hope that helps.',
        '```\n{"grade": 7, "reasoning": "ok"}',
        'prefix {"reasoning": "a } brace and a \\" quote", "grade": 7} suffix {"other": 1}',
    ],
)
def test_extract_json_finds_the_object(text: str) -> None:
    obj = extract_json(text)
    assert obj is not None and obj["grade"] == 7


def test_extract_json_gives_none_without_an_object() -> None:
    assert extract_json("no json here") is None
    assert extract_json('{"grade": 7, "reasoning": "cut') is None
    assert extract_json("[1, 2]") is None


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ('{"reasoning": "fine", "grade": 8, "reas', 8.0),
        ("I would grade this a 6.", 6.0),
        ("Overall: 9/10 because it is right.", 9.0),
        ("The grade is 4 since 3 chunks are off.", 4.0),
        ("Seven chunks, so I say 5.", 5.0),
    ],
)
def test_find_number_in_prose_and_broken_json(text: str, number: float) -> None:
    found = find_number(text, ("grade",))
    assert found is not None and found[0] == number


@pytest.mark.parametrize(
    "text",
    [
        '{"reasoning": "fine", "grade": 1',  # maybe a cut "10": refused
        '{"reasoning": "a grade of 5 would be',  # numbers inside a JSON string do not count
        "There are 3 chunks and 2 are fine.",  # two numbers, no key: ambiguous
        "ten out of ten",
    ],
)
def test_find_number_refuses_ambiguous_text(text: str) -> None:
    assert find_number(text, ("grade",)) is None


def test_read_score_clamps_rounds_and_rejects_words() -> None:
    grade, _, flags = read_score('{"grade": 12}', "grade", 1, 10, integer=True)
    assert grade == 10 and any("clamped" in f for f in flags)
    grade, _, flags = read_score('{"grade": 0}', "grade", 1, 10, integer=True)
    assert grade == 1 and flags
    grade, _, flags = read_score('{"grade": 7.6}', "grade", 1, 10, integer=True)
    assert grade == 8 and any("rounded" in f for f in flags)
    grade, _, flags = read_score('{"grade": "7"}', "grade", 1, 10)
    assert grade == 7 and flags == []
    with pytest.raises(ParseFailure, match="not a number"):
        read_score('{"grade": "ten"}', "grade", 1, 10)
    with pytest.raises(ParseFailure, match="empty"):
        read_score("  ", "grade", 1, 10)
    with pytest.raises(ParseFailure, match="no 'grade' field"):
        read_score('{"reasoning": "x"}', "grade", 1, 10)


@given(st.text(max_size=200))
def test_parsing_never_raises_anything_but_parse_failure(text: str) -> None:
    try:
        value, _, _ = read_score(text, "grade", 1, 10, integer=True)
    except ParseFailure:
        return
    assert 1 <= value <= 10


# --- citations ---------------------------------------------------------------------------------


def test_split_cited_sentences() -> None:
    answer = "Paris is the capital [1]. It has 2 million people.[2, 3] It is nice. [4] Bye!"
    assert split_cited_sentences(answer) == [
        ("Paris is the capital.", [1]),
        ("It has 2 million people.", [2, 3]),
        ("It is nice.", [4]),
        ("Bye!", []),
    ]


# --- retrieval grade arithmetic ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("rank", "weight"),
    [(1, 1.0), (2, 0.95), (3, 0.95), (4, 0.85), (5, 0.85), (6, 0.6), (50, 0.6), (None, 0.6)],
)
def test_position_weight(rank: int | None, weight: float) -> None:
    assert position_weight(rank) == weight


def grade_result(grade: float | None, rank: int | None) -> MetricResult:
    w = position_weight(rank)
    details = {"grade": grade, "total_score": None if grade is None else grade * w, "position_weight": w}
    return MetricResult(name="retrieval_grade", value=grade, details=details, error=None if grade else "x")


def test_pass_rates_count_all_queries_and_nulls_fail() -> None:
    results = [
        grade_result(10, 1),  # 10.0
        grade_result(8, 2),  # 7.6
        grade_result(7, 1),  # 7.0
        grade_result(10, 7),  # 6.0
        grade_result(None, 1),  # failed
    ]
    s = summarize_retrieval_grades(results)
    assert s["avg_llm_grade"] == pytest.approx((10 + 8 + 7 + 10) / 4)
    assert s["avg_total_score"] == pytest.approx((10 + 7.6 + 7 + 6) / 4)
    assert s["pass_rate_8"] == pytest.approx(100 * 1 / 5)
    assert s["pass_rate_7"] == pytest.approx(100 * 3 / 5)
    assert s["pass_rate_6_5"] == pytest.approx(100 * 3 / 5)
    empty = summarize_retrieval_grades([])
    assert empty["avg_llm_grade"] is None and empty["pass_rate_8"] is None


# --- no-call paths and registry ----------------------------------------------------------------


async def test_judges_that_need_nothing_from_the_model(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(lambda req: Step(text="{}"))
    llm = from_spec(f"openai-compatible:m@{srv.url}")
    no_gt = await answer_correctness("q", "an answer", [], llm=llm)
    assert no_gt.value is None and no_gt.error is not None and "ground-truth" in no_gt.error
    no_cites = await citation_accuracy("q", "An answer without citations.", ["ctx"], llm=llm)
    assert no_cites.value is None and no_cites.error is not None and "cites no sources" in no_cites.error
    bad_cites = await citation_accuracy("q", "Claim [3]. Other [7].", ["only one"], llm=llm)
    assert bad_cites.value == 0.0 and len(bad_cites.details["invalid_citations"]) == 2
    nothing = await retrieval_grade("q", "a", [], llm=llm, relevant_rank=None)
    assert nothing.value == 1.0 and nothing.details["total_score"] == pytest.approx(0.6)
    assert nothing.details["flags"]
    await llm.aclose()
    assert srv.requests == []


async def test_failed_grade_keeps_rank_details(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(lambda req: Step(text=""))
    llm = from_spec(f"openai-compatible:m@{srv.url}")
    r = await retrieval_grade("q", "a", ["chunk"], llm=llm, relevant_rank=3)
    await llm.aclose()
    assert r.value is None and r.error is not None and "empty reply" in r.error
    assert r.details["position_weight"] == 0.95 and r.details["hit@1"] == 0.0 and r.details["hit@5"] == 1.0
    assert r.details["total_score"] is None
    assert len(srv.requests) == 2  # the first ask and one re-ask
    reask = srv.requests[1].body["messages"]
    assert reask[-2]["role"] == "assistant" and "empty reply" in reask[-1]["content"]


async def test_budget_exhaustion_is_a_null_with_reason(scripted) -> None:  # type: ignore[no-untyped-def]
    def respond(req: ScriptedRequest) -> Step:
        return Step(text=json.dumps({"reasoning": "ok", "score": 5}))

    srv = await scripted(respond)
    llm = from_spec(f"openai-compatible:m@{srv.url}", budget=1)
    results = await run_judges(
        ["relevance", "coherence"], question="q", answer="a", contexts=[], ground_truth=None, llm=llm
    )
    await llm.aclose()
    values = sorted((r.value is None, r.error or "") for r in results.values())
    assert values[0] == (False, "") and values[1][0] is True and "budget" in values[1][1]


async def test_run_judges_rejects_unknown_names() -> None:
    with pytest.raises(InputError, match="unknown judge"):
        await run_judges(
            ["factuality", "vibes"],
            question="q",
            answer="a",
            contexts=[],
            ground_truth=None,
            llm=None,  # type: ignore[arg-type]
        )


def test_prompt_versions_are_stable_and_distinct() -> None:
    versions = prompt_versions()
    assert set(versions) == set(PROMPTS)
    assert len(set(versions.values())) == len(versions)
    assert all(v.startswith(f"{n}/v") for n, v in versions.items())
    assert prompt_versions() == versions


async def test_factuality_drops_claims_with_numbers_the_answer_does_not_state(scripted) -> None:  # type: ignore[no-untyped-def]
    # Seen with the local 1.5B model: the extractor invented "built between 1887 and 1925" for the answer
    # "completed in 1925" and the verifier then called it SUPPORTED. Such a claim is not the answer's.
    def respond(req: ScriptedRequest) -> Step:
        if "split the answer into" in req.user:
            claims = [
                "The Eiffel Tower was completed in 1925.",
                "The Eiffel Tower was built between 1887 and 1925.",
            ]
            return Step(text=json.dumps({"claims": claims}))
        verdict = {"claim": 1, "reasoning": "1889 in the source", "verdict": "CONTRADICTED"}
        return Step(text=json.dumps({"verdicts": [verdict]}))

    srv = await scripted(respond)
    llm = from_spec(f"openai-compatible:m@{srv.url}")
    from ragmeter.judges import factuality

    result = await factuality(
        "When?", "The Eiffel Tower was completed in 1925.", ["Completed in 1889."], llm=llm
    )
    assert result.value == 0.0 and result.details["n_claims"] == 1
    assert result.details["invented_claims"] == ["The Eiffel Tower was built between 1887 and 1925."]
    assert len(srv.requests) == 2  # one extraction, one verification: the invented claim is never checked
    # an answer without numbers: both scripted claims are invented, so nothing is checked
    only_invented = await factuality("When?", "It was finished long ago.", ["Completed in 1889."], llm=llm)
    await llm.aclose()
    assert only_invented.value is None and "numbers the answer does not contain" in (
        only_invented.error or ""
    )
