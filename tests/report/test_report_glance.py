"""The report at a glance: headline cut-offs, fixed ranges from the registry, no-variation metrics left
unplotted, the forest plot of a comparison and the queries that changed most."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import pytest
from matplotlib.colors import to_hex

from ragmeter import metrics as registry
from ragmeter.experiments.significance import compare_runs, per_query_values
from ragmeter.models import EvalRunResult, MetricResult, QueryEvalResult
from ragmeter.report.forest import BETTER, SAME, WORSE, forest_figure, forest_metrics
from ragmeter.report.html import render_html
from ragmeter.report.plots import distribution_figure, report_figures
from ragmeter.report.selection import change_rows, headline_metrics, no_variation

MakeRun = Callable[..., EvalRunResult]


def table_run(name: str, values: Mapping[str, Sequence[float | None]]) -> EvalRunResult:
    """A run whose query i has values[metric][i] for each metric."""
    n = len(next(iter(values.values())))
    return EvalRunResult(
        name=name,
        per_query=[
            QueryEvalResult(
                query_id=f"q{i}",
                question=f"question {i}",
                metrics={m: MetricResult(name=m, value=vs[i]) for m, vs in values.items()},
            )
            for i in range(n)
        ],
    )


def with_constant(run: EvalRunResult, metric: str, value: float) -> EvalRunResult:
    """A copy of run where every query has `metric` = value."""
    per_query = [
        q.model_copy(update={"metrics": {**q.metrics, metric: MetricResult(name=metric, value=value)}})
        for q in run.per_query
    ]
    return run.model_copy(update={"per_query": per_query})


def test_headline_metrics_keep_one_cutoff_per_family() -> None:
    names = ["recall@1", "recall@10", "recall@5", "ndcg@3", "ndcg@5", "mrr", "hit@20", "token_f1"]
    # k=10 where a family has it, else its largest cut-off; metrics without one stay; registry order.
    assert headline_metrics(names) == ["recall@10", "ndcg@5", "hit@20", "mrr", "token_f1"]


def test_no_variation_is_across_queries_and_runs() -> None:
    a = table_run("a", {"mrr": [1.0, 1.0, None], "map": [0.5, 0.5, 0.5], "token_f1": [0.2, 0.4, 0.4]})
    b = table_run("b", {"mrr": [1.0, 1.0, 1.0], "map": [0.7, 0.7, 0.7], "token_f1": [0.3, 0.3, 0.3]})
    # mrr: one value everywhere (a null counted); map varies between runs; token_f1 within a run.
    assert no_variation([a, b], ["mrr", "map", "token_f1"]) == {"mrr": "every query 1.0 (1 null)"}
    assert no_variation([a], ["map"]) == {"map": "every query 0.5"}


def test_bounded_metrics_use_the_registry_range() -> None:
    registry.register("h9_stars", lambda _: None, range=(0.0, 5.0), scale="0-5 stars")
    try:
        run = table_run(
            "a", {"h9_stars": [3.0, 3.5, 4.0], "mrr": [0.9, 1.0, 0.95], "latency_total_ms": [5, 9, 7]}
        )
        fig = distribution_figure([run], ["h9_stars", "mrr", "latency_total_ms"])
        assert fig is not None
        stars, mrr, latency = fig.axes[:3]
        assert stars.get_ylim() == pytest.approx((-0.2, 5.2))  # 0-5 from the registry, 4% padding
        assert mrr.get_ylim() == pytest.approx((-0.04, 1.04))  # not 0.9-1.0 from the data
        assert latency.get_ylim()[0] > 0  # unbounded: autoscaled to the data
    finally:
        registry.unregister("h9_stars")


def test_no_variation_metrics_are_not_plotted(make_run: MakeRun) -> None:
    runs = [
        with_constant(make_run("bm25", 1, n=12), "support_coverage", 1.0),
        with_constant(make_run("hybrid", 2, n=12, boost=0.2), "support_coverage", 1.0),
    ]
    plots = report_figures(runs, [compare_runs(*map(per_query_values, runs), n_resamples=200)])
    assert [p.name for p in plots] == ["forest", "metric_at_k", "distribution", "judge_grades"]
    for plot in plots:
        assert "support_coverage" not in plot.metrics
        titles = [ax.get_title() for ax in plot.figure.axes] + [
            t.get_text() for ax in plot.figure.axes for t in ax.get_yticklabels()
        ]
        assert not any("support_coverage" in t for t in titles)
    distribution = next(p for p in plots if p.name == "distribution")
    assert distribution.metrics == ["recall@10", "ndcg@10", "mrr"]  # headline cut-offs; judges have their own
    assert next(p for p in plots if p.name == "judge_grades").metrics == ["retrieval_grade", "factuality"]
    page = render_html(runs, n_resamples=200)
    line = re.search(r"<li>every query 1\.0: (.*?)</li>", page)
    assert line is not None and '<code data-metric="support_coverage">' in line.group(1)


def test_forest_plot_deltas_intervals_and_direction() -> None:
    a = table_run(
        "a",
        {
            "mrr": [1.0, 0.5, 1.0, 0.5, 1.0, 0.5],
            "hallucination_rate": [0.4, 0.6, 0.5, 0.4, 0.6, 0.5],
            "token_f1": [0.3, 0.2, 0.1, 0.3, 0.2, 0.1],
        },
    )
    b = table_run(
        "b",
        {
            "mrr": [0.5, 0.5, 0.5, 0.5, 1.0, 0.25],  # lower: worse
            "hallucination_rate": [0.1, 0.2, 0.1, 0.2, 0.1, 0.2],  # lower: better (lower is better)
            "token_f1": [0.3, 0.2, 0.1, 0.3, 0.2, 0.1],  # unchanged
        },
    )
    cmp = compare_runs(per_query_values(a), per_query_values(b), n_resamples=500, seed=7, names=("a", "b"))
    rows = forest_metrics([cmp])
    assert rows == sorted(["token_f1", "hallucination_rate", "mrr"], key=registry.sort_key)
    assert rows[0] == "mrr"  # retrieval before generation metrics
    fig = forest_figure([cmp], rows)
    assert fig is not None
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == rows
    markers = {-round(float(ln.get_ydata()[0])): ln for ln in ax.get_lines() if len(ln.get_xdata()) == 1}
    spans = {
        -round(float(ln.get_ydata()[0])): ln
        for ln in ax.get_lines()
        if len(ln.get_xdata()) == 2 and ln.get_ydata()[0] == ln.get_ydata()[1]  # not the axvline at 0
    }
    expected_colour = {"mrr": WORSE, "token_f1": SAME, "hallucination_rate": BETTER}
    for i, name in enumerate(rows):
        m = cmp.get(name)
        assert m.delta is not None and m.ci95 is not None
        assert float(markers[i].get_xdata()[0]) == pytest.approx(m.delta)
        assert to_hex(markers[i].get_color()) == expected_colour[name]
        # The interval is compare_runs' paired bootstrap interval, not recomputed.
        assert [float(x) for x in spans[i].get_xdata()] == pytest.approx(list(m.ci95))
        # Filled when the interval excludes 0.
        filled = to_hex(markers[i].get_markerfacecolor()) != "#ffffff"
        assert filled == (m.ci95[0] > 0 or m.ci95[1] < 0)
    hallucination = rows.index("hallucination_rate")
    assert to_hex(markers[hallucination].get_markerfacecolor()) == BETTER  # clearly down


def test_change_rows_sorted_by_largest_change() -> None:
    a = table_run("a", {"mrr": [1.0, 0.5, 0.2, 0.3], "token_f1": [0.1, 0.1, 0.1, 0.3]})
    b = table_run("b", {"mrr": [0.5, 0.5, 0.3, 0.3], "token_f1": [0.1, 0.9, 0.1, 0.3]})
    rows, n_changed = change_rows(a, b, ["mrr", "token_f1"], top=2)
    assert n_changed == 3  # q3 did not change
    assert [r["query_id"] for r in rows] == ["q1", "q0"]  # |0.8| on token_f1, then |0.5| on mrr
    assert rows[0]["size"] == pytest.approx(0.8)
    cells = {c["metric"]: c for c in rows[1]["cells"]}
    assert cells["mrr"]["delta"] == pytest.approx(-0.5) and cells["mrr"]["better"] is False
    assert cells["token_f1"]["delta"] == 0 and cells["token_f1"]["better"] is None


def test_comparison_page_leads_with_forest_and_changes(make_run: MakeRun) -> None:
    runs = [make_run("bm25", 1, n=10), make_run("hybrid", 2, n=10, boost=0.3)]
    page = render_html(runs, n_resamples=200, top_changes=3)
    order = [page.index(s) for s in ('data-plot="forest"', 'class="sortable changes"', 'id="summary"')]
    assert order == sorted(order)
    table = page[page.index('class="sortable changes"') : page.index('id="summary"')]
    assert table.count("<tr><td") == 3  # top_changes rows
    # The first row is the query with the largest change on a headline metric.
    rows, _ = change_rows(runs[0], runs[1], ["recall@10", "ndcg@10", "mrr", "retrieval_grade", "factuality"])
    first = re.search(r'<tr><td class="id">([^<]+)</td>', table)
    assert first is not None and first.group(1) == rows[0]["query_id"]
