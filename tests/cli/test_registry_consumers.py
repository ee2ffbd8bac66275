"""The CLI reads the metric registry: `metrics list`, scales and interval methods in the run table,
intervals clipped into range on display, direction-aware --fail-under, `runs compare` per query."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

import ragmeter.metrics as rm
from ragmeter.models import EvalRunResult, MetricSummary

Cli = Callable[..., tuple[int, str, str]]


def test_metrics_list_json_is_the_registry(ragmeter_cli: Cli) -> None:
    code, out, _ = ragmeter_cli("metrics", "list", "--format", "json")
    assert code == 0
    listed = {m["name"]: m for m in json.loads(out)}
    assert list(listed) == [s.name for s in rm.specs()]
    for spec in rm.specs():
        m = listed[spec.name]
        assert m["range"] == [spec.range[0], spec.range[1]] and m["higher_is_better"] == spec.higher_is_better
        assert (m["family"], m["stage"], m["version"]) == (spec.family, spec.stage, spec.version)
    assert listed["retrieval_grade"]["range"] == [1.0, 10.0] and listed["retrieval_grade"]["scale"] == "1-10"
    assert listed["latency_ms"]["range"] == [0.0, None] and listed["latency_ms"]["higher_is_better"] is False
    assert listed["hallucination_rate"]["higher_is_better"] is False

    code, out, _ = ragmeter_cli("metrics", "list", "--family", "judge")
    assert code == 0 and "retrieval_grade" in out and "1-10" in out and "ndcg@k" not in out
    code, _, err = ragmeter_cli("metrics", "list", "--family", "nosuch")
    assert code == 2 and "--family: no metric of family 'nosuch'" in err


def test_a_user_metric_is_listed(ragmeter_cli: Cli) -> None:
    rm.register(
        "answer_words", lambda i: float(len((i.answer or "").split())), range=(0, None), scale="words"
    )
    try:
        _, out, _ = ragmeter_cli("metrics", "list", "--format", "json")
        mine = {m["name"]: m for m in json.loads(out)}["answer_words"]
        assert mine["family"] == "custom" and mine["range"] == [0.0, None] and mine["scale"] == "words"
    finally:
        rm.unregister("answer_words")


def _stored_run(tmp_path: Path) -> EvalRunResult:
    return EvalRunResult(
        run_id="old-run",
        aggregate={
            # an interval from before intervals were computed in range (normal approximation)
            "recall@3": MetricSummary(mean=0.975, std=0.1, n=40, ci95=(0.9387, 1.0113)),
            "retrieval_grade": MetricSummary(
                mean=7.5, std=1.2, n=40, ci95=(7.1, 7.9), ci_method="bootstrap-percentile"
            ),
            "hit@1": MetricSummary(mean=0.5, std=0.5, n=40, ci95=(0.35, 0.65), ci_method="wilson"),
        },
    )


def test_run_table_shows_scale_and_method_and_clips_old_intervals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragmeter.cli.options import print_run

    print_run(_stored_run(tmp_path))
    out = capsys.readouterr().out
    rows = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[1:-1]]
        for line in out.splitlines()
        if line.startswith("│")
    }
    assert rows["recall@3"][1] == "0-1" and rows["retrieval_grade"][1] == "1-10"
    assert (
        rows["recall@3"][4] == "[0.939, 1.000]"
        and rows["recall@3"][5] == "normal (old run), clipped to range"
    )
    assert (
        rows["retrieval_grade"][4] == "[7.100, 7.900]"
        and rows["retrieval_grade"][5] == "bootstrap-percentile"
    )
    assert rows["hit@1"][5] == "wilson"


def test_html_report_shows_scale_and_clipped_interval(tmp_path: Path) -> None:
    pytest.importorskip("jinja2")
    from ragmeter.report.html import render_html

    html = render_html([_stored_run(tmp_path)], plots=False)
    assert "1.0113" not in html and "[0.9387, 1.0000]" in html and "clipped to range" in html
    scales = re.findall(r"<td[^>]*>\s*(0-1|1-10)\b", html)
    assert "1-10" in scales and "0-1" in scales


def test_fail_under_follows_the_metric_direction() -> None:
    from ragmeter.cli.options import check_fail_under, parse_fail_under

    agg = {
        "hallucination_rate": MetricSummary(mean=0.3, std=0.0, n=3),
        "mrr": MetricSummary(mean=0.5, std=0.0, n=3),
    }
    assert parse_fail_under(["p@5=0.2"]) == {"precision@5": 0.2}  # aliases become canonical names
    assert check_fail_under(agg, {"hallucination_rate": 0.4, "mrr": 0.5}) == []
    assert check_fail_under(agg, {"hallucination_rate": 0.2}) == [
        "hallucination_rate = 0.3000 > 0.2 (lower is better)"
    ]
    assert check_fail_under(agg, {"mrr": 0.6, "ndcg@10": 0.1}) == ["mrr = 0.5000 < 0.6", "ndcg@10 = - < 0.1"]


def test_compare_shows_the_queries_that_changed(cli_env: dict[str, str], ragmeter_cli: Cli) -> None:
    base = [
        "run",
        "-d",
        cli_env["dataset"],
        "--no-generation",
        "--no-progress",
        "--top-k",
        "1,3",
        "--db",
        cli_env["db"],
    ]
    base += ["--format", "json"]
    a = json.loads(ragmeter_cli(*base, "-s", "cli_fakes:system_a")[1])["run_id"]
    b = json.loads(ragmeter_cli(*base, "-s", "cli_fakes:system_b")[1])["run_id"]
    compare = ["runs", "compare", a, b, "--db", cli_env["db"], "--resamples", "200"]

    code, out, _ = ragmeter_cli(*compare, "--format", "json", "--top", "1")
    assert code == 0
    data = json.loads(out)
    recall = data["queries"]["recall@1"]
    # B fixed France and Germany (A buried their documents) and broke Italy; --top 1: one of each
    assert [e["query_id"] for e in recall["regressed"]] == ["q-italy"]
    assert len(recall["improved"]) == 1 and recall["improved"][0]["query_id"] in ("q-france", "q-germany")
    assert recall["improved"][0]["a"] == 0.0 and recall["improved"][0]["b"] == 1.0
    assert recall["improved"][0]["question"].startswith("What is the capital of")
    rows = {r["metric"]: r for r in data["metrics"]}
    assert (rows["recall@1"]["wins"], rows["recall@1"]["losses"], rows["recall@1"]["ties"]) == (2, 1, 3)
    assert {r["stage"] for r in data["latency"]} >= {"retrieve"}
    assert all(r["a"]["p50"] <= r["a"]["p95"] <= r["a"]["max"] for r in data["latency"])

    code, out, _ = ragmeter_cli(*compare, "--format", "json", "--per-query")
    every = json.loads(out)["queries"]["recall@1"]
    assert sorted(e["query_id"] for group in every.values() for e in group) == sorted(
        f"q-{c}" for c in ("france", "germany", "italy", "spain", "portugal", "austria")
    )
    assert len(every["improved"]) == 2 and len(every["unchanged"]) == 3

    code, out, _ = ragmeter_cli(*compare)
    assert code == 0 and "queries that changed most" in out and "q-italy" in out and "regressed" in out
    assert "latency per stage" in out and "retrieve" in out
