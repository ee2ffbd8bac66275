"""The HTML report's tables: the summary (one row per metric, the best run marked), PPI estimates, judge
stability, sufficiency, and each comparison's significance rows and per-query changes; plain dicts and
lists that the templates render."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragmeter import metrics as registry
from ragmeter.models import EvalRunResult
from ragmeter.report.export import ci_text
from ragmeter.report.plots import metric_mean, metric_values
from ragmeter.report.selection import change_rows, display_order

if TYPE_CHECKING:
    from ragmeter.experiments.significance import Comparison


def fmt(value: Any, digits: int = 4) -> str:
    """A value as the report shows it: floats to `digits` places (tiny ones in e-notation), None as a dash."""
    if value is None:
        return "–"
    if isinstance(value, float):
        if value != 0 and abs(value) < 10 ** (-digits):
            return f"{value:.2e}"
        return f"{value:.{digits}f}"
    return str(value)


def _summary_cell(run: EvalRunResult, name: str) -> dict[str, Any]:
    s = run.aggregate.get(name)
    values = metric_values(run, name)
    mean = metric_mean(run, name)
    ci, method = ci_text(name, s, digits=4) if s is not None else ("-", "-")
    std = s.std if s is not None else None
    n = s.n if s is not None else len(values)
    n_null = s.n_null if s is not None else sum(1 for q in run.per_query if name in q.metrics) - n
    detail = f"n={n}" + (f", {n_null} null" if n_null else "") + (f", std {fmt(std)}" if std else "")
    return {
        "mean": mean,
        "text": fmt(mean),
        "ci": "" if ci == "-" else ci,
        "ci_method": "" if method == "-" else method,
        "n_null": n_null,
        "n": n,
        "title": detail + ("" if ci == "-" else f", 95% CI {ci} {method}"),
    }


def rankable_cells(cells: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cells that may be marked best: a mean over at least half as many values as the largest of
    the row (a run of 1 query is not "best" against runs of 60; its mean is shown, not ranked)."""
    valued = [c for c in cells if c["mean"] is not None]
    most = max((int(c["n"] or 0) for c in valued), default=0)
    return [c for c in valued if 2 * int(c["n"] or 0) >= most]


def summary_rows(runs: Sequence[EvalRunResult], metrics: Sequence[str]) -> list[dict[str, Any]]:
    """One row per metric in the registry's display order: its scale, direction and interval method, per
    run the mean and the stored 95% interval (clipped into the metric's range for runs stored before that
    held); count, nulls and std in the cell's tooltip. Bold marks the best run in the metric's direction,
    among the runs whose mean is over at least half as many queries as the largest (`rankable_cells`)."""
    rows = []
    for name in display_order(metrics):
        cells = [_summary_cell(run, name) for run in runs]
        ranked = rankable_cells(cells)
        means = [c["mean"] for c in ranked]
        higher = registry.higher_is_better(name)
        best = (max if higher else min)(means) if len(means) > 1 else None
        methods = {c["ci_method"] for c in cells if c["ci_method"]}
        for c in cells:
            c["best"] = best is not None and c["mean"] == best and any(c is r for r in ranked)
            if len(methods) == 1:
                c["ci_method"] = ""  # shown once, in the scale column
        spec = registry.lookup(name)
        rows.append(
            {
                "metric": name,
                "scale": spec.scale if spec is not None else "?",
                "method": methods.pop() if len(methods) == 1 else "",
                "direction": "higher is better" if higher else "lower is better",
                "cells": cells,
            }
        )
    return rows


def ppi_rows(labels: Sequence[str], runs: Sequence[EvalRunResult]) -> list[dict[str, Any]]:
    """One row per (run, judge metric) with a PPI estimate (`EvalRunResult.ppi`), in display order."""
    rows = []
    for label, run in zip(labels, runs, strict=True):
        for name in display_order(list(run.ppi)):
            e = run.ppi[name]
            rows.append(
                {
                    "run": label,
                    "metric": name,
                    "judge_mean": fmt(e.judge_mean),
                    "estimate": fmt(e.estimate),
                    "ci": f"[{fmt(e.ci95[0])}, {fmt(e.ci95[1])}]",
                    "n": f"{e.n_labeled} / {e.n_total}",
                    "title": f"human labels alone: {fmt(e.human_mean)}; se {fmt(e.se)}; {e.labels}",
                }
            )
    return rows


def _better(delta: float | None, higher_is_better: bool) -> str:
    if delta is None or delta == 0:
        return ""
    return "better" if (delta > 0) == higher_is_better else "worse"


def _delta_text(delta: float | None, changed: bool | None, digits: int = 3) -> str:
    if delta is None:
        return "–"
    if not changed:
        return "0"
    return f"{delta:+.{digits}f}" if abs(delta) >= 10 ** (-digits) else f"{delta:+.1e}"


def comparison_view(
    cmp: Comparison, run_a: EvalRunResult, run_b: EvalRunResult, columns: Sequence[str], top: int
) -> dict[str, Any]:
    """The significance rows of one comparison (display order; p(t) in a tooltip) and its per-query change
    table: the queries that changed most first, one column per headline metric that varies."""
    by_name = {m.metric: m for m in cmp.metrics}
    # Columns: the headline metrics on which at least one query changed.
    changed = [c for c in columns if c in by_name and by_name[c].wins + by_name[c].losses > 0]
    changes, n_changed = change_rows(run_a, run_b, changed, top=top)
    return {
        "title": f"{cmp.run_b} vs {cmp.run_a}",
        "run_a": cmp.run_a,
        "run_b": cmp.run_b,
        "n_resamples": cmp.n_resamples,
        "seed": cmp.seed,
        "rows": [
            {
                "metric": m.metric,
                "n": m.n,
                "n_excluded": m.n_excluded,
                "mean_a": fmt(m.mean_a),
                "mean_b": fmt(m.mean_b),
                "delta": _delta_text(m.delta, m.delta != 0 if m.delta is not None else None, 4),
                "better": _better(m.delta, m.higher_is_better),
                "ci": f"[{fmt(m.ci95[0])}, {fmt(m.ci95[1])}]" if m.ci95 else "–",
                "p_t": fmt(m.p_t),
                "p_perm": fmt(m.p_perm) + ("" if m.perm_exact is None or m.perm_exact else " (MC)"),
                "p_holm": fmt(m.p_holm),
                "wlt": f"{m.wins}/{m.losses}/{m.ties}",
                "significant": m.significant(),
            }
            for m in (by_name[name] for name in display_order(list(by_name)))
        ],
        "change_metrics": [c["metric"] for c in changes[0]["cells"]] if changes else [],
        "changes": [
            {
                "query_id": r["query_id"],
                "question": r["question"],
                "size": repr(r["size"]),
                "cells": [
                    {
                        "text": _delta_text(c["delta"], c["better"] is not None),
                        "sort": "" if c["delta"] is None else repr(c["delta"]),
                        "better": "" if c["better"] is None else ("better" if c["better"] else "worse"),
                        "title": f"{fmt(c['a'])} → {fmt(c['b'])}",
                    }
                    for c in r["cells"]
                ],
            }
            for r in changes
        ],
        "n_changed": n_changed,
    }


def stability_rows(labels: Sequence[str], runs: Sequence[EvalRunResult]) -> list[list[str]]:
    """One row per (run, judge metric) of a run judged in repeats: the run's label, then STABILITY_COLUMNS."""
    from ragmeter.score.stability import stability_rows

    return [
        [label, *row]
        for label, run in zip(labels, runs, strict=True)
        for row in stability_rows(run.stability)
    ]


def sufficiency_rows(labels: Sequence[str], runs: Sequence[EvalRunResult]) -> list[list[str]]:
    """One row per (run, sufficient / insufficient) of a run with a sufficiency table: the run's label, the
    row, then each outcome's count, share of the table and Wilson 95% interval, and the row's total."""
    from ragmeter.score.sufficiency import COLUMNS, ROWS

    def cell(c: dict[str, Any]) -> str:
        if c.get("share") is None:
            return str(c["n"])
        lo, hi = c["ci95"]
        return f"{c['n']} ({c['share']:.0%} [{lo:.2f}, {hi:.2f}])"

    out = []
    for label, run in zip(labels, runs, strict=True):
        if not run.sufficiency:
            continue
        for row in ROWS:
            cells = run.sufficiency["cells"][row]
            out.append([label, row, *(cell(cells[c]) for c in (*COLUMNS, "total"))])
    return out
