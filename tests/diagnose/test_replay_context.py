"""What a replay gives and reads: classes from the generator's contexts, contexts keyed by query id (the
loop's per-query context), the oracle passage within the passage limit, the parent's values of the judge
metrics that read no answer copied instead of judged again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from diagnose_fakes import ScriptedSystem, dataset, judge_responder, judged_run

from ragmeter.judges.prompts import layout_name
from ragmeter.llm.scripted import ScriptedRequest, Step
from ragmeter.models import EvalConfig, EvalDataset, EvalQuery, MetricResult, QueryEvalResult, RetrievedDoc
from ragmeter.run import arun_evaluation, run_evaluation
from ragmeter.score.classes import classify
from scripted_servers import by_judge

pytest.importorskip("aiohttp")


def test_a_relevant_context_outside_the_retrieved_list_is_no_retrieval_failure() -> None:
    """An oracle-context replay: the stored (parent's) list misses, the generator got the relevant passage."""
    query = EvalQuery(query_id="q", question="?", ground_truth_answer="a", relevant_doc_ids=["rel"])
    result = QueryEvalResult(
        query_id="q",
        answer="a",
        retrieved=[RetrievedDoc(doc_id="x", score=1.0, rank=1)],
        contexts=[RetrievedDoc(doc_id="rel", score=1.0, rank=1)],
        metrics={"answer_correctness": MetricResult(name="answer_correctness", value=0.9)},
    )
    assert classify(query, result, context_k=1).name == "correct"
    wrong = result.model_copy(
        update={"metrics": {"answer_correctness": MetricResult(name="answer_correctness", value=0.1)}}
    )
    assert classify(query, wrong, context_k=1).name == "answer_wrong_with_evidence"
    missed = result.model_copy(update={"contexts": [RetrievedDoc(doc_id="x", score=1.0, rank=1)]})
    assert classify(query, missed, context_k=1).name == "no_relevant_retrieved"


class SeesQuery:
    """A user system reading the query id the loop makes current."""

    name = "sees-query"

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []

    def retrieve(self, question: str, k: int) -> list[tuple[str, float, str]]:
        from ragmeter.systems.context import current_query

        current = current_query()
        self.seen.append((question, current.query_id if current is not None else None))
        return [("d", 1.0, "text")]


def test_the_loop_makes_the_current_query_id_available_to_the_system() -> None:
    data = EvalDataset(
        name="same",
        queries=[EvalQuery(query_id=q, question="the same question?", relevant_doc_ids=["d"]) for q in "ab"],
    )
    system = SeesQuery()
    config = EvalConfig(dataset="same", retrieval_top_k=[1], evaluate_generation=False, metrics=["ndcg@1"])
    run_evaluation(data, system, config, store=False, progress=False)
    assert sorted(system.seen) == [("the same question?", "a"), ("the same question?", "b")]
    from ragmeter.systems.context import current_query

    assert current_query() is None  # outside a run


class SameQuestion(ScriptedSystem):
    """Two queries ask one question; the generator's contexts are recorded by the query the loop names."""

    def retrieve(self, question: str, k: int) -> list[tuple[str, float, str]]:
        return [("x1", 1.0, "noise one")]

    def answer(self, question: str, contexts: list[Any]) -> str | None:
        from ragmeter.systems.context import current_query

        current = current_query()
        assert current is not None
        self.answer_calls.append((current.query_id, [c.doc_id for c in contexts]))
        return "RIGHT" if any(c.doc_id.startswith("rel") for c in contexts) else "WRONG"


async def test_replays_key_contexts_by_query_id_not_question(tmp_path: Path) -> None:
    from ragmeter.diagnose.attribution import adiagnose
    from ragmeter.models import Document
    from ragmeter.store import open_store

    data = EvalDataset(
        name="same",
        queries=[
            EvalQuery(
                query_id=q,
                question="one question?",
                ground_truth_answer="RIGHT",
                relevant_doc_ids=[f"rel-{q}"],
            )
            for q in ("a", "b")
        ],
        corpus=[Document(doc_id=d, text=d) for d in ("rel-a", "rel-b", "x1")],
    )
    config = EvalConfig(
        dataset="same", retrieval_top_k=[1], metrics=["exact_match"], extra={"semantic": False}
    )
    db = f"sqlite:///{tmp_path / 's.db'}"
    run = await arun_evaluation(data, SameQuestion(), config, store=db, progress=False)
    system = SameQuestion()
    with open_store(db) as store:
        await adiagnose(run.run_id or "", store=store, system=system, dataset=data, n_resamples=100)
    oracle = [(q, ids) for q, ids in system.answer_calls if ids != ["x1"]]
    assert sorted(oracle) == [("a", ["rel-a"]), ("b", ["rel-b"])]


def test_the_oracle_passage_is_the_window_that_holds_the_answer() -> None:
    from ragmeter.diagnose.replay import oracle_passage

    text = "a" * 3000 + " the answer is Paris. " + "b" * 3000
    window = oracle_passage(text, ["paris"], 2000)
    assert len(window) == 2000 and "Paris" in window and window in text
    assert oracle_passage(text, ["London"], 2000) == text[:2000]  # no answer in it: its beginning
    assert oracle_passage("short", ["x"], 2000) == "short"
    end = "c" * 5000 + " Rome"
    assert oracle_passage(end, ["rome"], 100) == end[-100:]  # at the end: the last window


def _grade(req: ScriptedRequest) -> Step:
    return Step(text=json.dumps({"reasoning": "r", "grade": 9 if "SUPPORTS" in req.user else 2}))


# The fakes' judge, plus a retrieval grade that would differ if judged on the oracle contexts.
grading_responder = by_judge({"retrieval_grade": _grade}, default=judge_responder)


async def test_a_replay_copies_the_parents_retrieval_grade_instead_of_judging_it(
    scripted, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    from ragmeter.diagnose.attribution import adiagnose
    from ragmeter.store import open_store

    db = f"sqlite:///{tmp_path / 'g.db'}"
    srv, llm, run = await judged_run(
        scripted, ScriptedSystem(), db, ["answer_correctness", "retrieval_grade"], grading_responder
    )
    grades = {
        r.query_id: r.metrics["retrieval_grade"].value
        for r in run.per_query
        if "retrieval_grade" in r.metrics
    }
    assert grades and len(set(grades.values())) > 1
    before = len(srv.requests)
    with open_store(db) as store:
        out = await adiagnose(
            run.run_id or "",
            store=store,
            system=ScriptedSystem(),
            llm=llm,
            dataset=dataset(),
            n_resamples=100,
        )
        replays = {k: store.get_run(v) for k, v in out["replays"].items()}
    await llm.aclose()
    asked = [r for r in srv.requests[before:] if layout_name(r.user) == "retrieval_grade"]
    assert not asked  # the retrieval grade was not judged again
    assert "retrieval_grade" in out["copied"]
    for replay in replays.values():
        assert {
            r.query_id: r.metrics["retrieval_grade"].value
            for r in replay.per_query
            if "retrieval_grade" in r.metrics
        } == grades
        assert replay.aggregate["retrieval_grade"] == run.aggregate["retrieval_grade"]
        assert "answer_correctness" in replay.aggregate  # the attributed metric is judged anew


def test_unsupported_reads_a_verdict_made_against_the_contexts_only() -> None:
    query = EvalQuery(query_id="q", question="?", ground_truth_answer="a", relevant_doc_ids=["rel"])

    def result(**values: float) -> QueryEvalResult:
        metrics = {n: MetricResult(name=n, value=v) for n, v in {"answer_correctness": 0.9, **values}.items()}
        ctx = [RetrievedDoc(doc_id="rel", score=1.0, rank=1)]
        return QueryEvalResult(query_id="q", answer="a", retrieved=ctx, contexts=ctx, metrics=metrics)

    # factuality reads the reference answer too: a right answer passes it whatever its contexts say
    got = classify(query, result(factuality=1.0, groundedness=0.2), context_k=1)
    assert got.name == "unsupported" and "groundedness 0.2 < 0.5" in got.reason
    got = classify(query, result(factuality=1.0, groundedness=0.2, rc_faithfulness=1.0), context_k=1)
    assert got.name == "correct" and "rc_faithfulness 1" in got.reason  # the claim check decides first
    got = classify(query, result(factuality=1.0), context_k=1)
    assert got.name == "correct" and "support not judged" in got.reason
