"""Answers without a reference: the context_sufficiency and abstained judges over real HTTP (a
scripted OpenAI-compatible server on 127.0.0.1), and what the run builds from them without qrels: the
abstention rates, the sufficiency x outcome table and the qrels-free failure classes, against hand counts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from ragmeter.models import Document, EvalConfig, EvalDataset, EvalQuery

pytest.importorskip("aiohttp")

# question topic -> (context given, answer, gold answer or None, answerable, judge says sufficient,
#                    the class the query must land in, the table cell)
CASES: dict[str, tuple[str, str, str | None, bool, int, str, tuple[str, str]]] = {
    "France": ("Paris is the capital of France.", "Paris", "Paris", True, 1, "correct", ("sufficient", "correct")),
    "Germany": ("Berlin is the capital of Germany.", "Munich", "Berlin", True, 1,
                "wrong_with_sufficient_context", ("sufficient", "wrong")),
    "Italy": ("Rome is the capital of Italy.", "I don't know.", "Rome", True, 1, "over_refused",
              ("sufficient", "abstained")),
    "Spain": ("Spain has many beaches.", "I cannot answer that from the sources.", "Madrid", True, 0,
              "insufficient_context", ("insufficient", "abstained")),
    "Portugal": ("Portugal borders Spain.", "Lisbon", "Lisbon", True, 0, "answered_beyond_context",
                 ("insufficient", "correct")),
    "Austria": ("Austria is in Europe.", "Graz", "Vienna", True, 0, "answered_beyond_context",
                ("insufficient", "wrong")),
    "Norway": ("Norway has fjords.", "Bergen", "Oslo", False, 0, "answered_beyond_context",
               ("insufficient", "wrong")),
    "Atlantis": ("Atlantis is a legend.", "The sources do not mention it; I don't know.", None, False, 0,
                 "insufficient_context", ("insufficient", "abstained")),
    "Switzerland": ("Bern is the federal city of Switzerland.", "Bern", None, True, 1, "correct",
                    ("sufficient", "correct")),
}  # fmt: skip


def _dataset() -> EvalDataset:
    queries = [
        EvalQuery(
            query_id=f"q{i}",
            question=f"What is the capital of {topic}?",
            ground_truth_answer=gold,
            answerable=answerable,
        )
        for i, (topic, (_, _, gold, answerable, *_)) in enumerate(CASES.items())
    ]
    corpus = [Document(doc_id=f"d-{t}", text=c[0]) for t, c in CASES.items()]
    return EvalDataset(name="thin", queries=queries, corpus=corpus)


def _topic(text: str) -> str:
    found = re.findall(r"capital of (\w+)\?", text)
    assert found, text
    return found[-1]  # the prompt's own example comes first


class ScriptedSystem:
    """Gives each question its one context and its fixed answer (a callable system of the user's)."""

    name = "scripted"

    async def retrieve(self, question: str, k: int) -> list[tuple[str, float, str]]:
        topic = _topic(question)
        return [(f"d-{topic}", 1.0, CASES[topic][0])]

    async def answer(self, question: str, contexts: list[Any]) -> str | None:
        return CASES[_topic(question)][1]


def _responder(calls: list[str]) -> Any:
    from ragmeter.llm.scripted import Step

    def respond(req: Any) -> Step:
        user = req.user
        topic = _topic(user)
        if "Sufficient Context: 1 IF" in user:
            calls.append("context_sufficiency")
            verdict = CASES[topic][4]
            return Step(text=f'{{"reasoning": "checked {topic}", "sufficient_context": {verdict}}}')
        if "decline to answer" in user:
            calls.append("abstained")
            declined = int(CASES[topic][5] in ("over_refused", "insufficient_context"))
            return Step(text=f'{{"reasoning": "read it", "abstained": {declined}}}')
        calls.append("groundedness")
        return Step(text='{"reasoning": "backed", "score": 8}')

    return respond


async def _run(tmp_path: Path, metrics: list[str]) -> tuple[Any, list[str]]:
    from ragmeter.llm import from_spec
    from ragmeter.llm.scripted import ScriptedServer
    from ragmeter.run import arun_evaluation

    calls: list[str] = []
    ds = _dataset()
    async with ScriptedServer(_responder(calls)) as server:
        spec = f"openai-compatible:judge@{server.url}"
        llm = from_spec(spec, max_retries=0, concurrency=2)
        config = EvalConfig(
            dataset="thin",
            retrieval_top_k=[1],
            use_llm_judge=True,
            judge_model=spec,
            metrics=metrics,
            extra={"semantic": False},
        )
        result = await arun_evaluation(
            ds, ScriptedSystem(), config, store=f"sqlite:///{tmp_path / 'r.db'}", llm=llm, progress=False
        )
        await llm.aclose()
    return result, calls


def _by_topic(result: Any) -> dict[str, Any]:
    return {_topic(r.question): r for r in result.per_query}


async def test_queries_land_in_their_cells_classes_and_rates(tmp_path: Path) -> None:
    from ragmeter.score.classes import class_of
    from ragmeter.score.sufficiency import sufficiency_table

    metrics = ["context_sufficiency", "abstained", "groundedness", "token_f1", "exact_match"]
    result, calls = await _run(tmp_path, metrics)
    assert calls.count("context_sufficiency") == len(CASES)
    by_topic = _by_topic(result)
    for topic, case in CASES.items():
        r = by_topic[topic]
        judged = r.metrics["context_sufficiency"]
        assert judged.value == case[4] and judged.details["reasoning"] == f"checked {topic}"
        assert judged.version and judged.version.startswith("context_sufficiency/v2+")
        assert class_of(r) == case[5], (topic, r.metrics[f"class_{case[5]}"].details)
        shown = [n for n in r.metrics if n.startswith("class_") and r.metrics[n].value == 1.0]
        assert shown == [f"class_{case[5]}"]  # exactly one class per query
        assert "context_sufficiency" in r.metrics[shown[0]].details["reason"]
    # No query has qrels, yet every answered query with a sufficiency verdict is classified.
    assert result.aggregate["class_unknown"].mean == 0.0

    # The abstention rates equal hand counts over CASES (answerable: 7, unanswerable: 2, declined: 3).
    agg = result.aggregate
    assert (agg["over_refusal_rate"].mean, agg["over_refusal_rate"].n) == (pytest.approx(2 / 7), 7)
    assert (agg["answered_unanswerable_rate"].mean, agg["answered_unanswerable_rate"].n) == (0.5, 2)
    assert (agg["refusal_recall"].mean, agg["refusal_recall"].n) == (0.5, 2)
    assert (agg["refusal_precision"].mean, agg["refusal_precision"].n) == (pytest.approx(1 / 3), 3)
    assert (agg["abstention_rate"].mean, agg["abstention_rate"].n) == (pytest.approx(3 / 9), 9)
    # Answered: France, Switzerland (groundedness, no reference), Portugal right; Germany, Austria, Norway wrong.
    assert (agg["correct_when_answered"].mean, agg["correct_when_answered"].n) == (0.5, 6)
    assert agg["over_refusal_rate"].ci_method == "wilson"

    table = sufficiency_table(result.per_query, {q.query_id: q for q in _dataset().queries})
    assert table is not None and table["n"] == len(CASES)
    expected: dict[tuple[str, str], int] = {}
    for case in CASES.values():
        expected[case[6]] = expected.get(case[6], 0) + 1
    for row in ("sufficient", "insufficient"):
        for col in ("correct", "abstained", "wrong"):
            assert table["cells"][row][col]["n"] == expected.get((row, col), 0), (row, col)
    cell = table["cells"]["insufficient"]["abstained"]
    lo, hi = cell["ci95"]
    assert cell["share"] == pytest.approx(2 / 9) and 0 < lo < 2 / 9 < hi < 1
    assert result.sufficiency == table  # the run carries the table it was scored with
    _table_is_shown(tmp_path, result, table)


def _table_is_shown(tmp_path: Path, result: Any, table: dict[str, Any]) -> None:
    """The same table from the store, in `runs show` (table and JSON) and in the HTML report."""
    import importlib.util
    import json

    from click.testing import CliRunner

    from ragmeter.cli import cli
    from ragmeter.report.html import render_html
    from ragmeter.store import open_store

    db = f"sqlite:///{tmp_path / 'r.db'}"
    with open_store(db) as store:
        assert store.get_run(result.run_id).sufficiency == table
    shown = CliRunner().invoke(cli, ["runs", "show", result.run_id, "--db", db], catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert "sufficiency x outcome (9 queries" in text
    assert "insufficient │ 1 (11% [0.02, 0.43])" in text  # insufficient / correct: Portugal, 1 of 9
    assert "over_refusal_rate │ rate │ 0.2857" in text
    as_json = CliRunner().invoke(
        cli, ["runs", "show", result.run_id, "--db", db, "--format", "json"], catch_exceptions=False
    )
    assert json.loads(as_json.stdout)["sufficiency"]["cells"] == table["cells"]
    if importlib.util.find_spec("starlette") is not None:  # the viewer's run page shows it too
        from starlette.testclient import TestClient

        from ragmeter.store.pages import open_store_readonly
        from ragmeter.view.app import Viewer, create_app

        page = (
            TestClient(create_app(Viewer(open_store_readonly(db))), base_url="http://127.0.0.1")
            .get(f"/runs/{result.run_id}")
            .text
        )
        assert 'id="sufficiency"' in page and "2 (22% [0.06, 0.55])" in page
    html = render_html([result], plots=False)
    assert "Context sufficiency x outcome" in html and "2 (22% [" in html


async def test_lexical_fallback_decides_without_the_abstained_judge(tmp_path: Path) -> None:
    from ragmeter.score.classes import class_of

    result, calls = await _run(tmp_path, ["context_sufficiency", "groundedness", "token_f1", "exact_match"])
    assert "abstained" not in calls
    for topic, case in CASES.items():
        r = _by_topic(result)[topic]
        assert class_of(r) == case[5], topic
        assert (
            r.metrics["abstention_rate"].details["reason"].startswith(("refusal phrase", "no refusal phrase"))
        )
    assert result.aggregate["over_refusal_rate"].mean == pytest.approx(2 / 7)


async def test_a_failed_sufficiency_judgment_is_null_and_unclassified(tmp_path: Path) -> None:
    """Fail-soft: an unusable reply is a null value with its reason, the query is `unknown`, the run goes on."""
    from ragmeter.judges import context_sufficiency
    from ragmeter.llm import from_spec
    from ragmeter.llm.scripted import ScriptedServer, Step

    async with ScriptedServer(lambda req: Step(text="I would rather not say.")) as server:
        llm = from_spec(f"openai-compatible:judge@{server.url}", max_retries=0)
        got = await context_sufficiency("What is the capital of France?", None, ["Paris."], llm=llm)
        await llm.aclose()
    assert got.value is None and got.error and "re-ask" in got.error
    assert got.version == context_sufficiency.version
