"""PPI-corrected judge means of a run: a judged run (scripted OpenAI-compatible judge on 127.0.0.1) over a
dataset where some queries carry human labels reports, per judge metric, the PPI estimate with its 95%
interval next to the plain judge mean, in the run JSON, the store, `runs show`, the report and the API."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from runner_fakes import KeywordSystem, make_dataset

import ragmeter.metrics as rm
from ragmeter.models import EvalConfig, EvalDataset, EvalRunResult, MetricResult, QueryEvalResult
from ragmeter.run import arun_evaluation
from ragmeter.score.ppi import ppi_for_run, run_ppi
from ragmeter.stats.ppi import ppi_mean
from ragmeter.store import open_store

pytest.importorskip("aiohttp")
SRC = Path(__file__).resolve().parents[2] / "src"
# Human labels on some queries: answer_correctness as bools (a 0-1 metric), retrieval_grade on its 1-10 scale.
CORRECT = {"q00": True, "q01": False, "q02": True, "q03": False, "q04": True}
GRADES = {"q05": 3, "q06": 9, "q07": 5}


def _grader(req: Any) -> Any:
    """A judge whose grade depends on the question's country (1..10), so the values vary by query."""
    from ragmeter.llm.scripted import Step

    country = req.user.split("capital of ", 1)[1].split("?", 1)[0] if "capital of " in req.user else ""
    grade = 1 + (3 * len(country)) % 10
    return Step(text=json.dumps({"reasoning": "ok", "grade": grade, "score": grade}))


def _labelled() -> EvalDataset:
    ds = make_dataset()
    for q in ds.queries:
        if q.query_id in CORRECT:
            q.human_labels["answer_correctness"] = CORRECT[q.query_id]
        if q.query_id in GRADES:
            q.human_labels["retrieval_grade"] = GRADES[q.query_id]
    return ds


async def _run(tmp_path: Path, ds: EvalDataset, url: str, db: str, name: str) -> EvalRunResult:
    path = tmp_path / f"{name}.json"
    path.write_text(ds.model_dump_json())
    config = EvalConfig.model_validate(
        {
            "dataset": str(path),
            "retrieval_top_k": [1, 3],
            "use_llm_judge": True,
            "judge_model": f"openai-compatible:judge@{url}",
            "metrics": ["answer_correctness", "retrieval_grade", "ndcg@3"],
            "output": str(tmp_path / f"{name}-out.json"),
            "extra": {"semantic": False},
        }
    )
    return await arun_evaluation(ds, KeywordSystem(ds), config, store=db, progress=False)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}
    cmd = [sys.executable, "-m", "ragmeter", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=True)


def _direct(data: dict[str, Any], metric: str, labels: dict[str, Any]) -> Any:
    """ppi_mean called directly on the JSON's per-query judge values and the labels on the metric's scale."""
    spec = rm.get(metric)
    values = {
        r["query_id"]: r["metrics"][metric]["value"]
        for r in data["per_query"]
        if r["status"] == "ok" and r["metrics"].get(metric, {}).get("value") is not None
    }
    lo, hi = spec.range
    assert lo is not None and hi is not None
    human = [(hi if v else lo) if isinstance(v, bool) else float(v) for v in labels.values()]
    judged = [values[qid] for qid in labels]
    return ppi_mean(list(values.values()), judged, human, range=(lo, hi)), values


async def test_a_judged_run_with_human_labels_reports_ppi_estimates(tmp_path: Path, scripted: Any) -> None:
    server = await scripted(_grader)
    db = f"sqlite:///{tmp_path / 'p.db'}"
    ds = _labelled()
    result = await _run(tmp_path, ds, server.url, db, "labelled")
    data = json.loads((tmp_path / "labelled-out.json").read_text())
    assert set(data["ppi"]) == {"answer_correctness", "retrieval_grade"}
    for metric, labels in (("answer_correctness", CORRECT), ("retrieval_grade", GRADES)):
        got = data["ppi"][metric]
        direct, values = _direct(data, metric, labels)
        assert got["n_labeled"] == len(labels) and got["n_total"] == len(values) == 12
        assert got["estimate"] == pytest.approx(direct.estimate, abs=1e-12)
        assert got["ci95"] == pytest.approx(list(direct.ci), abs=1e-12)
        assert got["judge_mean"] == pytest.approx(result.aggregate[metric].mean, abs=1e-12)
        assert got["estimate"] != pytest.approx(got["judge_mean"])  # the labels disagree with the judge
        spec = rm.get(metric)
        lo, hi = got["ci95"]
        assert spec.in_range(lo, tol=0.0) and spec.in_range(hi, tol=0.0) and lo <= got["estimate"] <= hi
    # the same in the returned result, the store's copy and the Python API
    assert result.ppi == EvalRunResult.model_validate(data).ppi
    assert ppi_for_run(result, ds) == result.ppi
    with open_store(db) as store:
        assert store.get_run(result.run_id or "").ppi == result.ppi
    # `runs show`: the table section and the JSON
    shown = _cli("runs", "show", result.run_id or "", "--db", db).stdout
    assert "judge means corrected with human labels (PPI)" in shown
    e = result.ppi["answer_correctness"]
    row = next(line for line in shown.splitlines() if "answer_correctness" in line and " / 12" in line)
    assert f"{e.estimate:.4f}" in row and f"{e.judge_mean:.4f}" in row and f"{e.ci95[0]:.4f}" in row
    assert "5 / 12" in row
    as_json = json.loads(_cli("runs", "show", result.run_id or "", "--db", db, "--format", "json").stdout)
    assert as_json["ppi"]["retrieval_grade"]["n_labeled"] == len(GRADES)
    # the HTML report has the table
    from ragmeter.report.html import render_html

    html = render_html([result], plots=False)
    assert "Judge means corrected with human labels (PPI)" in html and f"{e.estimate:.4f}" in html


async def test_rescore_recomputes_the_ppi_estimates(tmp_path: Path, scripted: Any) -> None:
    from ragmeter.run.rescore import arescore

    server = await scripted(_grader)
    db = f"sqlite:///{tmp_path / 'r.db'}"
    result = await _run(tmp_path, _labelled(), server.url, db, "labelled")
    run_id = result.run_id or ""
    with open_store(db) as store:
        summary = {**store.run_summary(run_id), "ppi": {}}
        store.update_scores(run_id, aggregate=result.aggregate, summary=summary, versions=result.versions)
        assert store.get_run(run_id).ppi == {}
        again = await arescore(run_id, store=store)
        assert again.ppi == result.ppi and store.get_run(run_id).ppi == result.ppi


async def test_a_run_without_human_labels_has_no_ppi(tmp_path: Path, scripted: Any) -> None:
    server = await scripted(_grader)
    db = f"sqlite:///{tmp_path / 'n.db'}"
    result = await _run(tmp_path, make_dataset(), server.url, db, "plain")
    assert result.aggregate["answer_correctness"].n == 12 and result.ppi == {}
    assert json.loads((tmp_path / "plain-out.json").read_text())["ppi"] == {}
    shown = _cli("runs", "show", result.run_id or "", "--db", db).stdout
    assert "answer_correctness" in shown and "PPI" not in shown
    from ragmeter.report.html import render_html

    assert "corrected with human labels" not in render_html([result], plots=False)


def _results(values: dict[str, float | None]) -> list[QueryEvalResult]:
    return [
        QueryEvalResult(query_id=qid, metrics={"answer_correctness": MetricResult(name="x", value=v)})
        for qid, v in values.items()
    ]


def test_labels_off_the_metric_scale_or_too_few_give_a_note_and_no_estimate() -> None:
    ds = make_dataset(4)
    values: dict[str, float | None] = {"q00": 0.2, "q01": 0.9, "q02": None, "q03": 0.5}
    ds.queries[0].human_labels["answer_correctness"] = 4  # a 1-5 label on a 0-1 metric
    ds.queries[1].human_labels["answer_correctness"] = 1
    estimates, notes = run_ppi(ds.queries, _results(values))
    assert estimates == {} and len(notes) == 1 and "outside its scale" in notes[0] and "4" in notes[0]
    ds.queries[0].human_labels["answer_correctness"] = 0
    ds.queries[1].human_labels.clear()
    ds.queries[2].human_labels["answer_correctness"] = True  # its judgment failed: not usable
    estimates, notes = run_ppi(ds.queries, _results(values))
    assert estimates == {} and len(notes) == 1 and "1 labelled query" in notes[0]
    ds.queries[3].human_labels["answer_correctness"] = 0.5
    estimates, notes = run_ppi(ds.queries, _results(values))
    got = estimates["answer_correctness"]
    assert notes == [] and (got.n_labeled, got.n_total) == (2, 3)
    direct = ppi_mean([0.2, 0.9, 0.5], [0.2, 0.5], [0.0, 0.5], range=(0.0, 1.0))
    assert got.estimate == direct.estimate and got.ci95 == direct.ci
