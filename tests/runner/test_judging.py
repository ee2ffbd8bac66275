"""The runner with LLM judges over real HTTP (the scripted OpenAI-compatible server on 127.0.0.1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from runner_fakes import KeywordSystem, make_dataset

from ragmeter.models import EvalConfig
from ragmeter.run import arun_evaluation

pytest.importorskip("aiohttp")


async def test_judge_grades_total_scores_and_failures(tmp_path: Path) -> None:
    from ragmeter.llm import from_spec
    from ragmeter.llm.scripted import ScriptedServer, Step

    def responder(req: object) -> Step:
        user = getattr(req, "user", "")
        if "Italy" in user:  # this query's judge call fails on every retry
            return Step(status=400, text="bad request")
        grade = 9 if "capital of" in user and "Rome" not in user else 3
        return Step(text=f'{{"reasoning": "checked", "grade": {grade}}}')

    ds = make_dataset()
    async with ScriptedServer(responder) as server:
        llm = from_spec(f"openai-compatible:judge@{server.url}", max_retries=1, concurrency=4)
        config = EvalConfig(
            dataset="capitals",
            retrieval_top_k=[1, 5],
            use_llm_judge=True,
            judge_model="openai-compatible:judge@" + server.url,
            metrics=["retrieval_grade"],
            extra={"semantic": False},
        )
        result = await arun_evaluation(
            ds, KeywordSystem(ds), config, store=f"sqlite:///{tmp_path / 'j.db'}", llm=llm, progress=False
        )
        await llm.aclose()

    by_q = {r.question: r for r in result.per_query}
    italy = by_q["What is the capital of Italy?"]
    assert italy.status == "ok"  # a judge failure is a null metric, never a failed query
    assert italy.metrics["retrieval_grade"].value is None and italy.metrics["retrieval_grade"].error
    assert italy.metrics["total_score"].value is None
    france = by_q["What is the capital of France?"]
    assert france.metrics["retrieval_grade"].value == 9
    # rank 1 relevant doc: total = grade x 1.0
    assert france.metrics["total_score"].value == pytest.approx(9.0)
    agg = result.aggregate["retrieval_grade"]
    assert agg.n == 11 and agg.n_null == 1
    assert result.versions["prompt.retrieval_grade"]
    assert "judge" in result.versions and "key" not in result.versions["judge"].lower()
    assert any("pass rates over all 12 queries" in n for n in result.notes)
