"""Declared judge scales: a reply on another scale is never rescaled, conflicting fields are flagged.

Unit tests of the reader, then each case end to end through a judge over real HTTP to the scripted server.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter import metrics
from ragmeter.judges import JUDGES, judge_scales, relevance, retrieval_grade
from ragmeter.judges.parsing import ParseFailure, read_reply
from ragmeter.judges.scales import GRADE_1_10, PROPORTION, SCORE_0_10, TREC_0_3, Scale
from ragmeter.llm import from_spec
from ragmeter.llm.scripted import ScriptedRequest, Step

# --- the reader --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scale", "text", "why"),
    [
        (SCORE_0_10, '{"score": 0.8}', "reply on the 0-1 scale (score 0.8), asked 0-10"),
        (SCORE_0_10, "I would say 0.35.", "reply on the 0-1 scale (score 0.35), asked 0-10"),
        (GRADE_1_10, '{"grade": 0.7}', "reply on the 0-1 scale (grade 0.7), asked 1-10"),
        (TREC_0_3, '{"grade": 0.5}', "reply on the 0-1 scale (grade 0.5), asked 0-3"),
        (SCORE_0_10, '{"rating": 0.9}', "reply on the 0-1 scale (score 0.9), asked 0-10"),
    ],
)
def test_a_reply_on_the_0_1_scale_is_refused_not_rescaled(scale: Scale, text: str, why: str) -> None:
    with pytest.raises(ParseFailure) as err:
        read_reply(text, scale)
    assert str(err.value) == why


@pytest.mark.parametrize(
    ("text", "number"), [('{"score": 0}', 0.0), ('{"score": 1}', 1.0), ('{"score": 1.5}', 1.5)]
)
def test_zero_and_one_are_on_every_scale(text: str, number: float) -> None:
    got, _, flags = read_reply(text, SCORE_0_10)
    assert got == number and flags == []


@pytest.mark.parametrize(
    ("scale", "reply", "number", "flag"),
    [
        # the asked field wins; an out-of-range alias is flagged and not used
        (
            SCORE_0_10,
            {"grade": 12, "score": 1.7},
            1.7,
            "grade 12 out of range [0, 10] (ignored: score 1.7 used)",
        ),
        # the asked field out of range is clamped; the alias that disagrees is flagged as well
        (
            GRADE_1_10,
            {"grade": 12, "score": 1.7},
            10.0,
            "conflicting fields grade 12 and score 1.7 (grade used)",
        ),
        (SCORE_0_10, {"score": 7, "rating": 6}, 7.0, "conflicting fields score 7 and rating 6 (score used)"),
        (
            SCORE_0_10,
            {"score": 7, "rating": "high"},
            7.0,
            "rating 'high' is not a number (ignored: score 7 used)",
        ),
        (SCORE_0_10, {"Score": 4, "GRADE": 9}, 4.0, "conflicting fields score 4 and grade 9 (score used)"),
    ],
)
def test_alias_fields_that_disagree_are_flagged(
    scale: Scale, reply: dict[str, Any], number: float, flag: str
) -> None:
    got, _, flags = read_reply(json.dumps(reply), scale)
    assert got == number
    assert flag in flags


def test_aliases_that_agree_raise_no_flag_and_clamps_are_flagged() -> None:
    assert read_reply('{"score": 7, "grade": 7.0}', SCORE_0_10)[2] == []
    got, _, flags = read_reply('{"grade": 12}', GRADE_1_10)
    assert got == 10.0 and flags == ["grade 12 out of range [1, 10], clamped to 10"]
    got, _, flags = read_reply('{"grade": 2.6}', TREC_0_3)
    assert got == 3.0 and flags == ["grade 2.6 rounded to an integer"]


@given(
    st.floats(min_value=-50, max_value=50, allow_nan=False),
    st.sampled_from([SCORE_0_10, GRADE_1_10, TREC_0_3]),
)
def test_whatever_is_accepted_lies_on_the_scale(number: float, scale: Scale) -> None:
    try:
        got, _, _ = read_reply(json.dumps({scale.key: number}), scale)
    except ParseFailure as exc:
        assert 0 < number < 1 and "0-1 scale" in str(exc)
        return
    assert scale.lo <= got <= scale.hi
    assert not (0 < got < 1)


# --- declarations --------------------------------------------------------------------------------


def test_every_judge_declares_the_registered_range() -> None:
    for name, judge in JUDGES.items():
        assert judge.scale.range == metrics.get(name).range, name
        assert judge.version == judge.prompt.version
    scales = judge_scales()
    assert scales["groundedness"] == {"scale": "0-10", "asked": "score 0-10", "value_range": [0.0, 1.0]}
    assert scales["retrieval_grade"]["asked"] == "grade 1-10 (integer)"
    assert scales["factuality"] == {"scale": "0-1", "asked": None, "value_range": [0.0, 1.0]}
    assert JUDGES["citation_accuracy"].scale is PROPORTION


def test_score_judges_state_their_scale_in_the_prompt() -> None:
    # The prompt text asks for exactly the declared scale and field (the prompt is what the model sees).
    for judge in JUDGES.values():
        if judge.scale.asked:
            scale = judge.scale
            assert f'"{scale.key}": <' in judge.prompt.user, judge.name
            assert f"{scale.lo:g}-{scale.hi:g}" in judge.prompt.user.replace(" to ", "-"), judge.name


# --- end to end over HTTP --------------------------------------------------------------------------


def replies(*texts: dict[str, Any]) -> Callable[[ScriptedRequest], Step]:
    """The n-th request of a judgment gets the n-th reply (a re-ask is the second)."""

    def respond(req: ScriptedRequest) -> Step:
        return Step(text=json.dumps(texts[1 if req.is_reask else 0]))

    return respond


async def test_a_0_1_reply_is_null_with_the_reason_never_divided_again(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(replies({"reasoning": "good", "score": 0.8}, {"reasoning": "good", "score": 0.8}))
    llm = from_spec(f"openai-compatible:m@{srv.url}")
    result = await relevance("q", "an answer", llm=llm)
    await llm.aclose()
    assert result.value is None
    assert result.error == "unusable reply after a re-ask: reply on the 0-1 scale (score 0.8), asked 0-10"
    assert len(srv.requests) == 2
    reask = srv.requests[1].messages[-1]["content"]
    assert "reply on the 0-1 scale (score 0.8), asked 0-10" in reask


async def test_a_0_1_reply_corrected_on_the_re_ask_is_used_and_flagged(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(replies({"reasoning": "good", "score": 0.8}, {"reasoning": "good", "score": 8}))
    llm = from_spec(f"openai-compatible:m@{srv.url}")
    result = await relevance("q", "an answer", llm=llm)
    await llm.aclose()
    assert result.value == pytest.approx(0.8) and result.details["score_0_10"] == 8
    assert any("re-ask" in f and "0-1 scale" in f for f in result.details["flags"])
    assert result.details["attempts"] == 2


async def test_retrieval_grade_on_the_0_1_scale_is_null(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(replies({"reasoning": "ok", "grade": 0.9}, {"reasoning": "ok", "grade": 0.9}))
    llm = from_spec(f"openai-compatible:m@{srv.url}")
    result = await retrieval_grade("q", "a", ["chunk"], llm=llm, relevant_rank=2)
    await llm.aclose()
    assert result.value is None and result.error is not None and "asked 1-10" in result.error
    assert result.details["grade"] is None and result.details["position_weight"] == 0.95


async def test_conflicting_fields_are_flagged_in_the_result(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(replies({"reasoning": "x", "grade": 12, "score": 1.7}, {}))
    llm = from_spec(f"openai-compatible:m@{srv.url}")
    answer_result = await relevance("q", "an answer", llm=llm)
    grade_result = await retrieval_grade("q", "a", ["chunk"], llm=llm, relevant_rank=1)
    await llm.aclose()
    assert answer_result.value == pytest.approx(0.17)
    assert "grade 12 out of range [0, 10] (ignored: score 1.7 used)" in answer_result.details["flags"]
    assert grade_result.value == 10.0 and grade_result.details["total_score"] == 10.0
    assert set(grade_result.details["flags"]) >= {
        "grade 12 out of range [1, 10], clamped to 10",
        "conflicting fields grade 12 and score 1.7 (grade used)",
    }
    assert len(srv.requests) == 2  # flagged, not re-asked


def test_every_judge_stays_callable_after_every_judges_submodule_is_imported() -> None:
    """A submodule named like a judge (judges/relevance.py) replaced the `relevance` judge on the package as
    soon as anything imported it: the full suite then called a module."""
    import importlib
    import pkgutil

    import ragmeter.judges as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"ragmeter.judges.{info.name}")
    for name in JUDGES:
        assert callable(getattr(pkg, name, None)) or name not in dir(pkg), name
    assert callable(pkg.relevance) and callable(pkg.retrieval_grade)
