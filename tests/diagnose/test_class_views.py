"""Failure classes where users read them: run JSON, `runs show`, CSV, the HTML report, and the
transition table of `runs compare` (which queries moved from which class to which)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from diagnose_fakes import CASES, dataset
from test_classes import classified_run

from ragmeter.diagnose import transitions
from ragmeter.metrics.diagnosis import class_metric
from ragmeter.models import EvalConfig
from ragmeter.run import arun_evaluation
from ragmeter.score.classes import class_of

pytest.importorskip("aiohttp")


async def test_classes_in_show_json_csv_html_and_compare(scripted, ragmeter_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _cli = ragmeter_cli
    from diagnose_fakes import ScriptedSystem

    db = tmp_path / "v.db"
    judged, _ = await classified_run(scripted, db)
    # a second run of the same queries without judges: no correctness judge, token_f1 decides (0 here)
    system = ScriptedSystem()
    config = EvalConfig(
        dataset="classes",
        retrieval_top_k=[3],
        metrics=["token_f1"],
        extra={"semantic": False, "context_k": 2},
    )
    plain = await arun_evaluation(dataset(), system, config, store=f"sqlite:///{db}", progress=False)
    url = f"sqlite:///{db}"
    a, b = judged.run_id or "", plain.run_id or ""

    code, out = _cli("runs", "show", a, "--db", url)
    assert code == 0, out
    assert "failure classes (7 queries)" in out and "relevant_not_in_context" in out and "q_nc" in out

    code, out = _cli("runs", "show", a, "--db", url, "--format", "json")
    data = json.loads(out)
    assert data["aggregate"][class_metric("correct")]["mean"] == pytest.approx(1 / 7)
    by_q = {r["query_id"]: r for r in data["per_query"]}
    assert by_q["q_nc"]["metrics"][class_metric("relevant_not_in_context")]["value"] == 1.0
    assert [d["doc_id"] for d in by_q["q_nc"]["contexts"]] == ["x1", "x2"]

    code, out = _cli("runs", "export", a, "--db", url, "--format", "csv", "--output", str(tmp_path / "a.csv"))
    assert code == 0, out
    rows = {r["query_id"]: r for r in csv.DictReader((tmp_path / "a.csv").open())}
    assert rows["q_wrong"][class_metric("answer_wrong_with_evidence")] in ("1", "1.0")

    code, out = _cli("report", a, b, "--db", url, "--out", str(tmp_path / "rep"), "--no-plots")
    assert code == 0, out
    html = "".join(p.read_text() for p in (tmp_path / "rep").glob("*.html"))
    assert class_metric("answer_wrong_with_evidence") in html

    moves = transitions(judged, plain)
    want = {
        (q, CASES[q][3], class_of(r))
        for q, r in ((r.query_id, r) for r in plain.per_query)
        if CASES[q][3] != class_of(r)
    }
    got = {(q, m["from"], m["to"]) for m in moves["moved"] for q in m["queries"]}
    assert got == want and ("q_ok", "correct", "answer_wrong_with_evidence") in got
    assert moves["n_paired"] == 7 and moves["matrix"]["no_relevant_retrieved"]["no_relevant_retrieved"] == 1

    code, out = _cli("runs", "compare", a, b, "--db", url, "--resamples", "200")
    assert code == 0, out
    assert f"failure-class transitions {a} -> {b}: {moves['n_moved']} of 7 moved" in out
    code, out = _cli("runs", "compare", a, b, "--db", url, "--resamples", "200", "--format", "json")
    assert json.loads(out)["transitions"]["moved"] == moves["moved"]
