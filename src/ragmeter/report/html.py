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

from ragmeter import __version__
from ragmeter import metrics as registry
from ragmeter.errors import MissingExtraError
from ragmeter.models import EvalRunResult, MetricResult, QueryEvalResult
from ragmeter.report.export import ci_text, run_label
from ragmeter.report.plots import (
    distribution_figure,
    judge_grade_figure,
    metric_at_k_figure,
    metric_names,
    paired_difference_figure,
)

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
        "latency": ", ".join(f"{k} {v:.0f} ms" for k, v in q.latency_ms.items()),
        "cells": cells,
    }


def _summary_rows(runs: Sequence[EvalRunResult], metrics: Sequence[str]) -> list[dict[str, Any]]:
    """One row per metric: its scale and direction from the registry, per run the mean, std, counts and
    the stored 95% interval (clipped into the metric's range for runs stored before that held) and its
    method. Bold marks the best run in the metric's direction."""
    from ragmeter.report.plots import metric_mean, metric_values

    rows = []
    for name in metrics:
        cells = []
        for run in runs:
            s = run.aggregate.get(name)
            values = metric_values(run, name)
            n_null = sum(1 for q in run.per_query if name in q.metrics) - len(values)
            mean = metric_mean(run, name)
            std = s.std if s is not None else None
            ci, method = ci_text(name, s, digits=4) if s is not None else ("-", "-")
            cells.append(
                {
                    "mean": mean,
                    "text": _fmt(mean),
                    "std": _fmt(std) if std is not None else "",
                    "n": s.n if s is not None else len(values),
                    "n_null": s.n_null if s is not None else n_null,
                    "ci": "" if ci == "-" else ci,
                    "ci_method": "" if method == "-" else method,
                }
            )
        means = [c["mean"] for c in cells if c["mean"] is not None]
        higher = registry.higher_is_better(name)
        best = (max if higher else min)(means) if len(means) > 1 else None
        for c in cells:
            c["best"] = best is not None and c["mean"] == best
        spec = registry.lookup(name)
        rows.append(
            {
                "metric": name,
                "scale": spec.scale if spec is not None else "?",
                "direction": "higher is better" if higher else "lower is better",
                "cells": cells,
            }
        )
    return rows


def _comparison_view(cmp: Comparison) -> dict[str, Any]:
    return {
        "title": f"{cmp.run_b} vs {cmp.run_a}",
        "n_resamples": cmp.n_resamples,
        "seed": cmp.seed,
        "rows": [
            {
                "metric": m.metric,
                "n": m.n,
                "n_excluded": m.n_excluded,
                "mean_a": _fmt(m.mean_a),
                "mean_b": _fmt(m.mean_b),
                "delta": _fmt(m.delta),
                "ci": f"[{_fmt(m.ci95[0])}, {_fmt(m.ci95[1])}]" if m.ci95 else "–",
                "p_t": _fmt(m.p_t),
                "p_perm": _fmt(m.p_perm) + ("" if m.perm_exact is None or m.perm_exact else " (MC)"),
                "p_holm": _fmt(m.p_holm),
                "wlt": f"{m.wins}/{m.losses}/{m.ties}",
                "significant": m.significant(),
            }
            for m in cmp.metrics
        ],
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
) -> str:
    """The report as one HTML string.

    With two or more runs and no ``comparisons`` given, each run is compared with the first
    (`ragmeter.experiments.significance.compare_runs`).
    """
    if not runs:
        raise ValueError("render_html needs at least one run")
    labels = [run_label(run, i) for i, run in enumerate(runs)]
    metrics = metric_names(runs)
    if comparisons is None and len(runs) > 1:
        from ragmeter.experiments.significance import compare_runs, per_query_values

        base = per_query_values(runs[0])
        comparisons = [
            compare_runs(
                base, per_query_values(run), seed=seed, n_resamples=n_resamples, names=(labels[0], labels[i])
            )
            for i, run in enumerate(runs[1:], start=1)
        ]
    figures: list[tuple[str, str]] = []
    if plots:
        candidates: list[tuple[str, Figure | None]] = [
            ("Metric@k per run", metric_at_k_figure(runs)),
            ("Per-query distribution of each metric", distribution_figure(runs)),
            ("Judge grades", judge_grade_figure(runs)),
        ]
        for i, run in enumerate(runs[1:], start=1):
            candidates.append(
                (
                    f"Paired per-query values: {labels[i]} against {labels[0]}",
                    paired_difference_figure(runs[0], run),
                )
            )
        figures = [(caption, _png_data_uri(fig)) for caption, fig in candidates if fig is not None]

    sections = []
    for label, run in zip(labels, runs, strict=True):
        run_metrics = metric_names([run])
        sections.append(
            {
                "label": label,
                "run": run,
                "config": run.config.model_dump_json(indent=1, exclude_none=True),
                "metrics": run_metrics,
                "rows": [
                    _query_row(q, run_metrics, max_docs=max_docs, snippet_chars=snippet_chars)
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
            comparisons=[_comparison_view(c) for c in comparisons or []],
            figures=figures,
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
