"""The judge's timeout, retries and budget are part of the run record and rebuilt from it (ragmeter.run.rebuild):
a resumed run judges its remaining queries under the recorded budget, not a fresh default client."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from runner_fakes import KeywordSystem, make_dataset

from ragmeter.models import EvalConfig
from ragmeter.records import RunRecord
from ragmeter.run.api import arun_evaluation
from ragmeter.store import open_store

pytest.importorskip("aiohttp")

OPTIONS = {"timeout": 7.5, "max_retries": 0, "budget": 3}


def _config(url: str) -> EvalConfig:
    return EvalConfig(
        dataset="capitals",
        retrieval_top_k=[1, 5],
        use_llm_judge=True,
        judge_model=f"openai-compatible:judge@{url}",
        metrics=["retrieval_grade"],
        evaluate_generation=False,
        concurrency=2,
        extra={"semantic": False, "judge_options": dict(OPTIONS)},
    )


def _grade(req: Any) -> Any:
    from ragmeter.llm.scripted import Step

    return Step(text='{"reasoning": "checked", "grade": 8}')


def _budget_nulls(result: Any) -> list[str]:
    return [
        r.query_id
        for r in result.per_query
        if "budget" in (r.metrics["retrieval_grade"].error or "")
        and r.metrics["retrieval_grade"].value is None
    ]


async def test_resumed_run_judges_under_the_recorded_timeout_retries_and_budget(tmp_path: Path) -> None:
    from ragmeter.llm.scripted import ScriptedServer
    from ragmeter.run.loop import QueryWorker

    ds = make_dataset()
    path = tmp_path / "r.db"
    calls: list[str] = []

    def responder(req: Any) -> Any:
        calls.append(req.user)
        return _grade(req)

    async with ScriptedServer(responder) as server:
        first = await arun_evaluation(
            ds, KeywordSystem(ds), _config(server.url), store=f"sqlite:///{path}", progress=False
        )
        assert len(calls) == 3 and len(_budget_nulls(first)) == 9  # the budget held in the first run

        with open_store(f"sqlite:///{path}", sweep=False) as store:
            stored = store.get_run(first.run_id or "").record
        assert stored is not None
        record = RunRecord.model_validate(stored)
        assert record.judge is not None and record.judge is not None and record.judge.options == OPTIONS
        worker = QueryWorker.build(record, ds, system=KeywordSystem(ds))
        try:
            assert worker.judge is not None
            assert (worker.judge.timeout, worker.judge.max_retries, worker.judge.budget) == (7.5, 0, 3)
        finally:
            await worker.aclose()

        # A crash after 8 of 12 queries: the last 4 rows were never written, the run is failed.
        lost = sorted(r.query_id for r in first.per_query)[8:]
        with sqlite3.connect(path) as db:
            marks = ",".join("?" * len(lost))
            db.execute(
                f"DELETE FROM metric_values WHERE run_id = ? AND query_id IN ({marks})", [first.run_id, *lost]
            )
            db.execute(
                f"DELETE FROM query_results WHERE run_id = ? AND query_id IN ({marks})", [first.run_id, *lost]
            )
            db.execute("UPDATE runs SET status = 'failed' WHERE id = ?", [first.run_id])
        calls.clear()
        resumed = await arun_evaluation(
            ds, KeywordSystem(ds), None, store=f"sqlite:///{path}", resume=first.run_id, progress=False
        )
    assert resumed.status == "completed" and len(resumed.per_query) == 12
    # the resumed queries were judged by a client rebuilt with the recorded budget of 3 (a default client
    # has no budget and would have graded all 4)
    assert len(calls) == 3
    assert len([q for q in _budget_nulls(resumed) if q in lost]) == 1


def test_local_judge_and_generator_share_one_server() -> None:
    """Both `local`: the generator client sends its requests to the judge's server (started once, stopped
    by the judge), instead of starting a second model server. Nothing starts here: servers start on use."""
    from ragmeter.records import DatasetRef, LLMRef, SystemRef
    from ragmeter.run.rebuild import build_clients

    record = RunRecord(
        system=SystemRef(kind="builtin", spec="builtin", fingerprint="f"),
        dataset=DatasetRef(name="d", source="d", hash="h", n_queries=1),
        cutoffs=[5],
        seed=1,
        concurrency=2,
        judge=LLMRef(spec="local", options={"budget": 5}),
        generator=LLMRef(spec="local"),
    )
    judge, generator, owned = build_clients(record)
    assert judge.backend == generator.backend == "local" and judge is not generator
    assert generator._owner is judge and judge._owner is None
    assert judge.budget == 5 and generator.budget is None  # each keeps its own recorded options
    assert owned == [generator, judge]  # the generator is closed first, then the server's owner
