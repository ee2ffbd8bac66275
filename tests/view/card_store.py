"""A real SQLite store with judge cards built over real HTTP (scripted judges on 127.0.0.1) and runs beside
them: an anchor card of a fair judge, and the card of a second judge that prefers longer answers (padding
flagged, master keys inside tolerance) and judges a known eighth of the anchors the other way (drift); a
run judged by that second judge (a card for groundedness, none for answer_correctness), and a run whose
judge has no card. Hostile text rides in a card's dataset name, its notes and one drifted item's id."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from report_payloads import IMG_XSS, XSS

from ragmeter.models import EvalConfig, EvalDataset, EvalQuery, MetricResult, MetricSummary, QueryEvalResult
from ragmeter.store import Store, open_store

N = 40
GRADES = (2, 3, 4, 6, 7, 8)  # never the middle (5): each verdict is a clear pass or fail
HOSTILE_ID = "q000" + IMG_XSS  # one anchor's id carries a payload; it is among the drifted items
DRIFTED = {HOSTILE_ID, *(f"q{i:03d}" for i in range(8, N, 8))}  # i % 8 == 0: the second judge's flips
CARD_NOTE = "a note from the card's maker" + XSS


def _qid(i: int) -> str:
    return HOSTILE_ID if i == 0 else f"q{i:03d}"


def items() -> EvalDataset:
    queries = [
        EvalQuery(
            query_id=_qid(i),
            question=f"What value does item number {i} report for measurement?",
            human_labels={"groundedness": GRADES[i % 6] >= 5} if i % 2 == 0 else {},
            metadata={
                "answer": f"Item {i} says the value is {i * 7 % 13}; grade {GRADES[i % 6]}.",
                "contexts": [f"Passage A of item {i}.", f"Passage B of item {i}."],
            },
        )
        for i in range(N)
    ]
    return EvalDataset(name="card-items" + XSS, queries=queries)


def _grade(req: Any) -> tuple[int, str]:
    m = re.search(r"Answer to judge:\n(.*?)\n\n(?:Reference answer|Task: )", req.user, re.S)
    assert m is not None, req.user
    answer = m.group(1)
    g = re.search(r"grade (\d+)", answer)
    assert g is not None
    return int(g.group(1)), answer


def _reply(score: int) -> Any:
    from ragmeter.llm.scripted import Step

    return Step(text=json.dumps({"reasoning": "scripted", "score": max(0, min(10, score))}))


def fair(req: Any) -> Any:
    return _reply(_grade(req)[0])


def long_loving_drifted(req: Any) -> Any:
    """Grades one point higher per 100 characters of answer (the battery pads by at least 100); the items
    numbered 0 mod 8 the other way."""
    grade, answer = _grade(req)
    item = int(re.search(r"Item (\d+) says", answer).group(1))  # type: ignore[union-attr]
    return _reply((10 - grade if item % 8 == 0 else grade) + len(answer) // 100)


def _summary(values: list[float | None]) -> MetricSummary:
    valid = [v for v in values if v is not None]
    mean = sum(valid) / len(valid) if valid else None
    return MetricSummary(mean=mean, std=None, n=len(valid), n_null=len(values) - len(valid), ci95=None)


def add_judged_run(store: Store, name: str, judge: str | None, metrics: tuple[str, ...]) -> str:
    run = store.create_run(
        EvalConfig(dataset="fixture", system="builtin", use_llm_judge=judge is not None, judge_model=judge),
        name=name,
        dataset_name="fixture",
    )
    assert run.run_id is not None
    results = []
    for i in range(6):
        values = {m: (i % 4) / 4 for m in metrics}
        results.append(
            QueryEvalResult(
                query_id=f"r{i}",
                question=f"Question {i}?",
                answer=f"Answer {i}.",
                metrics={
                    m: MetricResult(name=m, value=v, details={"reasoning": f"why {i}"} if m != "mrr" else {})
                    for m, v in values.items()
                },
            )
        )
    for pos, q in enumerate(results):
        store.add_query_result(run.run_id, q, position=pos)
    aggregate = {m: _summary([q.metrics[m].value for q in results]) for m in metrics}
    store.finish_run(run.run_id, status="completed", aggregate=aggregate, n_queries=len(results))
    return run.run_id


def make_card_store(path: Path) -> dict[str, Any]:
    """The store (at path) and what went in: {"db", "anchor" and "card" (the two JudgeCards, stored), and
    the run ids "judged", "uncarded", "unjudged" (judge metrics, no judge named) and "retrieval"}."""
    from ragmeter.llm import from_spec
    from ragmeter.llm.scripted import ScriptedServer
    from ragmeter.validity.card import build_card
    from ragmeter.validity.storage import store_card

    dataset = items()

    async def card(store: Store, responder: Any, against: Any) -> Any:
        async with ScriptedServer(responder) as server:
            spec = f"openai-compatible:judge@{server.url}"
            async with from_spec(spec, concurrency=8, seed=0, max_retries=0) as llm:
                built = await build_card(
                    dataset,
                    "groundedness",
                    llm=llm,
                    judge_spec=spec,
                    repeats=2,
                    perturbations=("padding", "master_key"),
                    against=against,
                )
        built.notes.append(CARD_NOTE)
        store_card(store, built)  # as `ragmeter judges card` does: then --against names its id
        return built

    db = str(path)
    with open_store(db) as store:
        anchor = asyncio.run(card(store, fair, None))
        second = asyncio.run(card(store, long_loving_drifted, anchor))
        metrics = ("mrr", "groundedness", "answer_correctness")
        judged = add_judged_run(store, "judged by the second judge", second.judge_spec, metrics)
        other = "openai-compatible:other@http://127.0.0.1:9"
        uncarded = add_judged_run(store, "judged by a judge with no card", other, ("groundedness",))
        unjudged = add_judged_run(store, "no judge named", None, ("mrr", "groundedness"))
        retrieval = add_judged_run(store, "retrieval only", None, ("mrr",))
    return {
        "db": db,
        "anchor": anchor,
        "card": second,
        "judged": judged,
        "uncarded": uncarded,
        "unjudged": unjudged,
        "retrieval": retrieval,
    }
