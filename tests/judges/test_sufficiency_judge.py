"""The context_sufficiency and abstained judges' replies: binary, with the reason, fail-soft."""

from __future__ import annotations

import pytest

from ragmeter.judges import abstained, context_sufficiency
from ragmeter.judges.prompts import CONTEXT_SUFFICIENCY

pytest.importorskip("aiohttp")


async def _ask(scripted, reply: str, **kw):  # type: ignore[no-untyped-def]
    from ragmeter.llm import from_spec
    from ragmeter.llm.scripted import Step

    seen: list[str] = []

    def respond(req):  # type: ignore[no-untyped-def]
        seen.append(req.user)
        return Step(text=reply)

    srv = await scripted(respond)
    llm = from_spec(f"openai-compatible:judge@{srv.url}", max_retries=0)
    judge = kw.pop("judge", context_sufficiency)
    got = await judge(
        "Who built the Zephyr?", kw.pop("answer", None), kw.pop("contexts", ["Budd built it."]), llm=llm
    )
    await llm.aclose()
    return got, seen


@pytest.mark.parametrize(
    ("reply", "value", "flagged"),
    [
        ('{"reasoning": "Who built it? [1] Budd.", "sufficient_context": 1}', 1.0, False),
        ('{"reasoning": "not said", "sufficient_context": 0}', 0.0, False),
        ('{"reasoning": "x", "Sufficient Context": "1"}', 1.0, False),  # the paper's own key
        ('{"reasoning": "x", "sufficient_context": 0.8}', 1.0, True),  # rounded, flagged
    ],
)
async def test_binary_verdict_with_its_reason(scripted, reply: str, value: float, flagged: bool) -> None:  # type: ignore[no-untyped-def]
    got, seen = await _ask(scripted, reply)
    assert got.value == value and got.error is None
    assert got.details["reasoning"] and got.version == CONTEXT_SUFFICIENCY.version
    assert bool([f for f in got.details["flags"] if "rounded" in f]) == flagged
    # the prompt carries the question and the numbered contexts, and no reference answer
    assert "Who built the Zephyr?" in seen[0] and "[1] Budd built it." in seen[0]


async def test_no_contexts_are_judged_not_skipped(scripted) -> None:  # type: ignore[no-untyped-def]
    got, seen = await _ask(scripted, '{"reasoning": "nothing", "sufficient_context": 0}', contexts=[])
    assert got.value == 0.0 and "Retrieved texts, in rank order (best first):\n(no sources)" in seen[0]


async def test_abstained_reads_the_answer(scripted) -> None:  # type: ignore[no-untyped-def]
    got, seen = await _ask(
        scripted, '{"reasoning": "declines", "abstained": 1}', judge=abstained, answer="No idea, sorry."
    )
    assert got.value == 1.0 and "No idea, sorry." in seen[0]
    empty, _ = await _ask(scripted, "{}", judge=abstained, answer=None)
    assert empty.value is None and empty.error == "the answer is empty"
