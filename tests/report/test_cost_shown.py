"""LLM usage and cost where people look: the terminal tables, the CSV, the HTML report; the cost note
counts every unpriced call of the run; `eval --format json` gives each measure's standard deviation."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from ragmeter.models import EvalRunResult
from ragmeter.score.usage import run_usage

UNPRICED = "no price for model 'my-judge' (1 of 1 calls): give prices= or a RAGMETER_LLM_PRICES file"


def _line(**kw: Any) -> dict[str, Any]:
    base = {"calls": 1, "cached_calls": 0, "failed_calls": 0, "input_tokens": 100, "output_tokens": 10}
    return {**base, **kw}


def _costed_run(make_run: Any, *, priced: bool) -> EvalRunResult:
    run: EvalRunResult = make_run("a", 1, n=8)
    for q in run.per_query:
        judge = _line(cost_usd=0.002) if priced else _line(cost_usd=None, cost_note=UNPRICED)
        q.usage = {"judge": {"faithfulness": judge}, "generator": {"generator": _line(cost_usd=0.001)}}
    run.usage = run_usage(run.per_query, {"judge": "my-judge", "generator": "gen"})
    return run


def test_cost_note_counts_the_calls_of_the_whole_run(make_run: Any) -> None:
    usage = _costed_run(make_run, priced=False).usage
    assert usage is not None and usage["judge"]["cost_usd"] is None
    assert "(8 of 8 calls)" in usage["judge"]["cost_note"]
    assert "(8 of 8 calls)" in usage["judge_by_metric"]["faithfulness"]["cost_note"]
    assert "(1 of 1 calls)" not in usage["total"]["cost_note"]


def test_terminal_shows_calls_tokens_and_cost(make_run: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from ragmeter.cli.options import print_run

    print_run(_costed_run(make_run, priced=True))
    out = " ".join(capsys.readouterr().out.split())
    assert "judge: 8 calls (0 cached, 0 failed), 800 input + 80 output tokens, cost $0.0160" in out
    assert "generator: 8 calls" in out and "total: 16 calls" in out and "cost $0.0240" in out
    print_run(_costed_run(make_run, priced=False))
    out = " ".join(capsys.readouterr().out.split())
    assert "judge: 8 calls" in out and "cost unknown" in out and "(8 of 8 calls)" in out


def test_csv_has_each_querys_calls_tokens_and_cost(make_run: Any, tmp_path: Path) -> None:
    from ragmeter.score.writers import write_csv

    rows = list(csv.DictReader(write_csv(_costed_run(make_run, priced=True), tmp_path / "r.csv").open()))
    assert len(rows) == 8
    assert {(r["llm_calls"], r["llm_input_tokens"], r["llm_output_tokens"]) for r in rows} == {
        ("2", "200", "20")
    }
    assert all(float(r["llm_cost_usd"]) == pytest.approx(0.003) for r in rows)
    unpriced = list(csv.DictReader(write_csv(_costed_run(make_run, priced=False), tmp_path / "u.csv").open()))
    assert all(r["llm_cost_usd"] == "" and r["llm_calls"] == "2" for r in unpriced)


def test_html_report_shows_the_cost(make_run: Any) -> None:
    from ragmeter.report.html import render_html

    html = render_html([_costed_run(make_run, priced=True)], plots=False)
    assert 'class="small usage"' in html and "cost $0.0240" in html and "judge: 8 calls" in html
    assert 'class="small usage"' not in render_html([make_run("b", 2)], plots=False)


def test_eval_json_has_each_measures_std(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ragmeter.cli import cli

    (tmp_path / "q.txt").write_text("q1 0 d1 1\nq2 0 d2 1\nq3 0 d3 1\n")
    (tmp_path / "r.txt").write_text(
        "q1 Q0 d1 1 2.0 x\nq2 Q0 dx 1 2.0 x\nq2 Q0 d2 2 1.0 x\nq3 Q0 dy 1 1.0 x\n"
    )
    result = CliRunner().invoke(
        cli,
        ["eval", str(tmp_path / "q.txt"), str(tmp_path / "r.txt"), "-m", "recip_rank", "--format", "json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    values = [1.0, 0.5, 0.0]
    mean = sum(values) / 3
    std = (sum((v - mean) ** 2 for v in values) / 2) ** 0.5
    assert data["aggregate"]["mrr"] == pytest.approx(mean)
    assert data["std"]["mrr"] == pytest.approx(std)
