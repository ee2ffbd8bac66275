"""The self-contained HTML report: one file, inline CSS and base64 images, no network.

All text that comes from documents, questions, answers, judges or run names goes through jinja2's
autoescaping. As a second wall, a Content-Security-Policy admits only the report's own sorting script
(by its sha256 hash): an injected script or event handler would not run even if escaping failed.
The tables' rows (summary, PPI, stability, sufficiency, comparisons) are built in html_tables.py.
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

from ragmeter._version import __version__
from ragmeter.errors import MissingExtraError
from ragmeter.llm.usage import describe_usage
from ragmeter.models import EvalRunResult, MetricResult, QueryEvalResult
from ragmeter.report.export import run_label
from ragmeter.report.html_tables import (
    comparison_view,
    fmt,
    ppi_rows,
    stability_rows,
    sufficiency_rows,
    summary_rows,
)
from ragmeter.report.html_tables import rankable_cells as rankable_cells
from ragmeter.report.html_tables import summary_rows as _summary_rows  # noqa: F401  (imported from here by that name)
from ragmeter.report.nugget_note import nugget_set_note
from ragmeter.report.plots import metric_names, metric_values, report_figures
from ragmeter.report.selection import display_order, headline_metrics, judged_note, no_variation
from ragmeter.result_models import as_json

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ragmeter.experiments.significance import Comparison

_TEMPLATE_DIR = Path(__file__).parent / "templates"


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
        "value": fmt(m.value),
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
            {"text": fmt(value), "sort": "" if value is None else repr(value), "error": m and m.error}
        )
    docs = [
        {
            "rank": d.rank,
            "doc_id": d.doc_id,
            "score": fmt(d.score),
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
            f"{name} {fmt(q.metrics[name].value)}" for name in display_order(list(q.metrics))
        ),
        "latency": ", ".join(f"{k} {v:.0f} ms" for k, v in q.latency_ms.items()),
        "cells": cells,
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
                "usage": describe_usage(as_json(run.usage)),
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
            summary=summary_rows(runs, metrics),
            ppi=ppi_rows(labels, runs),
            stability=stability_rows(labels, runs),
            sufficiency=sufficiency_rows(labels, runs),
            risk_coverage=[
                (label, run.risk_coverage)
                for label, run in zip(labels, runs, strict=True)
                if run.risk_coverage and run.risk_coverage.get("aurc") is not None
            ],
            comparisons=[
                comparison_view(c, runs[0], runs[i], columns, top_changes)
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
