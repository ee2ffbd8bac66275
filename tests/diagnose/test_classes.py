"""Failure classes over real HTTP: a constructed dataset with queries built to fall in each class gets
exactly those classes, stored, aggregated with Wilson intervals, and rescored the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from diagnose_fakes import CASES, CONTEXT_K, ScriptedSystem, dataset, judged_run

from ragmeter.metrics.diagnosis import FAILURE_CLASSES, class_metric
from ragmeter.models import EvalConfig, EvalRunResult
from ragmeter.run import arun_evaluation
from ragmeter.score.classes import class_of

pytest.importorskip("aiohttp")

METRICS = ["token_f1", "answer_correctness", "rc_faithfulness"]


async def classified_run(scripted, db: Path, **extra: object) -> tuple[EvalRunResult, ScriptedSystem]:  # type: ignore[no-untyped-def]
    system = ScriptedSystem()
    _, llm, result = await judged_run(scripted, system, f"sqlite:///{db}", METRICS, **extra)
    await llm.aclose()
    return result, system


async def test_each_constructed_query_gets_exactly_its_class(scripted, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result, system = await classified_run(scripted, tmp_path / "c.db")
    got = {r.query_id: class_of(r) for r in result.per_query}
    assert got == {q: case[3] for q, case in CASES.items()}
    for r in result.per_query:
        # exactly one class is 1; every class metric is stored with the class and why
        assert sum(r.metrics[class_metric(c)].value or 0 for c in FAILURE_CLASSES) == 1
        assert r.metrics[class_metric("correct")].details["reason"]
        # the generator's contexts are stored: the top CONTEXT_K of what was retrieved
        assert r.contexts is not None and [d.doc_id for d in r.contexts] == CASES[r.query_id][1][:CONTEXT_K]
    unknown = {r.query_id: r.metrics[class_metric("unknown")].details["reason"] for r in result.per_query}
    assert "no qrels" in unknown["q_noqrels"] and unknown["q_noanswer"] == "no answer"
    agg = result.aggregate[class_metric("no_relevant_retrieved")]
    assert agg.n == len(CASES) and agg.mean == pytest.approx(1 / len(CASES)) and agg.ci_method == "wilson"
    # what the generator saw is what the system was given
    assert {q: ids for q, ids in system.answer_calls} == {q: c[1][:CONTEXT_K] for q, c in CASES.items()}


async def test_classes_survive_the_store_and_the_correctness_rule_override(scripted, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from ragmeter.store import open_store

    db = tmp_path / "o.db"
    # token_f1 of "RIGHT ..." against "reference q_*" is 0: with the rule on token_f1 every answered query
    # with evidence is wrong
    result, _ = await classified_run(scripted, db, correct_if="token_f1>=0.5")
    with open_store(f"sqlite:///{db}") as store:
        stored = store.get_run(result.run_id or "")
    got = {r.query_id: class_of(r) for r in stored.per_query}
    assert got["q_ok"] == got["q_unsup"] == got["q_wrong"] == "answer_wrong_with_evidence"
    assert got["q_nr"] == "no_relevant_retrieved" and got["q_noqrels"] == "unknown"
    assert {r.query_id: r.contexts for r in stored.per_query} == {
        r.query_id: r.contexts for r in result.per_query
    }


async def test_a_bad_correctness_rule_is_refused_before_anything_is_stored(tmp_path: Path) -> None:
    from ragmeter.errors import InputError

    db = tmp_path / "bad.db"
    config = EvalConfig(dataset="classes", metrics=["token_f1"], extra={"correct_if": "token_f1 = 1"})
    with pytest.raises(InputError, match="METRIC>=VALUE"):
        await arun_evaluation(dataset(), ScriptedSystem(), config, store=f"sqlite:///{db}", progress=False)
    from ragmeter.store import open_store

    with open_store(f"sqlite:///{db}") as store:
        assert store.list_runs() == []
