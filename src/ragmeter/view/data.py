"""What each page of the viewer shows, as plain dicts built from the store: the runs, one run's summary, one
query, and a comparison. Templates only lay these out; every text in them is escaped by jinja2."""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragmeter import metrics as registry
from ragmeter.models import EvalRunResult, QueryEvalResult
from ragmeter.report.export import ci_text, run_label
from ragmeter.report.selection import display_order
from ragmeter.result_models import as_json
from ragmeter.safety import redact_data, redact_text
from ragmeter.view.detail import (
    failure_class_of,
    generator_ids,
    judgement,
    query_detail,
    relevance_labels,
    usage_of_query,
)
from ragmeter.view.triage import (
    CALL_KEYS,
    CLASS_CHIPS,
    RC_CHECKS,
    TONES,
    badge,
    class_chip,
    default_columns,
    fmt,
    readable,
    tone,
    value_text,
    verdict_tables,
    worst_first,
)

if TYPE_CHECKING:
    from ragmeter.store.api import Store


# the query page's and the triage's helpers live in detail.py and triage.py; importers read them here too
__all__ = [
    "CALL_KEYS",
    "CLASS_CHIPS",
    "RC_CHECKS",
    "TONES",
    "badge",
    "changed_queries",
    "class_chip",
    "config_text",
    "cost_of",
    "default_columns",
    "duration_s",
    "failure_class_of",
    "failure_classes",
    "fmt",
    "generator_ids",
    "headline",
    "judgement",
    "labels_of",
    "load_runs",
    "percentile",
    "plots",
    "png_uri",
    "ppi_rows",
    "query_detail",
    "readable",
    "relevance_labels",
    "replay_of",
    "retrieved_diff",
    "run_rows",
    "summary_rows",
    "system_of",
    "tone",
    "usage_of_query",
    "usage_rows",
    "value_text",
    "verdict_tables",
    "worst_first",
]


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-quantile (0..1) of ascending values, linear between ranks (numpy's default)."""
    if not values:
        return None
    pos = (len(values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def system_of(run: EvalRunResult) -> str:
    c = run.config
    if c.replay is not None and c.replay.parent:  # a diagnose replay: its parent and intervention
        return f"{c.replay.intervention} replay of run {c.replay.parent}"
    return c.system + (f" ({c.mode})" if c.system == "builtin" else "")


def cost_of(run: EvalRunResult) -> float | None:
    total = run.usage.total if run.usage else None
    return total.cost_usd if total is not None else None


def duration_s(run: EvalRunResult) -> float | None:
    if run.started_at is None or run.completed_at is None:
        return None
    return (run.completed_at - run.started_at).total_seconds()


def headline(run: EvalRunResult) -> tuple[str, str, str]:
    """(metric, mean, 95% interval) of the registry's first headline metric with a value."""
    names = [n for n, s in run.aggregate.items() if s.mean is not None]
    for name in registry.headline(names) or sorted(names, key=registry.sort_key):
        s = run.aggregate[name]
        ci, _ = ci_text(name, s, digits=4)
        return name, fmt(s.mean), "" if ci == "-" else ci
    return "", "", ""


def replay_of(run: EvalRunResult) -> tuple[str, str] | None:
    """(parent run id, intervention) of a diagnose replay, when its record (or config) names them."""
    replay = (run.record.replay if run.record else None) or run.config.replay
    if replay is not None and replay.parent:
        return replay.parent, replay.intervention or "replay"
    return None


def run_rows(runs: Sequence[EvalRunResult]) -> list[dict[str, Any]]:
    rows = []
    for r in runs:
        metric, mean, ci = headline(r)
        dur = duration_s(r)
        replay = replay_of(r)
        mean_value = r.aggregate[metric].mean if metric else None
        rows.append(
            {
                "replay": replay,
                "badge": {"text": mean, "tone": tone(metric, mean_value)} if metric else None,
                "run_id": r.run_id or "",
                "name": r.name,
                "status": r.status,
                "started": f"{r.started_at:%Y-%m-%d %H:%M:%S}" if r.started_at else "",
                "dataset": r.config.dataset,
                "system": system_of(r),
                "n_queries": r.n_queries,
                "n_failed": r.n_failed,
                "metric": metric,
                "mean": mean,
                "ci": ci,
                "ci_short": _short_ci(r, metric),
                "cost": "–" if cost_of(r) is None else f"${cost_of(r):.4f}",
                "duration": "–" if dur is None else f"{dur:.1f} s",
            }
        )
    return rows


def _short_ci(run: EvalRunResult, metric: str) -> str:
    s = run.aggregate.get(metric) if metric else None
    if s is None or s.ci95 is None:
        return ""
    return f"[{value_text(metric, s.ci95[0])}, {value_text(metric, s.ci95[1])}]"


def summary_rows(run: EvalRunResult) -> list[dict[str, Any]]:
    rows = []
    for name in display_order(list(run.aggregate)):
        s = run.aggregate[name]
        ci, method = ci_text(name, s, digits=4)
        rows.append(
            {
                "metric": name,
                "mean": fmt(s.mean),
                "ci": "" if ci == "-" else ci,
                "method": "" if method == "-" else method,
                "n": s.n,
                "n_null": s.n_null,
                "direction": "higher" if registry.higher_is_better(name) else "lower",
            }
        )
    return rows


def usage_rows(run: EvalRunResult) -> list[dict[str, Any]]:
    usage = as_json(run.usage) or {}
    rows = []
    for role in ("generator", "judge", "total"):
        line = usage.get(role)
        if not line:
            continue
        cost = line.get("cost_usd")
        rows.append(
            {
                "role": role,
                "calls": line.get("calls", 0),
                "input_tokens": line.get("input_tokens", 0),
                "output_tokens": line.get("output_tokens", 0),
                "cost": "unknown" if cost is None else f"${cost:.6f}",
                "note": redact_text(str(line.get("cost_note") or "")),
            }
        )
    return rows


def ppi_rows(run: EvalRunResult) -> list[dict[str, Any]]:
    return [
        {
            "metric": name,
            "judge_mean": fmt(e.judge_mean),
            "estimate": fmt(e.estimate),
            "ci": f"[{fmt(e.ci95[0])}, {fmt(e.ci95[1])}]",
            "n": f"{e.n_labeled} / {e.n_total}",
            "labels": e.labels,
        }
        for name, e in ((n, run.ppi[n]) for n in display_order(list(run.ppi)))
    ]


def failure_classes(run: EvalRunResult) -> list[tuple[str, int]]:
    """(class, queries) of a run classified by the diagnosis metrics (pass the run with its queries);
    empty when the run was not classified."""
    from ragmeter.diagnose.classes import class_counts

    return [(str(row["class"]), int(row["n"])) for row in class_counts(run) if row["n"]]


def png_uri(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def plots(runs: Sequence[EvalRunResult], *, compare: bool = False) -> list[dict[str, str]]:
    """The report's plots of these runs as PNG data URIs (the forest plot first when comparing)."""
    from ragmeter.report.forest import compare_with_first
    from ragmeter.report.plots import report_figures

    comparisons = compare_with_first(runs, n_resamples=2000) if compare and len(runs) > 1 else None
    return [
        {"name": p.name, "caption": p.caption, "src": png_uri(p.figure)}
        for p in report_figures(runs, comparisons)
    ]


def config_text(run: EvalRunResult) -> dict[str, Any]:
    """The run's config with every secret-looking value redacted (none is stored; this is the second wall)."""
    data = redact_data(run.config.model_dump(mode="json"))
    return data if isinstance(data, dict) else {}


def retrieved_diff(a: QueryEvalResult | None, b: QueryEvalResult | None) -> list[dict[str, Any]]:
    """Rank by rank, the doc ids of two runs for one query, each marked as in both / only this one."""
    la = [d.doc_id for d in sorted(a.retrieved, key=lambda d: d.rank)] if a else []
    lb = [d.doc_id for d in sorted(b.retrieved, key=lambda d: d.rank)] if b else []
    sa, sb = set(la), set(lb)
    rows = []
    for i in range(max(len(la), len(lb))):
        da = la[i] if i < len(la) else None
        db = lb[i] if i < len(lb) else None
        rows.append(
            {
                "rank": i + 1,
                "a": da or "",
                "a_state": "" if da is None else ("both" if da in sb else "only"),
                "b": db or "",
                "b_state": "" if db is None else ("both" if db in sa else "only"),
            }
        )
    return rows


def load_runs(store: Store, run_ids: Sequence[str]) -> list[EvalRunResult]:
    return [store.get_run(r) for r in run_ids]


def changed_queries(runs: Sequence[EvalRunResult], top: int = 20) -> tuple[list[dict[str, Any]], int]:
    """The queries that changed most between the first and the second run, on their headline metrics."""
    from ragmeter.report.selection import change_rows, headline_metrics

    common = [n for n in runs[0].aggregate if n in runs[1].aggregate]
    # the registry's headline metrics (they fit one line at 1280 px), else one cut-off per family
    names = registry.headline(common) or headline_metrics(common)
    rows, n = change_rows(runs[0], runs[1], names, top=top)
    for r in rows:
        for c in r["cells"]:
            c["text"] = "–" if c["delta"] is None else f"{c['delta']:+.3f}"
            c["a_text"] = value_text(c["metric"], c["a"])
            c["b_text"] = value_text(c["metric"], c["b"])
    return rows, n


def labels_of(runs: Sequence[EvalRunResult]) -> list[str]:
    return [run_label(r, i) for i, r in enumerate(runs)]
