"""The self-contained HTML report: one file, inline CSS and base64 images, no network.

All text that comes from documents, questions, answers, judges or run names goes through jinja2's
autoescaping. As a second wall, a Content-Security-Policy admits only the report's own sorting script
(by its sha256 hash): an injected script or event handler would not run even if escaping failed.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter import metrics as registry
from ragmeter._version import __version__
from ragmeter.errors import MissingExtraError
from ragmeter.llm.usage import describe_usage
from ragmeter.models import EvalRunResult, MetricResult, QueryEvalResult
from ragmeter.report.export import ci_text, run_label
from ragmeter.report.nugget_note import nugget_set_note
from ragmeter.report.plots import metric_mean, metric_names, metric_values, report_figures
from ragmeter.report.selection import change_rows, display_order, headline_metrics, judged_note, no_variation

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ragmeter.experiments.significance import Comparison

_TEMPLATE_DIR = Path(__file__).parent / "templates"


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        if value != 0 and abs(value) < 10 ** (-digits):
            return f"{value:.2e}"
        return f"{value:.{digits}f}"
    return str(value)


def _png_data_uri(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _detail_text(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=1, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more characters]"


def _judgement(name: str, m: MetricResult, limit: int) -> dict[str, Any]:
    return {
        "name": name,
        "value": _fmt(m.value),
        "version": m.version,
        "error": m.error,
        "details": [(k, _detail_text(v, limit)) for k, v in m.details.items()],
    }


def _query_row(
    q: QueryEvalResult, metrics: Sequence[str], *, max_docs: int, snippet_chars: int
) -> dict[str, Any]:
    cells = []
    for name in metrics:
        m = q.metrics.get(name)
        value = m.value if m is not None else None
        cells.append(
            {"text": _fmt(value), "sort": "" if value is None else repr(value), "error": m and m.error}
        )
    docs = [
        {
            "rank": d.rank,
            "doc_id": d.doc_id,
            "score": _fmt(d.score),
            "text": d.text if len(d.text) <= snippet_chars else d.text[:snippet_chars] + "…",
        }
        for d in sorted(q.retrieved, key=lambda d: d.rank)[:max_docs]
    ]
    judged = [
        _judgement(name, m, 4 * snippet_chars)
        for name, m in q.metrics.items()
        if m.details or m.error is not None
    ]
    return {
        "query_id": q.query_id,
        "question": q.question,
        "status": q.status,
        "error": q.error,
        "answer": q.answer,
        "ground_truth": q.ground_truth_answer,
        "docs": docs,
        "n_retrieved": len(q.retrieved),
        "judged": judged,
        "all_metrics": "; ".join(
            f"{name} {_fmt(q.metrics[name].value)}" for name in display_order(list(q.metrics))
        ),
        "latency": ", ".join(f"{k} {v:.0f} ms" for k, v in q.latency_ms.items()),
        "cells": cells,
    }


def _summary_cell(run: EvalRunResult, name: str) -> dict[str, Any]:
    s = run.aggregate.get(name)
    values = metric_values(run, name)
    mean = metric_mean(run, name)
    ci, method = ci_text(name, s, digits=4) if s is not None else ("-", "-")
    std = s.std if s is not None else None
    n = s.n if s is not None else len(values)
    n_null = s.n_null if s is not None else sum(1 for q in run.per_query if name in q.metrics) - n
    detail = f"n={n}" + (f", {n_null} null" if n_null else "") + (f", std {_fmt(std)}" if std else "")
    return {
        "mean": mean,
        "text": _fmt(mean),
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


def _summary_rows(runs: Sequence[EvalRunResult], metrics: Sequence[str]) -> list[dict[str, Any]]:
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


def _ppi_rows(labels: Sequence[str], runs: Sequence[EvalRunResult]) -> list[dict[str, Any]]:
    """One row per (run, judge metric) with a PPI estimate (`EvalRunResult.ppi`), in display order."""
    rows = []
    for label, run in zip(labels, runs, strict=True):
        for name in display_order(list(run.ppi)):
            e = run.ppi[name]
            rows.append(
                {
                    "run": label,
                    "metric": name,
                    "judge_mean": _fmt(e.judge_mean),
                    "estimate": _fmt(e.estimate),
                    "ci": f"[{_fmt(e.ci95[0])}, {_fmt(e.ci95[1])}]",
                    "n": f"{e.n_labeled} / {e.n_total}",
                    "title": f"human labels alone: {_fmt(e.human_mean)}; se {_fmt(e.se)}; {e.labels}",
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


def _comparison_view(
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
                "mean_a": _fmt(m.mean_a),
                "mean_b": _fmt(m.mean_b),
                "delta": _delta_text(m.delta, m.delta != 0 if m.delta is not None else None, 4),
                "better": _better(m.delta, m.higher_is_better),
                "ci": f"[{_fmt(m.ci95[0])}, {_fmt(m.ci95[1])}]" if m.ci95 else "–",
                "p_t": _fmt(m.p_t),
                "p_perm": _fmt(m.p_perm) + ("" if m.perm_exact is None or m.perm_exact else " (MC)"),
                "p_holm": _fmt(m.p_holm),
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
                        "title": f"{_fmt(c['a'])} → {_fmt(c['b'])}",
                    }
                    for c in r["cells"]
                ],
            }
            for r in changes
        ],
        "n_changed": n_changed,
    }


def _environment() -> Any:
    try:
        import jinja2
    except ImportError:  # pragma: no cover - depends on the environment
        raise MissingExtraError("report", "the HTML report") from None
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATE_DIR)),
        autoescape=True,  # every template, whatever its extension
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env


def _figure_views(runs: Sequence[EvalRunResult], comparisons: Sequence[Comparison]) -> list[dict[str, Any]]:
    return [
        {
            "name": plot.name,
            "caption": plot.caption,
            "uri": _png_data_uri(plot.figure),
            "metrics": " ".join(plot.metrics),
        }
        for plot in report_figures(runs, comparisons)
    ]


def _flat_lines(flat: dict[str, str]) -> list[tuple[str, list[str]]]:
    """[("every query 1.0", [metrics...]), ...]: the metrics without variation, grouped by their value."""
    groups: dict[str, list[str]] = {}
    for name in display_order(list(flat)):
        groups.setdefault(flat[name], []).append(name)
    return list(groups.items())


def _stability_rows(labels: Sequence[str], runs: Sequence[EvalRunResult]) -> list[list[str]]:
    """One row per (run, judge metric) of a run judged in repeats: the run's label, then STABILITY_COLUMNS."""
    from ragmeter.score.stability import stability_rows

    return [
        [label, *row]
        for label, run in zip(labels, runs, strict=True)
        for row in stability_rows(run.stability)
    ]


def _sufficiency_rows(labels: Sequence[str], runs: Sequence[EvalRunResult]) -> list[list[str]]:
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


def render_html(
    runs: Sequence[EvalRunResult],
    *,
    comparisons: Sequence[Comparison] | None = None,
    plots: bool = True,
    max_docs: int = 5,
    snippet_chars: int = 400,
    n_resamples: int = 10_000,
    seed: int = 42,
    title: str | None = None,
    generated_at: datetime | None = None,
    csp: bool = True,
    top_changes: int = 30,
) -> str:
    """The report as one HTML string.

    With two or more runs and no ``comparisons`` given, each run is compared with the first
    (`ragmeter.experiments.significance.compare_runs`). A comparison leads with one forest plot of the
    per-metric deltas and a table of the queries that changed most (`top_changes` of them).
    """
    if not runs:
        raise ValueError("render_html needs at least one run")
    labels = [run_label(run, i) for i, run in enumerate(runs)]
    metrics = metric_names(runs)
    flat = no_variation(runs, metrics)
    # Per-query columns: the headline metrics that vary and have per-query values (not latency summaries).
    columns = [
        m for m in headline_metrics(metrics) if m not in flat and any(metric_values(run, m) for run in runs)
    ]
    if comparisons is None and len(runs) > 1:
        from ragmeter.report.forest import compare_with_first

        comparisons = compare_with_first(runs, seed=seed, n_resamples=n_resamples)
    comparisons = list(comparisons or [])
    figures = _figure_views(runs, comparisons) if plots else []
    sections = []
    for label, run in zip(labels, runs, strict=True):
        run_columns = [m for m in columns if m in metric_names([run])]
        sections.append(
            {
                "label": label,
                "run": run,
                "config": run.config.model_dump_json(indent=1, exclude_none=True),
                "metrics": run_columns,
                "judged": judged_note(run),
                "nugget_set": nugget_set_note(run),
                "usage": describe_usage(run.usage.dump() if run.usage else None),
                "rows": [
                    _query_row(q, run_columns, max_docs=max_docs, snippet_chars=snippet_chars)
                    for q in run.per_query
                ],
            }
        )
    env = _environment()
    script = (_TEMPLATE_DIR / "sort.js.j2").read_text(encoding="utf-8")
    script_hash = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    template = env.get_template("report.html.j2")
    return str(
        template.render(
            title=title or "ragmeter report: " + ", ".join(labels),
            labels=labels,
            sections=sections,
            summary=_summary_rows(runs, metrics),
            ppi=_ppi_rows(labels, runs),
            stability=_stability_rows(labels, runs),
            sufficiency=_sufficiency_rows(labels, runs),
            risk_coverage=[
                (label, run.risk_coverage)
                for label, run in zip(labels, runs, strict=True)
                if run.risk_coverage and run.risk_coverage.get("aurc") is not None
            ],
            comparisons=[
                _comparison_view(c, runs[0], runs[i], columns, top_changes)
                for i, c in enumerate(comparisons, start=1)
            ],
            forest=next((f for f in figures if f["name"] == "forest"), None),
            figures=[f for f in figures if f["name"] != "forest"],
            flat=_flat_lines(flat),
            css=(_TEMPLATE_DIR / "style.css.j2").read_text(encoding="utf-8"),
            script=script,
            csp=f"sha256-{script_hash}" if csp else None,
            generated_at=(generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S UTC"),
            version=__version__,
            max_docs=max_docs,
        )
    )


def write_html_report(runs: Sequence[EvalRunResult], path: str | Path, **options: Any) -> Path:
    """Render the report and write it to path (parents created)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(runs, **options), encoding="utf-8")
    return out
