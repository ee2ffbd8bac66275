"""Logs that match the work. An LLM call's latency starts when it gets its slot (not
before the client's own queue); the relevance judge logs one DEBUG line per judgment like the other judges;
an agreement note never contradicts the kappa it sits next to."""

from __future__ import annotations

import asyncio
import json
import logging
import types
from collections.abc import Callable
from typing import Any

import pytest

import ragmeter.llm.base as llm_base
from ragmeter.llm import from_spec
from ragmeter.llm.scripted import ScriptedRequest, Step
from ragmeter.validity.agreement import agreement
from ragmeter.validity.qrels_judging import label_pairs

MSG = [{"role": "user", "content": "Grade this."}]


async def test_latency_starts_when_the_call_gets_its_slot(
    scripted: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A clock the server moves: 100 s pass while the first call holds the only slot (the second waits in
    # the client's queue meanwhile), 1 s while the second one is served. No wall-clock assertion.
    now = [0.0]
    monkeypatch.setattr(
        llm_base, "time", types.SimpleNamespace(perf_counter=lambda: now[0], time=lambda: 0.0)
    )

    def served(req: ScriptedRequest) -> Step:
        now[0] += 100.0 if req.index == 0 else 1.0
        return Step(text='{"grade": 1}')

    server = await scripted(served)
    caplog.set_level(logging.DEBUG, logger="ragmeter.llm")
    async with from_spec(f"openai-compatible:m@{server.url}", concurrency=1) as llm:
        first = asyncio.create_task(llm.complete(MSG, query_id="a"))
        await asyncio.sleep(0)  # the first call takes the slot before the second is queued
        second = asyncio.create_task(llm.complete([{"role": "user", "content": "Another."}], query_id="b"))
        a, b = await first, await second
    assert a.latency_s == pytest.approx(100.0)
    assert b.latency_s == pytest.approx(1.0)  # main: 101 s, its 100 s in the queue counted as the call's
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("llm call")]
    assert any("query=b" in line and "latency=1.000s" in line for line in lines), lines


async def test_the_relevance_judge_logs_one_debug_line_per_judgment(
    scripted: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    server = await scripted(lambda req: Step(text=json.dumps({"reasoning": "ok", "grade": 2})))
    caplog.set_level(logging.DEBUG, logger="ragmeter.judges")
    docs = {"d1": "one passage", "d2": "another passage", "d3": "a third"}
    async with from_spec(f"openai-compatible:m@{server.url}") as llm:
        await label_pairs([("q", d) for d in docs], queries={"q": "what?"}, docs=docs, llm=llm)
    lines = [r.getMessage() for r in caplog.records if r.name == "ragmeter.judges"]
    judged = [line for line in lines if line.startswith("judge metric=trec_relevance")]
    assert len(judged) == 3 and all("query=q" in line and "value=2.0" in line for line in judged)


@pytest.mark.parametrize(
    ("human", "judge"),
    [([1, 1, 1, 1], [1, 0, 1, 0]), ([0, 1, 0, 1], [1, 1, 1, 1]), ([2, 2, 2], [2, 2, 2])],
)
def test_an_agreement_note_never_contradicts_its_kappa(human: list[int], judge: list[int]) -> None:
    res = agreement(human, judge, n_resamples=20)
    about_kappa = [n for n in res.notes if "kappa" in n]
    assert about_kappa  # one rater is constant in each case: the note is there
    for note in about_kappa:
        if res.kappa is None:
            assert "undefined" in note
        else:
            # main said "kappa and correlations are undefined" next to kappa = 0.0
            assert "kappa is undefined" not in note and "kappa and" not in note
            assert f"kappa is {res.kappa:.3f}" in note
