from __future__ import annotations

import csv
import re
import struct
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import markupsafe
import pytest
from report_payloads import IMG_XSS, XSS

from ragmeter.models import EvalRunResult, MetricResult, QueryEvalResult
from ragmeter.report.export import load_run_json, write_long_csv
from ragmeter.report.html import render_html
from ragmeter.report.plots import (
    at_k_families,
    distribution_figure,
    judge_grade_figure,
    metric_at_k_figure,
    paired_difference_figure,
    save_figure,
    write_plots,
)

MakeRun = Callable[..., EvalRunResult]


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_long_csv_one_row_per_query_and_metric(tmp_path: Path, make_run: MakeRun) -> None:
    a, b = make_run("bm25", 1, n=5), make_run("dense", 2, n=4)
    n = write_long_csv([a, b], tmp_path / "long.csv")
    with (tmp_path / "long.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    n_metrics = len(a.per_query[0].metrics)
    assert n == len(rows) == (5 + 4) * n_metrics
    keys = {(r["run_name"], r["query_id"], r["metric"]) for r in rows}
    assert len(keys) == len(rows)  # no duplicates
    by_key = {(r["run_name"], r["query_id"], r["metric"]): r for r in rows}
    for q in a.per_query:
        for name, m in q.metrics.items():
            row = by_key[("bm25", q.query_id, name)]
            if m.value is None:
                assert row["value"] == "" and row["error"] == m.error
            else:
                assert float(row["value"]) == m.value  # exact round trip
    assert by_key[("bm25", "q003", "retrieval_grade")]["error"] == "judge timed out after 3 retries"


def test_long_csv_reads_into_pandas(tmp_path: Path, make_run: MakeRun) -> None:
    pd = pytest.importorskip("pandas")
    run = make_run("bm25", 1, n=6)
    write_long_csv(run, tmp_path / "long.csv")
    df = pd.read_csv(tmp_path / "long.csv")
    wide = df.pivot(index="query_id", columns="metric", values="value")
    assert wide.shape == (6, len(run.per_query[0].metrics))
    assert wide.loc["q000", "mrr"] == run.per_query[0].metrics["mrr"].value
    assert int(df["value"].isna().sum()) == 1  # the one failed judge call


def test_load_run_json_round_trip_and_errors(tmp_path: Path, make_run: MakeRun) -> None:
    from ragmeter.errors import InputError

    run = make_run("bm25", 1, n=3)
    path = tmp_path / "run.json"
    path.write_text(run.model_dump_json(indent=2), encoding="utf-8")
    assert load_run_json(path) == run
    bad = tmp_path / "bad.json"
    bad.write_text('{"per_query": [}', encoding="utf-8")
    with pytest.raises(InputError, match="not valid JSON") as info:
        load_run_json(bad)
    assert info.value.source == str(bad)
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"per_query": [{"query_id": 3}]}', encoding="utf-8")
    with pytest.raises(InputError, match=r"per_query\.0\.query_id"):
        load_run_json(wrong)


def test_at_k_families() -> None:
    names = ["recall@5", "recall@10", "ndcg@10", "mrr", "p@1", "p@3", "hit@x"]
    assert at_k_families(names) == {"recall": [5, 10], "p": [1, 3]}


def test_plots_written_as_png_and_svg(tmp_path: Path, make_run: MakeRun) -> None:
    runs = [make_run("bm25", 1, n=20), make_run("hybrid", 2, n=20, boost=0.1)]
    written = write_plots(runs, tmp_path)
    assert set(written) == {"forest", "metric_at_k", "distribution", "judge_grades"}
    for files in written.values():
        assert sorted(p.suffix for p in files) == [".png", ".svg"]
        png = next(p for p in files if p.suffix == ".png")
        w, h = png_size(png)
        assert w > 300 and h > 200
        svg = next(p for p in files if p.suffix == ".svg").read_text(encoding="utf-8")
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    # The text in the SVGs is the metric names we gave.
    svg = (tmp_path / "metric_at_k.svg").read_text(encoding="utf-8")
    assert "recall@k" in svg and "ndcg@k" in svg


def test_metric_at_k_uses_the_runs_means(make_run: MakeRun) -> None:
    run = make_run("bm25", 1, n=10)
    fig = metric_at_k_figure([run])
    assert fig is not None
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles == ["recall@k", "ndcg@k"]
    line = fig.axes[0].get_lines()[0]
    assert list(line.get_xdata()) == [1, 5, 10]
    assert fig.axes[0].get_ylim() == pytest.approx((-0.04, 1.04))  # recall's fixed 0-1 range, padded
    expected = [run.aggregate[f"recall@{k}"].mean for k in (1, 5, 10)]
    assert list(line.get_ydata()) == pytest.approx(expected)


def test_distribution_and_paired_figures(make_run: MakeRun) -> None:
    a, b = make_run("a", 1, n=15), make_run("b", 2, n=15, boost=0.2)
    fig = distribution_figure([a, b], ["mrr", "retrieval_grade"])
    assert fig is not None
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles == ["mrr", "retrieval_grade (2 null)"]
    assert distribution_figure([a, b], ["mrr"], kind="violin") is not None
    with pytest.raises(ValueError):
        distribution_figure([a], kind="pie")
    fig = paired_difference_figure(a, b, ["recall@10"])
    assert fig is not None
    ax = fig.axes[0]
    offsets = ax.collections[0].get_offsets()
    assert len(offsets) == 15
    deltas = [
        qb.metrics["recall@10"].value - qa.metrics["recall@10"].value  # type: ignore[operator]
        for qa, qb in zip(a.per_query, b.per_query, strict=True)
    ]
    assert f"Δ={sum(deltas) / 15:+.4f}" in ax.get_title()
    assert paired_difference_figure(a, b, ["no-such-metric"]) is None


def test_judge_histogram_counts(make_run: MakeRun) -> None:
    run = make_run("a", 1, n=12)
    fig = judge_grade_figure([run], ["retrieval_grade"])
    assert fig is not None
    ax = fig.axes[0]
    assert ax.get_title() == "retrieval_grade (1 failed)"
    heights = [p.get_height() for p in ax.patches]
    assert sum(heights) == 11  # 12 queries, one null grade
    grades = [q.metrics["retrieval_grade"].value for q in run.per_query]
    assert heights[9] == sum(1 for g in grades if g == 10.0)  # bins 1..10, centred on the integers
    empty = EvalRunResult(
        per_query=[QueryEvalResult(query_id="q", metrics={"mrr": MetricResult(name="mrr", value=1)})]
    )
    assert judge_grade_figure([empty]) is None


def test_save_figure_svg_is_reproducible(tmp_path: Path, make_run: MakeRun) -> None:
    fig = metric_at_k_figure([make_run("a", 1, n=5)])
    assert fig is not None
    first = save_figure(fig, tmp_path / "one", ["svg"])[0].read_text(encoding="utf-8")
    second = save_figure(fig, tmp_path / "two", ["svg"])[0].read_text(encoding="utf-8")
    assert first == second


def test_html_escapes_everything_from_data(make_run: MakeRun) -> None:
    runs = [make_run("bm25", 1, n=6, hostile=True), make_run("hybrid", 2, n=6, boost=0.1)]
    page = render_html(runs, n_resamples=200, plots=False, generated_at=datetime(2026, 1, 1, tzinfo=UTC))
    # Exactly one script element: the report's own sorter.
    assert len(re.findall(r"<script\b", page)) == 1
    assert XSS not in page and IMG_XSS not in page
    assert str(markupsafe.escape(XSS)) in page and str(markupsafe.escape(IMG_XSS)) in page
    # A CSP admits only that script, by hash.
    assert re.search(r"script-src 'sha256-[A-Za-z0-9+/=]{44}'", page)
    assert "2026-01-01 00:00:00 UTC" in page


def test_html_content(make_run: MakeRun) -> None:
    runs = [make_run("bm25", 1, n=8), make_run("hybrid", 2, n=8, boost=0.3)]
    page = render_html(runs, n_resamples=500)
    # Self-contained: no external references at all.
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)
    assert "<link" not in page
    # Plots are inline PNGs: the forest plot leads, then metric@k, distributions and judge grades.
    assert page.count('src="data:image/png;base64,') == 4
    plots = re.findall(r'data-plot="([^"]+)"', page)
    assert plots == ["forest", "metric_at_k", "distribution", "judge_grades"]
    assert page.index('data-plot="forest"') < page.index('id="summary"')
    # The summary, the significance table, the per-query tables with docs, answers, judge reasons.
    assert "Summary" in page and "Significance" in page and "hybrid vs bm25" in page
    for q in runs[0].per_query:
        assert f'<td class="id">{q.query_id}</td>' in page
    assert "Passage text 0 for q000." in page
    assert "Thing 0 is a thing." in page
    assert "Chunk 1 answers question 0 directly." in page
    assert "judge timed out after 3 retries" in page
    assert "SUPPORTED" in page
    # Each numeric cell carries its exact value for sorting; null values sort last via an empty key.
    mrr0 = runs[0].per_query[0].metrics["mrr"].value
    assert f'data-sort="{mrr0!r}"' in page
    assert 'data-sort=""' in page


def test_html_single_run_has_no_significance(make_run: MakeRun) -> None:
    page = render_html([make_run("only", 1, n=4)], plots=False)
    assert "Significance" not in page
    with pytest.raises(ValueError):
        render_html([])


def test_summary_best_follows_metric_direction() -> None:
    from ragmeter.report.html import _summary_rows

    def run(name: str, hall: float, mrr: float) -> EvalRunResult:
        return EvalRunResult(
            name=name,
            per_query=[
                QueryEvalResult(
                    query_id="q",
                    metrics={
                        "hallucination_rate": MetricResult(name="hallucination_rate", value=hall),
                        "mrr": MetricResult(name="mrr", value=mrr),
                    },
                )
            ],
        )

    rows = {
        r["metric"]: r
        for r in _summary_rows([run("a", 0.1, 0.2), run("b", 0.5, 0.9)], ["hallucination_rate", "mrr"])
    }
    assert [c["best"] for c in rows["hallucination_rate"]["cells"]] == [True, False]  # lower is better
    assert [c["best"] for c in rows["mrr"]["cells"]] == [False, True]
