"""A verdict's confidence from the log-probabilities of its tokens, read over real HTTP (scripted server)."""

from __future__ import annotations

import math

import pytest

from ragmeter.judges.confidence import repeat_confidence, verdict_probability

pytest.importorskip("aiohttp")

TOKENS = [('{"', -0.01), ("reason", -0.02), ('ing": "', -0.01), ("ok 3", -0.3), ('", "', -0.01),
          ("score", -0.05), ('": ', -0.01), ("8", -0.4), ("}", -0.001)]  # fmt: skip


def test_the_verdict_tokens_not_a_number_in_the_reasoning() -> None:
    assert verdict_probability(TOKENS, ("score", "grade")) == pytest.approx(math.exp(-0.4))
    # A number spelt by two tokens: both count; the key is found in any case.
    split = [('{"Grade": ', -0.1), ("1", -0.2), ("0", -0.3), ("}", 0.0)]
    assert verdict_probability(split, ("score", "grade")) == pytest.approx(math.exp(-0.5))
    assert verdict_probability([("no verdict here", -0.1)], ("score",)) is None
    assert verdict_probability([], ("score",)) is None


def test_repeat_confidence_is_the_majority_share() -> None:
    assert repeat_confidence([1.0, 1.0, 0.0, 1.0]) == (1.0, 0.75)
    assert repeat_confidence([1.0, 0.0]) == (0.0, 0.5)  # a tie goes to the lower verdict
    assert repeat_confidence([]) is None


async def test_judge_reads_logprobs_only_when_the_client_asks(scripted: object) -> None:
    from ragmeter.judges import run_judges
    from ragmeter.llm import from_spec
    from ragmeter.llm.scripted import Step

    text = "".join(t for t, _ in TOKENS)
    server = await scripted(lambda req: Step(text=text, logprobs=TOKENS))  # type: ignore[operator]
    llm = from_spec(f"openai-compatible:cheap@{server.url}", max_retries=0)
    kwargs = {"question": "q?", "answer": "a", "contexts": ["c"], "ground_truth": "a", "llm": llm}
    plain = await run_judges(["answer_correctness"], **kwargs)  # type: ignore[arg-type]
    assert plain["answer_correctness"].value == pytest.approx(0.8)
    assert "confidence" not in plain["answer_correctness"].details
    assert "logprobs" not in server.requests[-1].body
    llm.logprobs = True
    asked = await run_judges(["answer_correctness"], **kwargs)  # type: ignore[arg-type]
    assert server.requests[-1].body["logprobs"] is True
    assert asked["answer_correctness"].details["confidence"] == pytest.approx(math.exp(-0.4))
    await llm.aclose()


async def test_a_server_that_sends_no_logprobs_gives_no_confidence(scripted: object) -> None:
    from ragmeter.judges import run_judges
    from ragmeter.llm import from_spec
    from ragmeter.llm.scripted import Step

    server = await scripted(lambda req: Step(text='{"reasoning": "x", "score": 8}'))  # type: ignore[operator]
    llm = from_spec(f"openai-compatible:cheap@{server.url}", max_retries=0)
    llm.logprobs = True
    out = await run_judges(
        ["answer_correctness"], question="q?", answer="a", contexts=["c"], ground_truth="a", llm=llm
    )
    assert out["answer_correctness"].value == pytest.approx(0.8)
    assert (
        out["answer_correctness"].details["confidence"] is None
    )  # asked, not given: unknown, so it escalates
    await llm.aclose()
